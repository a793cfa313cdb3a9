"""Decorator front-end."""
import functools
from typing import Any, Callable, Optional, Union

from .bucket import TokenBucket
from .limiter import KeyedLimiter


def rate_limited(limiter: Union[TokenBucket, KeyedLimiter],
                 key: Optional[Callable[..., Any]] = None):
    """Raise :class:`RateLimited` when calls exceed *limiter*.

    With a :class:`KeyedLimiter`, *key* maps the call arguments to a key.
    """
    if isinstance(limiter, KeyedLimiter) and key is None:
        raise TypeError("a key function is required with a KeyedLimiter")

    def decorator(fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            if isinstance(limiter, KeyedLimiter):
                limiter.check(key(*args, **kwargs))
            else:
                limiter.acquire()
            return fn(*args, **kwargs)

        return wrapper

    return decorator
