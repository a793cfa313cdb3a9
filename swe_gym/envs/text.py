"""Text that always fits the declared `gymnasium.spaces.Text` spaces.

The charset is printable ASCII plus tab and newline. Anything else (accents,
emoji, ANSI escapes, NUL, U+FFFD from undecodable bytes) is written as a Python
escape (``\\xe9``, ``\\u2713``, ``\\x1b``), so nothing is lost silently and every
observation is inside the space without a million-character charset.
"""

from __future__ import annotations

import re
import string

from gymnasium import spaces

CHARSET = "".join(sorted(set(string.digits + string.ascii_letters + string.punctuation + " \t\n")))
_OUTSIDE = re.compile(f"[^{re.escape(CHARSET)}]")


def escape(text: str) -> str:
    return _OUTSIDE.sub(lambda m: m.group().encode("unicode_escape").decode("ascii"), text)


def elide_middle(text: str, max_chars: int) -> str:
    r"""``text`` if it fits in ``max_chars``, else its head and tail around a note of how much was cut.

    The result is never longer than ``max_chars``.

    >>> elide_middle("abcdefghij" * 10, 60)
    'abcdefghijabc\n[... 73 characters elided ...]\nghijabcdefghij'
    """
    if len(text) <= max_chars:
        return text
    keep = max_chars - len(f"\n[... {len(text)} characters elided ...]\n")
    if keep <= 0:
        return text[:max_chars]
    head, tail = keep // 2, keep - keep // 2
    return f"{text[:head]}\n[... {len(text) - keep} characters elided ...]\n{text[len(text) - tail :]}"


def to_observation(text: str, max_chars: int) -> str:
    """Escape ``text`` into the charset and cap it at ``max_chars`` (head and tail kept)."""
    return elide_middle(escape(text), max_chars)


def text_space(max_length: int) -> spaces.Text:
    return spaces.Text(max_length=max_length, min_length=0, charset=CHARSET)
