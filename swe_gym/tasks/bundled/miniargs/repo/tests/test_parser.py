import pytest

from miniargs import ArgumentError, Parser, choice, comma_list, integer, number


def make_parser():
    p = Parser(prog="tool")
    p.add_option("-n", "--count", type=integer, default=1)
    p.add_option("--offset", type=integer, default=0)
    p.add_option("--scale", type=number, default=1.0)
    p.add_option("-v", "--verbose", action="count")
    p.add_option("-q", "--quiet", action="store_true")
    p.add_option("-t", "--tag", action="append")
    return p


def test_defaults():
    ns = make_parser().parse([])
    assert (ns.count, ns.offset, ns.scale, ns.verbose, ns.quiet, ns.tag) == (1, 0, 1.0, 0, False, [])


def test_long_option_separate_value():
    assert make_parser().parse(["--count", "5"]).count == 5


def test_long_option_equals_value():
    assert make_parser().parse(["--count=7"]).count == 7


def test_short_option_attached_value():
    assert make_parser().parse(["-n3"]).count == 3


def test_negative_value_with_equals():
    assert make_parser().parse(["--offset=-5"]).offset == -5


def test_negative_value_attached_to_short_option():
    assert make_parser().parse(["-n-2"]).count == -2


def test_flags_and_counts():
    ns = make_parser().parse(["-vvq", "--verbose"])
    assert ns.verbose == 3
    assert ns.quiet is True


def test_append():
    assert make_parser().parse(["-t", "a", "--tag=b", "-tc"]).tag == ["a", "b", "c"]


def test_missing_value():
    with pytest.raises(ArgumentError, match="--count expects a value"):
        make_parser().parse(["--count"])


def test_option_as_value_is_rejected():
    with pytest.raises(ArgumentError, match="--count expects a value"):
        make_parser().parse(["--count", "--quiet"])


def test_unknown_option():
    with pytest.raises(ArgumentError, match="unknown option --nope"):
        make_parser().parse(["--nope"])


def test_flag_with_value_rejected():
    with pytest.raises(ArgumentError, match="does not take a value"):
        make_parser().parse(["--quiet=yes"])


def test_type_error_message():
    with pytest.raises(ArgumentError, match="invalid int value: 'abc'"):
        make_parser().parse(["--count", "abc"])


def test_required_option():
    p = Parser()
    p.add_option("--name", required=True)
    with pytest.raises(ArgumentError, match="required: --name"):
        p.parse([])


def test_positionals():
    p = Parser()
    p.add_positional("src")
    p.add_positional("dst", nargs="?", default=".")
    assert vars(p.parse(["a"])) == {"src": "a", "dst": "."}
    assert vars(p.parse(["a", "b"])) == {"src": "a", "dst": "b"}
    with pytest.raises(ArgumentError, match="unrecognized arguments: c"):
        p.parse(["a", "b", "c"])


def test_star_positional_and_double_dash():
    p = Parser()
    p.add_option("-q", action="store_true")
    p.add_positional("files", nargs="*")
    ns = p.parse(["a", "-q", "--", "-q", "-"])
    assert ns.files == ["a", "-q", "-"]
    assert ns.q is True


def test_converters():
    assert choice("a", "b")("a") == "a"
    with pytest.raises(ValueError):
        choice("a", "b")("c")
    assert comma_list(" x, y,,z ") == ["x", "y", "z"]


def test_invalid_declarations():
    p = Parser()
    with pytest.raises(ValueError):
        p.add_option("name")
    with pytest.raises(ValueError):
        p.add_option("-ab")
    p.add_option("-a")
    with pytest.raises(ValueError):
        p.add_option("-a")
