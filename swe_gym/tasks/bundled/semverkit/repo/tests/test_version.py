import pytest

from semverkit import InvalidVersion, Version, compare


def test_parse_full():
    v = Version.parse("1.2.3-rc.1+build.5")
    assert (v.major, v.minor, v.patch) == (1, 2, 3)
    assert v.prerelease == ("rc", "1")
    assert v.build == ("build", "5")
    assert str(v) == "1.2.3-rc.1+build.5"


def test_parse_leading_v():
    assert str(Version.parse("v2.0.0")) == "2.0.0"


@pytest.mark.parametrize("text", ["1.2", "01.2.3", "1.2.3-", "1.2.3-01", "1.2.3+", "a.b.c", "1.2.3-rc..1"])
def test_invalid(text):
    with pytest.raises(InvalidVersion):
        Version.parse(text)


def test_immutable():
    with pytest.raises(AttributeError):
        Version(1).major = 2


def test_numeric_ordering_of_release_parts():
    assert Version.parse("1.10.0") > Version.parse("1.9.0")
    assert Version.parse("2.0.0") > Version.parse("1.99.99")


def test_build_metadata_ignored():
    assert Version.parse("1.0.0+a") == Version.parse("1.0.0+b")
    assert hash(Version.parse("1.0.0+a")) == hash(Version.parse("1.0.0"))


def test_compare_strings():
    assert compare("1.0.1", "1.0.0") == 1
    assert compare("1.0.0", "1.0.0") == 0
    assert Version.parse("1.0.0") == "1.0.0"


def test_prerelease_equality_and_alpha_order():
    assert Version.parse("1.0.0-alpha") == Version.parse("1.0.0-alpha")
    assert Version.parse("1.0.0-alpha") < Version.parse("1.0.0-beta")
    assert Version.parse("1.0.0-alpha") < Version.parse("1.0.0-alpha.1")


def test_sort_releases():
    versions = ["1.10.0", "1.2.0", "0.9.9", "1.2.10"]
    assert sorted(versions, key=Version.parse) == ["0.9.9", "1.2.0", "1.2.10", "1.10.0"]


def test_bumps():
    v = Version.parse("1.2.3")
    assert str(v.bump_major()) == "2.0.0"
    assert str(v.bump_minor()) == "1.3.0"
    assert str(v.bump_patch()) == "1.2.4"
    assert str(Version.parse("1.2.3-rc.1").bump_patch()) == "1.2.3"
