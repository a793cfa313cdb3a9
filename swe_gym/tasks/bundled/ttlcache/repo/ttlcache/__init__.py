"""ttlcache - bounded LRU cache with per-entry expiry."""
from .cache import TTLCache
from .clock import ManualClock
from .decorator import cached
from .stats import CacheStats

__all__ = ["CacheStats", "ManualClock", "TTLCache", "cached"]
