import pytest

from iniconf import Config, InterpolationError, NoOptionError, NoSectionError


def make():
    return Config.from_string(
        "[DEFAULT]\n"
        "root = /srv\n"
        "\n"
        "[app]\n"
        "name = demo\n"
        "home = ${root}/${name}\n"
        "logs = ${home}/logs\n"
        "price = $$5\n"
        "debug = yes\n"
        "ratio = 0.5\n"
        "\n"
        "[db]\n"
        "path = ${app:home}/db.sqlite\n"
    )


def test_interpolation():
    cfg = make()
    assert cfg.get("app", "home") == "/srv/demo"
    assert cfg.get("app", "logs") == "/srv/demo/logs"
    assert cfg.get("db", "path") == "/srv/demo/db.sqlite"


def test_raw_and_dollar_escape():
    cfg = make()
    assert cfg.get("app", "logs", raw=True) == "${home}/logs"
    assert cfg.get("app", "price") == "$5"


def test_bad_reference():
    cfg = Config.from_string("[a]\nx = ${nope}\n")
    with pytest.raises(InterpolationError):
        cfg.get("a", "x")


def test_cycle_detected():
    cfg = Config.from_string("[a]\nx = ${y}\ny = ${x}\n")
    with pytest.raises(InterpolationError, match="too deep"):
        cfg.get("a", "x")


def test_typed_getters():
    cfg = make()
    assert cfg.getboolean("app", "debug") is True
    assert cfg.getfloat("app", "ratio") == 0.5
    assert cfg.getint("app", "missing", fallback=3) == 3
    with pytest.raises(ValueError):
        cfg.getboolean("app", "name")


def test_missing():
    cfg = make()
    with pytest.raises(NoSectionError):
        cfg.get("nope", "x")
    with pytest.raises(NoOptionError):
        cfg.get("app", "nope")
    assert cfg.get("app", "nope", fallback=None) is None


def test_set_and_remove():
    cfg = make()
    cfg.set("app", "name", "other")
    assert cfg.get("app", "home") == "/srv/other"
    assert cfg.remove_option("app", "NAME") is True
    assert cfg.remove_option("app", "name") is False
    with pytest.raises(NoSectionError):
        cfg.set("nope", "x", 1)


def test_add_section():
    cfg = Config()
    cfg.add_section("new")
    cfg.set("new", "x", 1)
    assert cfg.getint("new", "x") == 1
    with pytest.raises(ValueError):
        cfg.add_section("new")


def test_constructor_normalizes_keys():
    cfg = Config({"s": {"Key": 1}})
    assert cfg.get("s", "key") == "1"


def test_to_string_roundtrip():
    cfg = make()
    again = Config.from_string(cfg.to_string())
    assert again.get("db", "path") == "/srv/demo/db.sqlite"
    assert again.sections() == cfg.sections()
