from textkit import collapse_whitespace, normalize_newlines, remove_control_chars


def test_collapse_whitespace():
    assert collapse_whitespace("  a \t b\n\nc ") == "a b c"


def test_normalize_newlines():
    assert normalize_newlines("a\r\nb\rc\n") == "a\nb\nc\n"


def test_remove_control_chars():
    assert remove_control_chars("a\x00b\tc\n\x1b") == "ab\tc\n"
