"""Percent-encoding helpers."""
from typing import Iterable, Mapping, Tuple, Union

_ALWAYS_SAFE = frozenset(
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-~"
)


def quote(s: str, safe: str = "", plus: bool = False) -> str:
    """Percent-encode *s* as UTF-8.

    Characters listed in *safe* are left untouched.  With *plus* true,
    spaces are encoded as ``+`` instead of ``%20``.
    """
    safe_chars = _ALWAYS_SAFE | frozenset(safe)
    out = []
    for ch in s:
        if ch in safe_chars:
            out.append(ch)
        elif plus and ch == " ":
            out.append("+")
        else:
            for byte in ch.encode("utf-8"):
                out.append("%{:02X}".format(byte))
    return "".join(out)


Pairs = Union[Mapping[str, object], Iterable[Tuple[str, object]]]


def urlencode(query: Pairs, doseq: bool = False) -> str:
    """Encode a mapping or a sequence of pairs as a form-encoded string.

    With *doseq* true, list and tuple values produce one ``key=value`` pair
    per element.
    """
    items = list(query.items()) if hasattr(query, "items") else list(query)
    parts = []
    for key, value in items:
        k = quote(str(key), plus=True)
        if doseq and isinstance(value, (list, tuple)):
            for v in value:
                parts.append(k + "=" + quote(str(v), plus=True))
        else:
            parts.append(k + "=" + quote(str(value), plus=True))
    return "&".join(parts)
