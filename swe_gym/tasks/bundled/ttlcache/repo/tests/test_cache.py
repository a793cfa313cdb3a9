import pytest

from ttlcache import ManualClock, TTLCache


@pytest.fixture
def clock():
    return ManualClock()


def test_set_and_get(clock):
    cache = TTLCache(maxsize=4, ttl=10, clock=clock)
    cache.set("a", 1)
    assert cache.get("a") == 1
    assert cache.get("missing", "dflt") == "dflt"


def test_invalid_arguments():
    with pytest.raises(ValueError):
        TTLCache(maxsize=0, ttl=1)
    with pytest.raises(ValueError):
        TTLCache(maxsize=1, ttl=0)


def test_entries_expire(clock):
    cache = TTLCache(maxsize=4, ttl=10, clock=clock)
    cache.set("a", 1)
    clock.advance(9.9)
    assert cache.get("a") == 1
    clock.advance(0.1)
    assert cache.get("a") is None
    assert cache.stats.expirations == 1


def test_per_entry_ttl(clock):
    cache = TTLCache(maxsize=4, ttl=10, clock=clock)
    cache.set("short", 1, ttl=1)
    cache.set("long", 2)
    clock.advance(5)
    assert "short" not in cache
    assert "long" in cache


def test_lru_eviction_order(clock):
    cache = TTLCache(maxsize=3, ttl=100, clock=clock)
    for k in "abc":
        cache.set(k, k.upper())
    assert cache.get("a") == "A"  # a is now most recently used
    cache.set("d", "D")
    assert "b" not in cache
    assert cache.keys() == ["c", "a", "d"]
    assert cache.stats.evictions == 1


def test_contains_does_not_refresh(clock):
    cache = TTLCache(maxsize=2, ttl=100, clock=clock)
    cache.set("a", 1)
    cache.set("b", 2)
    assert "a" in cache
    cache.set("c", 3)
    assert "a" not in cache


def test_expire_returns_count(clock):
    cache = TTLCache(maxsize=10, ttl=5, clock=clock)
    cache.set("a", 1)
    cache.set("b", 2, ttl=50)
    clock.advance(6)
    assert cache.expire() == 1
    assert len(cache) == 1


def test_delete_and_clear(clock):
    cache = TTLCache(maxsize=10, ttl=5, clock=clock)
    cache.set("a", 1)
    assert cache.delete("a") is True
    assert cache.delete("a") is False
    cache.set("b", 2)
    cache.clear()
    assert len(cache) == 0


def test_hit_rate(clock):
    cache = TTLCache(maxsize=10, ttl=5, clock=clock)
    cache.set("a", 1)
    cache.get("a")
    cache.get("a")
    cache.get("b")
    assert cache.stats.hits == 2
    assert cache.stats.misses == 1
    assert cache.stats.hit_rate == pytest.approx(2 / 3)
