"""Split template source into text, variable and block tokens."""
import re
from typing import List, NamedTuple

_TAG_RE = re.compile(r"({{.*?}}|{%.*?%})", re.S)


class Token(NamedTuple):
    kind: str  # "text", "var" or "block"
    value: str
    line: int


def tokenize(source: str) -> List[Token]:
    tokens: List[Token] = []
    line = 1
    for part in _TAG_RE.split(source):
        if not part:
            continue
        if part.startswith("{{"):
            tokens.append(Token("var", part[2:-2].strip(), line))
        elif part.startswith("{%"):
            tokens.append(Token("block", part[2:-2].strip(), line))
        else:
            tokens.append(Token("text", part, line))
        line += part.count("\n")
    return tokens
