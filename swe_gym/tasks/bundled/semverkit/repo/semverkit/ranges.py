"""npm-style version ranges.

Supported syntax: comparators ``<``, ``<=``, ``>``, ``>=``, ``=`` (or a
bare version), caret ``^1.2.3`` and tilde ``~1.2.3``.  Comparators
separated by whitespace must all match; alternatives are separated by
``||``.
"""
import re
from typing import Callable, Iterable, List, Optional, Union

from .errors import InvalidRange, InvalidVersion
from .version import Version

_COMPARATOR_RE = re.compile(r"^(<=|>=|<|>|=|\^|~)?\s*(\S+)$")

Predicate = Callable[[Version], bool]


def _caret(v: Version) -> List[Predicate]:
    if v.major:
        upper = Version(v.major + 1, 0, 0)
    elif v.minor:
        upper = Version(0, v.minor + 1, 0)
    else:
        upper = Version(0, 0, v.patch + 1)
    return [lambda x: x >= v, lambda x: x < upper]


def _tilde(v: Version) -> List[Predicate]:
    upper = Version(v.major, v.minor + 1, 0)
    return [lambda x: x >= v, lambda x: x < upper]


def _comparator(text: str) -> List[Predicate]:
    m = _COMPARATOR_RE.match(text)
    if not m:
        raise InvalidRange("invalid comparator: %r" % (text,))
    op, ver = m.groups()
    try:
        v = Version.parse(ver)
    except InvalidVersion as exc:
        raise InvalidRange(str(exc)) from None
    if op == "^":
        return _caret(v)
    if op == "~":
        return _tilde(v)
    return [{
        None: lambda x: x == v,
        "=": lambda x: x == v,
        "<": lambda x: x < v,
        "<=": lambda x: x <= v,
        ">": lambda x: x > v,
        ">=": lambda x: x >= v,
    }[op]]


def _parse_range(spec: str) -> List[List[Predicate]]:
    spec = re.sub(r"(<=|>=|<|>|=|\^|~)\s+", r"\1", spec.strip())
    if not spec:
        raise InvalidRange("empty range")
    alternatives = []
    for alt in spec.split("||"):
        parts = alt.split()
        if not parts:
            raise InvalidRange("empty alternative in %r" % (spec,))
        preds: List[Predicate] = []
        for part in parts:
            preds.extend(_comparator(part))
        alternatives.append(preds)
    return alternatives


def satisfies(version: Union[Version, str], spec: str) -> bool:
    v = Version.coerce(version)
    return any(all(p(v) for p in preds) for preds in _parse_range(spec))


def max_satisfying(versions: Iterable[Union[Version, str]], spec: str) -> Optional[Union[Version, str]]:
    """The highest of *versions* satisfying *spec* (as given), or None."""
    alternatives = _parse_range(spec)
    best = None
    best_v = None
    for item in versions:
        v = Version.coerce(item)
        if any(all(p(v) for p in preds) for preds in alternatives):
            if best_v is None or v > best_v:
                best, best_v = item, v
    return best
