from miniargs import Parser, format_help, format_usage, integer


def make_parser():
    p = Parser(prog="resize", description="Resize images.")
    p.add_option("-w", "--width", type=integer, required=True, help="target width")
    p.add_option("-v", "--verbose", action="count", help="more output")
    p.add_positional("files", nargs="*", help="input files")
    return p


def test_usage():
    assert format_usage(make_parser()) == "usage: resize -w WIDTH [-v] [files ...]"


def test_help_lists_everything():
    text = format_help(make_parser())
    assert "Resize images." in text
    assert "-w, --width WIDTH" in text
    assert "target width" in text
    assert "files" in text and "input files" in text
