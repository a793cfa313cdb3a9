"""Built-in filters.  A filter is ``f(value, *args) -> value``."""
import html
from typing import Any


def _text(value: Any) -> str:
    return "" if value is None else str(value)


def default(value: Any, fallback: Any = "") -> Any:
    return fallback if value in (None, "") else value


def join(value: Any, sep: str = ", ") -> str:
    return sep.join(_text(v) for v in (value or []))


def length(value: Any) -> int:
    return len(value) if value is not None else 0


FILTERS = {
    "upper": lambda v: _text(v).upper(),
    "lower": lambda v: _text(v).lower(),
    "title": lambda v: _text(v).title(),
    "trim": lambda v: _text(v).strip(),
    "escape": lambda v: html.escape(_text(v)),
    "default": default,
    "join": join,
    "length": length,
}
