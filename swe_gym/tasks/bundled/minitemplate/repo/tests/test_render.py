import pytest

from minitemplate import Template, TemplateSyntaxError, render


class User:
    def __init__(self, name):
        self.name = name


def test_variables_and_lookup():
    data = {"user": {"name": "ann", "tags": ["x", "y"]}, "obj": User("bob")}
    assert render("{{ user.name }} {{ user.tags.1 }} {{ obj.name }}", data) == "ann y bob"


def test_missing_variable_is_empty():
    assert render("[{{ nope }}][{{ user.nope.deeper }}]", user={}) == "[][]"


def test_filters():
    assert render("{{ name|upper }}", name="ann") == "ANN"
    assert render("{{ name|default:'anon' }}", name="") == "anon"
    assert render("{{ xs|join:'-' }} {{ xs|length }}", xs=[1, 2, 3]) == "1-2-3 3"
    assert render("{{ s|escape }}", s="<b>") == "&lt;b&gt;"


def test_unknown_filter():
    with pytest.raises(TemplateSyntaxError, match="unknown filter 'shout'"):
        Template("{{ x|shout }}")


def test_if_else():
    tpl = Template("{% if ok %}yes{% else %}no{% endif %}")
    assert tpl.render(ok=True) == "yes"
    assert tpl.render(ok=False) == "no"


def test_if_not():
    assert render("{% if not items %}empty{% endif %}", items=[]) == "empty"


def test_nested_if_without_else():
    tpl = Template("{% if a %}A{% if b %}B{% endif %}{% endif %}")
    assert tpl.render(a=True, b=True) == "AB"
    assert tpl.render(a=True, b=False) == "A"
    assert tpl.render(a=False, b=True) == ""


def test_for_loop_with_loop_info():
    tpl = Template("{% for x in xs %}{{ loop.index }}:{{ x }}{% if not loop.last %},{% endif %}{% endfor %}")
    assert tpl.render(xs=["a", "b", "c"]) == "1:a,2:b,3:c"


def test_for_else():
    tpl = Template("{% for x in xs %}{{ x }}{% else %}none{% endfor %}")
    assert tpl.render(xs=[]) == "none"
    assert tpl.render(xs=[1, 2]) == "12"


def test_nested_loops():
    tpl = Template("{% for row in rows %}[{% for c in row %}{{ c }}{% endfor %}]{% endfor %}")
    assert tpl.render(rows=[[1, 2], [3]]) == "[12][3]"


def test_loop_variable_does_not_leak():
    assert render("{% for x in xs %}{{ x }}{% endfor %}|{{ x }}", xs=[1, 2], x="outer") == "12|outer"


def test_unclosed_block():
    with pytest.raises(TemplateSyntaxError, match="line 2: unclosed 'for' block"):
        Template("a\n{% for x in xs %}{{ x }}")


def test_mismatched_close():
    with pytest.raises(TemplateSyntaxError, match="expected 'endif', got 'endfor'"):
        Template("{% if a %}x{% endfor %}")


def test_stray_tags():
    with pytest.raises(TemplateSyntaxError, match="unexpected 'endif'"):
        Template("x{% endif %}")
    with pytest.raises(TemplateSyntaxError, match="unexpected 'else'"):
        Template("x{% else %}")
    with pytest.raises(TemplateSyntaxError, match="unknown tag 'include'"):
        Template("{% include 'x' %}")
