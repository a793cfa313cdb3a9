import pytest

from semverkit import InvalidRange, max_satisfying, satisfies


SATISFIES_CASES = [
    ("1.4.0", "^1.2.0", True),
    ("2.0.0", "^1.2.0", False),
    ("0.2.5", "^0.2.3", True),
    ("0.3.0", "^0.2.3", False),
    ("0.0.3", "^0.0.3", True),
    ("0.0.4", "^0.0.3", False),
    ("1.2.9", "~1.2.3", True),
    ("1.3.0", "~1.2.3", False),
    ("1.5.0", ">=1.0.0 <2.0.0", True),
    ("2.0.0", ">=1.0.0 <2.0.0", False),
    ("3.1.0", "^1.0.0 || ^3.0.0", True),
    ("1.2.3", "1.2.3", True),
    ("1.2.3", "= 1.2.3", True),
    ("1.2.3", "> 1.2.3", False),
]


@pytest.mark.parametrize(
    "version, spec, expected",
    SATISFIES_CASES,
    ids=["%s:%s" % (v, s.replace(" ", "")) for v, s, _ in SATISFIES_CASES],
)
def test_satisfies(version, spec, expected):
    assert satisfies(version, spec) is expected


def test_max_satisfying():
    versions = ["1.0.0", "1.4.2", "1.10.1", "2.0.0"]
    assert max_satisfying(versions, "^1.0.0") == "1.10.1"
    assert max_satisfying(versions, ">3.0.0") is None


@pytest.mark.parametrize(
    "spec",
    ["", "^", ">=1.0", "1.0.0 ||", "!1.0.0"],
    ids=["empty", "bare-caret", "partial-version", "trailing-or", "bang"],
)
def test_invalid_range(spec):
    with pytest.raises(InvalidRange):
        satisfies("1.0.0", spec)
