"""Observations as text: what the sandbox printed (`swe_gym.shown_text`), capped in length.

Every character is the one the bytes hold; bytes that are not UTF-8 are marked (``�xe9``), so the text is
inside the declared `swe_gym.envs.spaces.UnicodeText` and copies of it name the same bytes.
"""

from __future__ import annotations


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
    """``text`` capped at ``max_chars`` (head and tail kept)."""
    return elide_middle(text, max_chars)


def masked_note(reason: str) -> str:
    """The observation that says an episode is masked (the environment failed), on every front end."""
    return f"[swe_gym: episode masked: {reason}]"
