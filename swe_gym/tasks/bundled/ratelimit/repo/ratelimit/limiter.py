"""Per-key rate limiting."""
from typing import Callable, Dict, Hashable, Optional

from .bucket import TokenBucket
from .clock import system_clock
from .errors import RateLimited


class KeyedLimiter:
    """One :class:`TokenBucket` per key, created on first use."""

    def __init__(self, rate: float, capacity: int, clock: Optional[Callable[[], float]] = None):
        self.rate = rate
        self.capacity = capacity
        self._clock = clock or system_clock
        self._buckets: Dict[Hashable, TokenBucket] = {}

    def bucket(self, key: Hashable) -> TokenBucket:
        b = self._buckets.get(key)
        if b is None:
            b = self._buckets[key] = TokenBucket(self.rate, self.capacity, clock=self._clock)
        return b

    def allow(self, key: Hashable, n: int = 1) -> bool:
        return self.bucket(key).try_acquire(n)

    def check(self, key: Hashable, n: int = 1) -> None:
        b = self.bucket(key)
        if not b.try_acquire(n):
            raise RateLimited(b.retry_after(n), key=key)

    def retry_after(self, key: Hashable, n: int = 1) -> float:
        return self.bucket(key).retry_after(n)

    def cleanup(self) -> int:
        """Forget buckets that are full again (equivalent to a fresh bucket)."""
        full = [k for k, b in self._buckets.items() if b.is_full]
        for key in full:
            del self._buckets[key]
        return len(full)

    def __len__(self) -> int:
        return len(self._buckets)
