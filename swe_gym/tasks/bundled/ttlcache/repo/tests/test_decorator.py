from ttlcache import ManualClock, TTLCache, cached


def test_results_are_cached():
    clock = ManualClock()
    calls = []

    @cached(TTLCache(maxsize=8, ttl=10, clock=clock))
    def square(x):
        calls.append(x)
        return x * x

    assert square(3) == 9
    assert square(3) == 9
    assert calls == [3]


def test_recomputed_after_expiry():
    clock = ManualClock()
    calls = []

    @cached(TTLCache(maxsize=8, ttl=10, clock=clock))
    def ident(x):
        calls.append(x)
        return x

    ident(1)
    clock.advance(10)
    ident(1)
    assert calls == [1, 1]


def test_custom_key_and_none_results():
    clock = ManualClock()
    calls = []

    @cached(TTLCache(maxsize=8, ttl=10, clock=clock), key=lambda user, **kw: user)
    def lookup(user, verbose=False):
        calls.append(user)
        return None

    assert lookup("ann") is None
    assert lookup("ann", verbose=True) is None
    assert calls == ["ann"]
