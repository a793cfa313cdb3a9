from minitemplate.lexer import Token, tokenize


def test_tokens():
    assert tokenize("a {{ x }} b {% if y %}c{% endif %}") == [
        Token("text", "a ", 1),
        Token("var", "x", 1),
        Token("text", " b ", 1),
        Token("block", "if y", 1),
        Token("text", "c", 1),
        Token("block", "endif", 1),
    ]


def test_line_numbers():
    tokens = tokenize("line1\n{{ a }}\n\n{% for x in y %}")
    assert [(t.kind, t.line) for t in tokens] == [
        ("text", 1),
        ("var", 2),
        ("text", 2),
        ("block", 4),
    ]


def test_unclosed_tag_is_text():
    assert tokenize("a {{ b") == [Token("text", "a {{ b", 1)]
