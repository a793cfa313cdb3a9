"""Precedence rules (semver.org, section 11)."""
from typing import Tuple


def _cmp(a, b) -> int:
    return (a > b) - (a < b)


def compare_prerelease(a: Tuple[str, ...], b: Tuple[str, ...]) -> int:
    """Compare two pre-release identifier tuples; return -1, 0 or 1."""
    for x, y in zip(a, b):
        if x != y:
            return _cmp(x, y)
    return _cmp(len(a), len(b))


def compare(a, b) -> int:
    """Compare two versions (``Version`` objects or strings) by precedence.

    Build metadata is ignored.  Returns -1, 0 or 1.
    """
    from .version import Version

    a = Version.coerce(a)
    b = Version.coerce(b)
    result = _cmp((a.major, a.minor, a.patch), (b.major, b.minor, b.patch))
    if result:
        return result
    return compare_prerelease(a.prerelease, b.prerelease)
