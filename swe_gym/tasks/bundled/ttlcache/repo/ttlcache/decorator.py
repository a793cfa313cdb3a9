"""Memoise function calls in a TTLCache."""
import functools
from typing import Any, Callable, Optional

from .cache import TTLCache

_MISSING = object()


def _default_key(*args: Any, **kwargs: Any) -> Any:
    return args, tuple(sorted(kwargs.items()))


def cached(cache: TTLCache, key: Optional[Callable[..., Any]] = None):
    """Cache the results of the decorated function in *cache*."""
    make_key = key or _default_key

    def decorator(fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            k = make_key(*args, **kwargs)
            result = cache.get(k, _MISSING)
            if result is _MISSING:
                result = fn(*args, **kwargs)
                cache.set(k, result)
            return result

        wrapper.cache = cache
        return wrapper

    return decorator
