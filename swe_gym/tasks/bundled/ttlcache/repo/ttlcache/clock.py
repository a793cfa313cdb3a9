"""Clocks.  A clock is any zero-argument callable returning seconds."""
import time


def monotonic() -> float:
    return time.monotonic()


class ManualClock:
    """A clock that only moves when told to (for tests and simulations)."""

    def __init__(self, start: float = 0.0):
        self.now = float(start)

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        if seconds < 0:
            raise ValueError("cannot move a clock backwards")
        self.now += seconds
