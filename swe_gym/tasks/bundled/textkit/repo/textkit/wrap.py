"""Greedy line wrapping and truncation."""
from typing import List, Optional

from .normalize import collapse_whitespace


def wrap(
    text: str,
    width: int = 70,
    indent: str = "",
    subsequent_indent: Optional[str] = None,
    break_long_words: bool = True,
) -> List[str]:
    """Wrap *text* into lines of at most *width* characters (indent included)."""
    if subsequent_indent is None:
        subsequent_indent = indent
    if width <= max(len(indent), len(subsequent_indent)):
        raise ValueError("width must be larger than the indent")
    words = collapse_whitespace(text).split(" ") if text.strip() else []
    lines: List[str] = []
    current = ""
    prefix = indent
    for word in words:
        room = width - len(prefix)
        candidate = word if not current else current + " " + word
        if len(candidate) <= room:
            current = candidate
            continue
        if current:
            lines.append(prefix + current)
            prefix = subsequent_indent
            room = width - len(prefix)
        while break_long_words and len(word) > room:
            lines.append(prefix + word[:room])
            word = word[room:]
            prefix = subsequent_indent
            room = width - len(prefix)
        current = word
    if current:
        lines.append(prefix + current)
    return lines


def fill(text: str, width: int = 70, **kwargs) -> str:
    return "\n".join(wrap(text, width, **kwargs))


def truncate(text: str, length: int, ellipsis: str = "...") -> str:
    """Shorten *text* to at most *length* characters at a word boundary."""
    text = collapse_whitespace(text)
    if len(text) <= length:
        return text
    if length <= len(ellipsis):
        return ellipsis[:length]
    cut = text[: length - len(ellipsis) + 1]
    if " " in cut:
        cut = cut[: cut.rindex(" ")]
    else:
        cut = cut[: length - len(ellipsis)]
    return cut.rstrip(" ,.;:") + ellipsis
