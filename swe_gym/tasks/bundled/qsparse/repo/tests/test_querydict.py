import pytest

from qsparse import QueryDict


def test_last_value_wins():
    qd = QueryDict("a=1&a=2")
    assert qd["a"] == "2"
    assert qd.getlist("a") == ["1", "2"]


def test_missing_key():
    qd = QueryDict("a=1")
    with pytest.raises(KeyError):
        qd["b"]
    assert qd.get("b", "x") == "x"


def test_keys_and_len():
    qd = QueryDict("a=1&b=2&a=3")
    assert qd.keys() == ["a", "b"]
    assert len(qd) == 2
    assert "b" in qd and "c" not in qd


def test_blank_values_kept():
    assert QueryDict("flag&x=1").getlist("flag") == [""]


def test_setlist_replaces():
    qd = QueryDict("a=1&b=2&a=3")
    qd.setlist("a", ["9"])
    assert qd.items() == [("b", "2"), ("a", "9")]


def test_roundtrip_ascii():
    qd = QueryDict.from_pairs([("q", "a b"), ("tag", "x&y")])
    assert QueryDict(qd.urlencode()).items() == qd.items()
