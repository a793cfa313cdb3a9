import re

import pytest

from globmatch import translate


def full(pattern, path):
    return re.match(translate(pattern), path) is not None


def test_literal_is_escaped():
    assert full("a.txt", "a.txt")
    assert not full("a.txt", "abtxt")


def test_star_stays_in_segment():
    assert full("*.py", "mod.py")
    assert not full("*.py", "pkg/mod.py")


def test_question_mark():
    assert full("?.py", "a.py")
    assert not full("?.py", "ab.py")
    assert not full("a?b", "a/b")


@pytest.mark.parametrize(
    "pattern, path, expected",
    [
        ("[abc].py", "b.py", True),
        ("[abc].py", "d.py", False),
        ("[a-c]x", "bx", True),
        ("[!abc].py", "d.py", True),
        ("[!abc].py", "a.py", False),
        ("a[!x]b", "a/b", False),
        ("a[/]b", "a/b", False),
        ("[]]", "]", True),
        ("[^]", "^", True),
    ],
    ids=["class", "class-miss", "range", "negated", "negated-miss", "negated-slash", "slash", "bracket", "caret"],
)
def test_character_classes(pattern, path, expected):
    assert full(pattern, path) is expected


def test_unterminated_class_is_literal():
    assert full("a[b", "a[b")


def test_anchored():
    assert not full("a", "ab")
    assert not full("b", "ab")
