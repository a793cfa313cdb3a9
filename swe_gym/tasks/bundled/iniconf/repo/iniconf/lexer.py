"""Classify the lines of an INI file."""
import re
from typing import List, NamedTuple, Optional

_SECTION_RE = re.compile(r"^\[([^\]]+)\]\s*$")
_OPTION_RE = re.compile(r"^([^=:\s][^=:]*?)\s*[=:]\s*(.*)$")
_INLINE_COMMENT_RE = re.compile(r"\s[;#]")


class Line(NamedTuple):
    kind: str  # "section", "option", "continuation", "blank" or "comment"
    lineno: int
    name: Optional[str] = None
    value: Optional[str] = None


def strip_inline_comment(value: str) -> str:
    return _INLINE_COMMENT_RE.split(value, 1)[0].rstrip()


def lex(text: str) -> List[Line]:
    lines: List[Line] = []
    for lineno, raw in enumerate(text.splitlines(), start=1):
        stripped = raw.strip()
        if not stripped:
            lines.append(Line("blank", lineno))
        elif stripped[0] in "#;":
            lines.append(Line("comment", lineno))
        elif raw[0].isspace():
            lines.append(Line("continuation", lineno, value=strip_inline_comment(stripped)))
        else:
            m = _SECTION_RE.match(stripped)
            if m:
                lines.append(Line("section", lineno, name=m.group(1).strip()))
                continue
            m = _OPTION_RE.match(stripped)
            if m:
                lines.append(
                    Line("option", lineno, name=m.group(1), value=strip_inline_comment(m.group(2)))
                )
                continue
            lines.append(Line("invalid", lineno, value=stripped))
    return lines
