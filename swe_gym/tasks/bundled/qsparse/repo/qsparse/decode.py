"""Percent-decoding helpers."""

_HEXDIGITS = frozenset("0123456789abcdefABCDEF")


def _is_hex_pair(s: str, i: int) -> bool:
    """Return True if ``s[i]`` and ``s[i + 1]`` are both hexadecimal digits."""
    return i + 1 < len(s) - 1 and s[i] in _HEXDIGITS and s[i + 1] in _HEXDIGITS


def unquote(s: str, plus: bool = False) -> str:
    """Decode percent-escapes (``%XX``) in *s*.

    If *plus* is true, ``+`` is decoded as a space first, as used by HTML
    forms.  Malformed escapes (a ``%`` that is not followed by two hex
    digits) are kept as they are.
    """
    if plus:
        s = s.replace("+", " ")
    if "%" not in s:
        return s
    out = []
    i = 0
    n = len(s)
    while i < n:
        ch = s[i]
        if ch == "%" and _is_hex_pair(s, i + 1):
            out.append(chr(int(s[i + 1:i + 3], 16)))
            i += 3
        else:
            out.append(ch)
            i += 1
    return "".join(out)
