"""Query string parsing."""
from typing import Dict, List, Optional, Tuple

from .decode import unquote


class QueryStringError(ValueError):
    """Raised for malformed query strings in strict mode."""


def parse_qsl(
    qs: str,
    keep_blank_values: bool = False,
    strict: bool = False,
    separator: str = "&",
    max_fields: Optional[int] = None,
) -> List[Tuple[str, str]]:
    """Parse a query string into an ordered list of ``(name, value)`` pairs.

    A leading ``?`` is ignored.  Fields without ``=`` are treated as having
    an empty value (or rejected when *strict* is true).  Empty values are
    dropped unless *keep_blank_values* is true.
    """
    if not separator or not isinstance(separator, str):
        raise ValueError("separator must be a non-empty string")
    if qs.startswith("?"):
        qs = qs[1:]
    fields = [f for f in qs.split(separator) if f]
    if max_fields is not None and len(fields) > max_fields:
        raise QueryStringError(
            "too many fields: %d > %d" % (len(fields), max_fields)
        )
    result = []
    for field in fields:
        if "=" in field:
            name, value = field.split("=", 1)
        elif strict:
            raise QueryStringError("bad query field: %r" % field)
        else:
            name, value = field, ""
        if not value and not keep_blank_values:
            continue
        result.append((unquote(name, plus=True), unquote(value, plus=True)))
    return result


def parse_qs(
    qs: str,
    keep_blank_values: bool = False,
    strict: bool = False,
    separator: str = "&",
    max_fields: Optional[int] = None,
) -> Dict[str, List[str]]:
    """Parse a query string into a dict mapping names to lists of values."""
    out: Dict[str, List[str]] = {}
    pairs = parse_qsl(
        qs,
        keep_blank_values=keep_blank_values,
        strict=strict,
        separator=separator,
        max_fields=max_fields,
    )
    for name, value in pairs:
        out.setdefault(name, []).append(value)
    return out
