"""The cache itself."""
from collections import OrderedDict
from typing import Any, Callable, Hashable, List, Optional, Tuple

from .clock import monotonic
from .stats import CacheStats

_MISSING = object()


class TTLCache:
    """A mapping with at most *maxsize* entries, each living *ttl* seconds.

    Reading an entry with :meth:`get` marks it as recently used.  When the
    cache is full, the least recently used entry is evicted to make room.
    """

    def __init__(
        self,
        maxsize: int,
        ttl: float,
        clock: Optional[Callable[[], float]] = None,
    ):
        if maxsize < 1:
            raise ValueError("maxsize must be at least 1")
        if ttl <= 0:
            raise ValueError("ttl must be positive")
        self.maxsize = maxsize
        self.ttl = ttl
        self._clock = clock or monotonic
        # key -> (value, expires_at), least recently used first
        self._data: "OrderedDict[Hashable, Tuple[Any, float]]" = OrderedDict()
        self.stats = CacheStats()

    @staticmethod
    def _is_expired(expires_at: float, now: float) -> bool:
        return now >= expires_at

    def get(self, key: Hashable, default: Any = None) -> Any:
        now = self._clock()
        entry = self._data.get(key, _MISSING)
        if entry is _MISSING:
            self.stats.misses += 1
            return default
        value, expires_at = entry
        if self._is_expired(expires_at, now):
            del self._data[key]
            self.stats.expirations += 1
            self.stats.misses += 1
            return default
        self._data.move_to_end(key)
        self.stats.hits += 1
        return value

    def set(self, key: Hashable, value: Any, ttl: Optional[float] = None) -> None:
        """Store *value* under *key* for *ttl* seconds (default: ``self.ttl``)."""
        ttl = self.ttl if ttl is None else ttl
        if ttl <= 0:
            raise ValueError("ttl must be positive")
        now = self._clock()
        if len(self._data) >= self.maxsize:
            self._evict_lru()
        self._data[key] = (value, now + ttl)
        self._data.move_to_end(key)

    def _evict_lru(self) -> None:
        self._data.popitem(last=False)
        self.stats.evictions += 1

    def expire(self) -> int:
        """Drop every expired entry and return how many were dropped."""
        now = self._clock()
        dead = [k for k, (_, exp) in self._data.items() if self._is_expired(exp, now)]
        for key in dead:
            del self._data[key]
        self.stats.expirations += len(dead)
        return len(dead)

    def delete(self, key: Hashable) -> bool:
        return self._data.pop(key, _MISSING) is not _MISSING

    def clear(self) -> None:
        self._data.clear()

    def keys(self) -> List[Hashable]:
        """Live keys, least recently used first."""
        now = self._clock()
        return [k for k, (_, exp) in self._data.items() if not self._is_expired(exp, now)]

    def __contains__(self, key: Hashable) -> bool:
        """Membership test; does not count as a use of the entry."""
        entry = self._data.get(key, _MISSING)
        return entry is not _MISSING and not self._is_expired(entry[1], self._clock())

    def __len__(self) -> int:
        return len(self._data)

    def __repr__(self) -> str:
        return "TTLCache(maxsize=%d, ttl=%r, size=%d)" % (self.maxsize, self.ttl, len(self))
