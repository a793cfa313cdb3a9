import pytest

from ratelimit import FakeClock, RateLimited, TokenBucket


@pytest.fixture
def clock():
    return FakeClock()


def test_starts_full(clock):
    bucket = TokenBucket(rate=1, capacity=3, clock=clock)
    assert bucket.tokens == 3
    assert [bucket.try_acquire() for _ in range(4)] == [True, True, True, False]


def test_initial_tokens(clock):
    bucket = TokenBucket(rate=1, capacity=3, clock=clock, initial=1)
    assert bucket.try_acquire()
    assert not bucket.try_acquire()


def test_refills_over_time(clock):
    bucket = TokenBucket(rate=2, capacity=10, clock=clock, initial=0)
    clock.tick(3)
    assert bucket.tokens == 6


def test_refill_capped_at_capacity(clock):
    bucket = TokenBucket(rate=5, capacity=4, clock=clock)
    bucket.try_acquire(4)
    clock.tick(100)
    assert bucket.tokens == 4


def test_acquire_many(clock):
    bucket = TokenBucket(rate=1, capacity=5, clock=clock)
    assert bucket.try_acquire(5)
    assert not bucket.try_acquire(1)
    clock.tick(2)
    assert not bucket.try_acquire(3)
    assert bucket.try_acquire(2)


def test_retry_after_whole_seconds(clock):
    bucket = TokenBucket(rate=1, capacity=2, clock=clock)
    bucket.try_acquire(2)
    assert bucket.retry_after() == 1.0
    assert bucket.retry_after(2) == 2.0
    clock.tick(1)
    assert bucket.retry_after() == 0.0


def test_acquire_raises(clock):
    bucket = TokenBucket(rate=4, capacity=1, clock=clock)
    bucket.acquire()
    with pytest.raises(RateLimited) as info:
        bucket.acquire()
    assert info.value.retry_after == 0.25
    assert "retry after 0.25s" in str(info.value)


def test_invalid_arguments(clock):
    with pytest.raises(ValueError):
        TokenBucket(rate=0, capacity=1)
    with pytest.raises(ValueError):
        TokenBucket(rate=1, capacity=0)
    bucket = TokenBucket(rate=1, capacity=2, clock=clock)
    with pytest.raises(ValueError):
        bucket.try_acquire(3)
    with pytest.raises(ValueError):
        bucket.retry_after(0)


def test_fake_clock_is_monotonic():
    clock = FakeClock(10)
    assert clock.tick(0.5) == 10.5
    with pytest.raises(ValueError):
        clock.tick(-1)
