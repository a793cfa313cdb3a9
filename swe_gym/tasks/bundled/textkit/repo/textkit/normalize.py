"""Whitespace and character normalisation."""
import re
import unicodedata

_WS_RE = re.compile(r"\s+")


def collapse_whitespace(text: str) -> str:
    """Replace runs of whitespace by a single space and strip the ends."""
    return _WS_RE.sub(" ", text).strip()


def normalize_newlines(text: str) -> str:
    """Convert ``\\r\\n`` and lone ``\\r`` to ``\\n``."""
    return text.replace("\r\n", "\n").replace("\r", "\n")


def remove_control_chars(text: str, keep: str = "\n\t") -> str:
    """Drop Unicode control characters (category Cc) except those in *keep*."""
    return "".join(
        ch for ch in text if ch in keep or unicodedata.category(ch) != "Cc"
    )
