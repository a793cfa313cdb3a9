import pytest

from textkit import fill, truncate, wrap


def test_wrap_basic():
    assert wrap("the quick brown fox jumps over the lazy dog", 15) == [
        "the quick brown",
        "fox jumps over",
        "the lazy dog",
    ]


def test_wrap_indent_counts_toward_width():
    lines = wrap("aaa bbb ccc ddd", 9, indent="> ")
    assert lines == ["> aaa bbb", "> ccc ddd"]
    assert all(len(line) <= 9 for line in lines)


def test_wrap_breaks_long_words():
    assert wrap("abcdefghij xy", 4) == ["abcd", "efgh", "ij", "xy"]


def test_wrap_keep_long_words():
    assert wrap("abcdefghij xy", 4, break_long_words=False) == ["abcdefghij", "xy"]


def test_wrap_empty():
    assert wrap("   ", 10) == []


def test_wrap_bad_width():
    with pytest.raises(ValueError):
        wrap("abc", 2, indent="  ")


def test_fill():
    assert fill("a b c", 3) == "a b\nc"


def test_truncate():
    assert truncate("The quick brown fox", 14) == "The quick..."
    assert truncate("short", 10) == "short"
    assert truncate("abcdefghijkl", 8) == "abcde..."
