"""Clocks: zero-argument callables returning seconds as a float."""
import time

system_clock = time.monotonic


class FakeClock:
    """Deterministic clock for tests."""

    def __init__(self, start: float = 0.0):
        self._now = float(start)

    def __call__(self) -> float:
        return self._now

    def tick(self, seconds: float) -> float:
        if seconds < 0:
            raise ValueError("time only moves forward")
        self._now += seconds
        return self._now
