"""URL slugs."""
import re
import unicodedata
from typing import Optional

from .normalize import remove_control_chars

_ASCII_JUNK = re.compile(r"[^A-Za-z0-9]+")
_UNICODE_JUNK = re.compile(r"[\W_]+")


def _truncate(slug: str, max_length: int, sep: str) -> str:
    """Cut *slug* to at most *max_length* characters at a separator."""
    if len(slug) <= max_length:
        return slug
    cut = slug[: max_length + 1]
    if sep in cut:
        cut = cut[: cut.rindex(sep)]
    else:
        cut = cut[:max_length]
    return cut.strip(sep)


def slugify(
    text: str,
    sep: str = "-",
    max_length: Optional[int] = None,
    lowercase: bool = True,
    allow_unicode: bool = False,
) -> str:
    """Turn *text* into a URL-safe slug.

    Runs of anything that is not a letter or digit become a single *sep*.
    By default the result is plain ASCII; with *allow_unicode* non-ASCII
    letters are kept.  *max_length* cuts the slug at a separator boundary.
    """
    if not sep:
        raise ValueError("sep must not be empty")
    text = remove_control_chars(str(text))
    text = unicodedata.normalize("NFKC", text)
    if lowercase:
        text = text.lower()
    junk = _UNICODE_JUNK if allow_unicode else _ASCII_JUNK
    slug = junk.sub(sep, text).strip(sep)
    if max_length is not None:
        if max_length < 1:
            raise ValueError("max_length must be positive")
        slug = _truncate(slug, max_length, sep)
    return slug
