"""ratelimit - token-bucket rate limiting."""
from .bucket import TokenBucket
from .clock import FakeClock
from .decorators import rate_limited
from .errors import RateLimited
from .limiter import KeyedLimiter

__all__ = ["FakeClock", "KeyedLimiter", "RateLimited", "TokenBucket", "rate_limited"]
