"""The warm pool leaks nothing however it is interrupted: closed in the middle of a refill (some of a batch started,
others starting), or a fork from it cancelled while it holds sandboxes taken out of the queue or while some of its
forks made anew are done and others are not. The local provider throughout (a real one; in the first test its
later starts are held back, to make the moment certain)."""

from __future__ import annotations

import asyncio

import pytest

from swe_gym.sandbox import AsyncSandbox, SandboxBackend, SandboxSpec, get_provider
from swe_gym.sandbox.loop import run_sync
from swe_gym.sandbox.pool import SandboxPool
from tests.conftest import leftover_sandboxes, provider_setup

#: Seconds after the start of the interrupted work: before any start, among the starts, after most.
DELAYS = [0.0, 0.01, 0.03, 0.06, 0.1, 0.2, 0.4]


def test_a_pool_closed_while_one_of_a_batch_is_started_and_others_starting_leaves_nothing() -> None:
    """The refill starts three at once; the first is made (a real local sandbox) while the other two are held
    back, and then the pool closes: the made one is closed, the others never start."""
    config, _ = provider_setup("local")
    provider = get_provider(config)
    real_create, made, held, calls = provider.create, asyncio.Event(), asyncio.Event(), []

    async def create(spec: SandboxSpec) -> SandboxBackend:
        calls.append(spec)
        if len(calls) > 1:
            await held.wait()  # never set: these are still starting when the pool closes
        backend = await real_create(spec)
        made.set()
        return backend

    async def scenario() -> None:
        pool = SandboxPool(provider, size=3)
        pool.prefetch([SandboxSpec()])
        await asyncio.wait_for(made.wait(), 60)
        await asyncio.sleep(0.05)  # the made one's create returns through the pool's batch
        await pool.close()
        assert pool.ready_count() == 0 and len(calls) == 3

    provider.create = create  # type: ignore[method-assign]
    try:
        run_sync(scenario())
    finally:
        del provider.create
    assert not any(leftover_sandboxes().values())


@pytest.mark.parametrize("delay", DELAYS)
def test_a_pool_closed_during_a_refill_leaves_nothing(delay: float) -> None:
    config, _ = provider_setup("local")

    async def scenario() -> None:
        pool = SandboxPool(config, size=3)
        pool.prefetch([SandboxSpec()])  # a batch of three starts at once
        await asyncio.sleep(delay)
        await pool.close()

    run_sync(scenario())
    assert not any(leftover_sandboxes().values())


@pytest.mark.parametrize("delay", DELAYS)
def test_a_fork_from_the_pool_cancelled_midway_leaves_nothing(delay: float) -> None:
    config, _ = provider_setup("local")

    async def scenario() -> None:
        pool = SandboxPool(config, size=1)  # one fork replayed in the pool's sandbox, two made anew
        spec = SandboxSpec()
        source = await AsyncSandbox.create(spec, config)
        try:
            await source.exec("seq 1 2000 > lines && mkdir -p d && cp lines d/copy")
            pool.prefetch([spec])
            await pool.wait_ready()
            fork = asyncio.ensure_future(pool.fork(source, 3))
            await asyncio.sleep(delay)
            fork.cancel()
            forks = await asyncio.gather(fork, return_exceptions=True)
            for made in forks:  # done before the cancel arrived: the caller's to close
                if isinstance(made, list):
                    await asyncio.gather(*(box.close() for box in made))
        finally:
            await source.close()
            await pool.close()

    run_sync(scenario())
    assert not any(leftover_sandboxes().values())
