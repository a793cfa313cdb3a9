"""Usage and help text."""
from .parser import Parser
from .spec import Option


def _option_usage(opt: Option) -> str:
    text = opt.flags[0]
    if opt.takes_value:
        text += " " + (opt.metavar or opt.dest.upper())
    return text if opt.required else "[%s]" % text


def format_usage(parser: Parser) -> str:
    parts = ["usage:", parser.prog]
    parts.extend(_option_usage(o) for o in parser.options)
    for pos in parser.positionals:
        if pos.nargs == "*":
            parts.append("[%s ...]" % pos.dest)
        elif pos.nargs == "?":
            parts.append("[%s]" % pos.dest)
        else:
            parts.append(pos.dest)
    return " ".join(parts)


def format_help(parser: Parser) -> str:
    lines = [format_usage(parser)]
    if parser.description:
        lines += ["", parser.description]
    if parser.positionals:
        lines += ["", "positional arguments:"]
        for pos in parser.positionals:
            lines.append("  %-20s %s" % (pos.dest, pos.help))
    if parser.options:
        lines += ["", "options:"]
        for opt in parser.options:
            name = ", ".join(opt.flags)
            if opt.takes_value:
                name += " " + (opt.metavar or opt.dest.upper())
            lines.append("  %-20s %s" % (name, opt.help))
    return "\n".join(lines)
