"""Turn lexed lines into ``{section: {option: value}}``."""
from typing import Dict

from .errors import ParseError
from .lexer import lex

DEFAULT = "DEFAULT"

Data = Dict[str, Dict[str, str]]


def normalize_key(name: str) -> str:
    """Option names are case-insensitive; this is their canonical form."""
    return name.strip().lower()


def parse(text: str) -> Data:
    data: Data = {DEFAULT: {}}
    section = None
    last_key = None
    for line in lex(text):
        if line.kind in ("blank", "comment"):
            # a blank line ends a multi-line value
            if line.kind == "blank":
                last_key = None
            continue
        if line.kind == "section":
            section = line.name
            data.setdefault(section, {})
            last_key = None
        elif line.kind == "option":
            if section is None:
                raise ParseError("option outside of any section", line.lineno)
            key = normalize_key(line.name)
            if key in data[section]:
                raise ParseError("duplicate option %r in [%s]" % (key, section), line.lineno)
            data[section][key] = line.value
            last_key = key
        elif line.kind == "continuation":
            if last_key is None:
                raise ParseError("unexpected indented line", line.lineno)
            previous = data[section][last_key]
            data[section][last_key] = previous + "\n" + line.value if previous else line.value
        else:
            raise ParseError("cannot parse %r" % line.value, line.lineno)
    return data
