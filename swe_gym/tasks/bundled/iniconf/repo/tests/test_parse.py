import pytest

from iniconf import Config, ParseError

SAMPLE = """\
; global settings
[DEFAULT]
root = /srv

[server]
Host = example.org   ; inline comment
port: 8080
banner = hello # also a comment
hosts =
    a.example.org
    b.example.org

[paths]
color=#fff
"""


def test_sections():
    cfg = Config.from_string(SAMPLE)
    assert cfg.sections() == ["server", "paths"]
    assert cfg.has_section("server")
    assert not cfg.has_section("DEFAULT")
    assert not cfg.has_section("Server")


def test_values_and_inline_comments():
    cfg = Config.from_string(SAMPLE)
    assert cfg.get("server", "host") == "example.org"
    assert cfg.getint("server", "port") == 8080
    assert cfg.get("server", "banner") == "hello"
    assert cfg.get("paths", "color") == "#fff"


def test_multiline_value():
    cfg = Config.from_string(SAMPLE)
    assert cfg.get("server", "hosts") == "a.example.org\nb.example.org"
    assert cfg.getlist("server", "hosts") == ["a.example.org", "b.example.org"]


def test_option_names_are_case_insensitive():
    cfg = Config.from_string(SAMPLE)
    assert cfg.get("server", "HOST") == "example.org"
    assert cfg.has_option("server", "Port")
    assert cfg.options("server") == ["root", "host", "port", "banner", "hosts"]


@pytest.mark.parametrize(
    "text, message",
    [
        ("key = 1\n", "line 1: option outside of any section"),
        ("[a]\nx = 1\nX = 2\n", "line 3: duplicate option 'x' in [a]"),
        ("[a]\n  indented\n", "line 2: unexpected indented line"),
        ("[a]\njunk\n", "line 2: cannot parse 'junk'"),
    ],
    ids=["outside-section", "duplicate", "stray-indent", "junk"],
)
def test_parse_errors(text, message):
    with pytest.raises(ParseError) as info:
        Config.from_string(text)
    assert str(info.value) == message
