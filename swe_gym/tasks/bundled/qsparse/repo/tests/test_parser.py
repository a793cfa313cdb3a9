import pytest

from qsparse import QueryStringError, parse_qs, parse_qsl


def test_basic_pairs():
    assert parse_qsl("a=1&b=2") == [("a", "1"), ("b", "2")]


def test_repeated_names():
    assert parse_qs("a=1&a=2&b=3") == {"a": ["1", "2"], "b": ["3"]}


def test_plus_is_space():
    assert parse_qs("q=hello+world") == {"q": ["hello world"]}


def test_encoded_plus_stays_plus():
    assert parse_qs("expr=1%2B1") == {"expr": ["1+1"]}


def test_ascii_escapes():
    assert parse_qs("path=%2Fusr%2Flocal&x=a%26b") == {
        "path": ["/usr/local"],
        "x": ["a&b"],
    }


def test_malformed_escape_is_kept():
    assert parse_qs("a=50%zz&b=%") == {"a": ["50%zz"], "b": ["%"]}


def test_blank_values_dropped_by_default():
    assert parse_qs("a=&b=1&c") == {"b": ["1"]}


def test_keep_blank_values():
    assert parse_qsl("a=&b=1&c", keep_blank_values=True) == [
        ("a", ""),
        ("b", "1"),
        ("c", ""),
    ]


def test_strict_rejects_field_without_equals():
    with pytest.raises(QueryStringError):
        parse_qsl("a=1&oops", strict=True)


def test_leading_question_mark():
    assert parse_qs("?x=1") == {"x": ["1"]}


def test_custom_separator():
    assert parse_qs("a=1;b=2", separator=";") == {"a": ["1"], "b": ["2"]}


def test_max_fields():
    with pytest.raises(QueryStringError):
        parse_qsl("a=1&b=2&c=3", max_fields=2)


def test_empty_separator_rejected():
    with pytest.raises(ValueError):
        parse_qsl("a=1", separator="")
