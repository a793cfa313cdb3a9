"""A single token bucket."""
from typing import Callable, Optional

from .clock import system_clock
from .errors import RateLimited


class TokenBucket:
    """Holds up to *capacity* tokens, refilled at *rate* tokens per second."""

    def __init__(
        self,
        rate: float,
        capacity: int,
        clock: Optional[Callable[[], float]] = None,
        initial: Optional[int] = None,
    ):
        if rate <= 0:
            raise ValueError("rate must be positive")
        if capacity < 1:
            raise ValueError("capacity must be at least 1")
        self.rate = float(rate)
        self.capacity = int(capacity)
        self._clock = clock or system_clock
        self._tokens = self.capacity if initial is None else min(int(initial), self.capacity)
        self._last = self._clock()

    def _refill(self) -> None:
        now = self._clock()
        elapsed = now - self._last
        if elapsed <= 0:
            return
        new_tokens = int(elapsed * self.rate)
        self._tokens = min(self.capacity, self._tokens + new_tokens)
        self._last = now

    @property
    def tokens(self) -> float:
        """Tokens currently available."""
        self._refill()
        return self._tokens

    @property
    def is_full(self) -> bool:
        return self.tokens >= self.capacity

    def _check(self, n: int) -> None:
        if n < 1:
            raise ValueError("n must be at least 1")
        if n > self.capacity:
            raise ValueError("cannot take %d tokens from a bucket of %d" % (n, self.capacity))

    def try_acquire(self, n: int = 1) -> bool:
        """Take *n* tokens if available; return whether that succeeded."""
        self._check(n)
        self._refill()
        if self._tokens >= n:
            self._tokens -= n
            return True
        return False

    def acquire(self, n: int = 1) -> None:
        """Like :meth:`try_acquire` but raise :class:`RateLimited` on failure."""
        if not self.try_acquire(n):
            raise RateLimited(self.retry_after(n))

    def retry_after(self, n: int = 1) -> float:
        """Seconds until *n* tokens will be available (0.0 if they are now)."""
        self._check(n)
        self._refill()
        missing = n - self._tokens
        if missing <= 0:
            return 0.0
        return missing / self.rate
