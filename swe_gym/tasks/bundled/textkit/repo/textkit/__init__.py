"""textkit - slugs, wrapping and whitespace helpers."""
from .normalize import collapse_whitespace, normalize_newlines, remove_control_chars
from .slug import slugify
from .wrap import fill, truncate, wrap

__all__ = [
    "collapse_whitespace",
    "fill",
    "normalize_newlines",
    "remove_control_chars",
    "slugify",
    "truncate",
    "wrap",
]
