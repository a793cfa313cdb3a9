"""Matching paths against glob patterns."""
import functools
import re
from typing import Pattern

from .translate import translate
from .util import normalize_path


@functools.lru_cache(maxsize=512)
def compile_pattern(pattern: str, case_sensitive: bool = True) -> Pattern[str]:
    flags = 0 if case_sensitive else re.IGNORECASE
    return re.compile(translate(normalize_path(pattern)), flags)


def match(path: str, pattern: str, case_sensitive: bool = True) -> bool:
    """Return True if the whole of *path* matches *pattern*.

    A pattern starting with ``/`` is anchored to the root in the same way
    as one without; the leading slash is ignored.
    """
    path = normalize_path(path).lstrip("/")
    pattern = pattern.lstrip("/")
    return compile_pattern(pattern, case_sensitive).match(path) is not None
