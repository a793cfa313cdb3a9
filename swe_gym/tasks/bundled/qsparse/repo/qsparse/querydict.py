"""An ordered, multi-valued mapping for query parameters."""
from typing import Iterable, Iterator, List, Optional, Tuple

from .encode import urlencode
from .parser import parse_qsl

_MISSING = object()


class QueryDict:
    """Ordered multi-valued mapping built from a query string.

    ``qd[key]`` returns the *last* value for a key, ``qd.getlist(key)`` all
    of them in order.
    """

    def __init__(self, qs: str = "", keep_blank_values: bool = True):
        self._items: List[Tuple[str, str]] = (
            parse_qsl(qs, keep_blank_values=keep_blank_values) if qs else []
        )

    @classmethod
    def from_pairs(cls, pairs: Iterable[Tuple[str, str]]) -> "QueryDict":
        qd = cls()
        for key, value in pairs:
            qd.add(key, value)
        return qd

    def __getitem__(self, key: str) -> str:
        for k, v in reversed(self._items):
            if k == key:
                return v
        raise KeyError(key)

    def get(self, key: str, default: Optional[str] = None) -> Optional[str]:
        try:
            return self[key]
        except KeyError:
            return default

    def getlist(self, key: str) -> List[str]:
        return [v for k, v in self._items if k == key]

    def add(self, key: str, value: str) -> None:
        self._items.append((str(key), str(value)))

    def setlist(self, key: str, values: Iterable[str]) -> None:
        self._items = [(k, v) for k, v in self._items if k != key]
        for value in values:
            self.add(key, value)

    def keys(self) -> List[str]:
        seen = []
        for k, _ in self._items:
            if k not in seen:
                seen.append(k)
        return seen

    def items(self) -> List[Tuple[str, str]]:
        return list(self._items)

    def __contains__(self, key: object) -> bool:
        return any(k == key for k, _ in self._items)

    def __iter__(self) -> Iterator[str]:
        return iter(self.keys())

    def __len__(self) -> int:
        return len(self.keys())

    def urlencode(self) -> str:
        return urlencode(self._items)

    def __repr__(self) -> str:
        return "QueryDict(%r)" % (self._items,)
