import pytest

from ratelimit import FakeClock, KeyedLimiter, RateLimited, TokenBucket, rate_limited


def test_keys_are_independent():
    clock = FakeClock()
    limiter = KeyedLimiter(rate=1, capacity=1, clock=clock)
    assert limiter.allow("a")
    assert not limiter.allow("a")
    assert limiter.allow("b")
    clock.tick(1)
    assert limiter.allow("a")


def test_check_raises_with_key():
    limiter = KeyedLimiter(rate=1, capacity=1, clock=FakeClock())
    limiter.check("ip1")
    with pytest.raises(RateLimited) as info:
        limiter.check("ip1")
    assert info.value.key == "ip1"
    assert info.value.retry_after == 1.0


def test_cleanup_drops_full_buckets():
    clock = FakeClock()
    limiter = KeyedLimiter(rate=1, capacity=2, clock=clock)
    limiter.allow("a")
    limiter.allow("b", 2)
    clock.tick(1)
    assert limiter.cleanup() == 1  # "a" is full again, "b" is not
    assert len(limiter) == 1
    clock.tick(1)
    assert limiter.cleanup() == 1
    assert len(limiter) == 0


def test_decorator_with_bucket():
    clock = FakeClock()
    calls = []

    @rate_limited(TokenBucket(rate=1, capacity=2, clock=clock))
    def ping():
        calls.append(1)
        return "pong"

    assert ping() == "pong"
    assert ping() == "pong"
    with pytest.raises(RateLimited):
        ping()
    assert len(calls) == 2


def test_decorator_with_keyed_limiter():
    limiter = KeyedLimiter(rate=1, capacity=1, clock=FakeClock())

    @rate_limited(limiter, key=lambda user, **_: user)
    def fetch(user, page=1):
        return (user, page)

    assert fetch("ann") == ("ann", 1)
    assert fetch("bob", page=2) == ("bob", 2)
    with pytest.raises(RateLimited):
        fetch("ann", page=3)


def test_keyed_limiter_requires_key_function():
    with pytest.raises(TypeError):
        rate_limited(KeyedLimiter(rate=1, capacity=1))
