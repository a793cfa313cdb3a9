"""Counters describing cache behaviour."""
from dataclasses import dataclass


@dataclass
class CacheStats:
    hits: int = 0
    misses: int = 0
    evictions: int = 0  # live entries dropped to make room
    expirations: int = 0  # entries dropped because their TTL ran out

    @property
    def hit_rate(self) -> float:
        total = self.hits + self.misses
        return self.hits / total if total else 0.0

    def reset(self) -> None:
        self.hits = self.misses = self.evictions = self.expirations = 0
