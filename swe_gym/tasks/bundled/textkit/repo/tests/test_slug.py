import pytest

from textkit import slugify


@pytest.mark.parametrize(
    "text, slug",
    [
        ("Hello, World!", "hello-world"),
        ("  many   spaces  ", "many-spaces"),
        ("snake_case_name", "snake-case-name"),
        ("Version 2.0 released", "version-2-0-released"),
        ("---", ""),
        ("", ""),
    ],
    ids=["punctuation", "spaces", "underscores", "dots", "only-separators", "empty"],
)
def test_basic(text, slug):
    assert slugify(text) == slug


def test_custom_separator():
    assert slugify("Hello World", sep="_") == "hello_world"


def test_keep_case():
    assert slugify("Hello World", lowercase=False) == "Hello-World"


def test_max_length_cuts_at_separator():
    assert slugify("the quick brown fox", max_length=12) == "the-quick"
    assert slugify("supercalifragilistic", max_length=5) == "super"


def test_max_length_invalid():
    with pytest.raises(ValueError):
        slugify("abc", max_length=0)


def test_allow_unicode_keeps_letters():
    assert slugify("Crème Brûlée", allow_unicode=True) == "crème-brûlée"
    assert slugify("Привет мир", allow_unicode=True) == "привет-мир"


def test_fullwidth_characters_are_normalised():
    assert slugify("ＡＢＣ １２３") == "abc-123"


def test_control_characters_dropped():
    assert slugify("tab\there\x00") == "tab-here"
