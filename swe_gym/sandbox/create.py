"""Bounded, retrying sandbox creation: the one path every caller goes through.

A semaphore per provider instance caps concurrent creates (a Docker daemon that
gets 64 starts at once times out), and transient failures are retried with
jittered exponential backoff. Permanent failures (missing image, unavailable
provider, bad configuration) are raised at once. Forks (`fork_backend`) go
through the same gate and retries.
"""

from __future__ import annotations

import asyncio
import logging
import weakref
from collections.abc import Awaitable, Callable, Mapping

from tenacity import AsyncRetrying, RetryCallState, retry_if_exception, stop_after_attempt, wait_random_exponential

from swe_gym.errors import (
    ConfigError,
    ForkNotSupportedError,
    ImageNotFoundError,
    ProviderUnavailableError,
    SandboxDiedError,
    SandboxError,
)
from swe_gym.sandbox.protocol import SandboxBackend, SandboxForker, SandboxProvider
from swe_gym.sandbox.spec import SandboxSpec, SandboxStatus

log = logging.getLogger(__name__)

CREATE_RETRIES = 3
BACKOFF_S = 0.5
PERMANENT: tuple[type[Exception], ...] = (ImageNotFoundError, ProviderUnavailableError, ConfigError)
#: A fork also stops at once when it cannot be done here, or when its source died.
FORK_PERMANENT = (*PERMANENT, ForkNotSupportedError, SandboxDiedError)
#: The label a fork carries: the id of the sandbox it was forked from.
FORKED_FROM = "forked_from"

_gates: weakref.WeakKeyDictionary[SandboxProvider, asyncio.Semaphore] = weakref.WeakKeyDictionary()


def forget_gates() -> None:
    """Semaphores belong to one event loop; a forked child starts a new one."""
    _gates.clear()


def create_gate(provider: SandboxProvider) -> asyncio.Semaphore:
    """The provider's create semaphore (size: its ``max_concurrent_creates``)."""
    gate = _gates.get(provider)
    if gate is None:
        gate = asyncio.Semaphore(provider.max_concurrent_creates)
        _gates[provider] = gate
    return gate


async def create_backend(
    provider: SandboxProvider, spec: SandboxSpec, *, retries: int = CREATE_RETRIES
) -> SandboxBackend:
    return await _gated(provider, lambda: provider.create(spec), "creation", retries, PERMANENT)


def fork_spec(
    source: SandboxBackend, labels: Mapping[str, str] | None = None, ttl_s: float | None = None
) -> SandboxSpec:
    """The spec a fork of ``source`` gets: the source's (limits, env, network, image), its labels plus ``labels``
    and ``forked_from``, ``ttl_s`` (default: the source's TTL, counted from the fork), no ``files`` to write."""
    if ttl_s is not None and not ttl_s > 0:
        raise ConfigError(f"a fork's ttl_s must be > 0, got {ttl_s}")
    spec = source.spec
    return spec.model_copy(
        update={
            "labels": {**spec.labels, **(labels or {}), FORKED_FROM: source.id},
            "ttl_s": spec.ttl_s if ttl_s is None else float(ttl_s),
            "files": {},
        }
    )


async def fork_backend(
    provider: SandboxProvider, source: SandboxBackend, spec: SandboxSpec, *, retries: int = CREATE_RETRIES
) -> SandboxBackend:
    """A fork of the live ``source`` (one of ``provider``'s sandboxes) with ``spec`` (see `fork_spec`)."""
    if not isinstance(provider, SandboxForker):
        raise ForkNotSupportedError(
            f"the {provider.name} provider cannot fork a sandbox (it has no fork(sandbox, spec); see "
            "swe_gym.sandbox.protocol.SandboxForker); start a new sandbox instead"
        )
    await check_forkable(source)
    return await _gated(provider, lambda: provider.fork(source, spec), "fork", retries, FORK_PERMANENT)


async def check_forkable(source: SandboxBackend) -> None:
    """A `SandboxError` unless ``source`` is live (`SandboxDiedError` when it stopped answering)."""
    status = await source.status()
    if status is SandboxStatus.CLOSED:
        raise SandboxError(f"cannot fork sandbox {source.id}: it is closed")
    if status is SandboxStatus.DEAD:
        raise SandboxDiedError(f"cannot fork sandbox {source.id}: it stopped answering")


async def _gated(
    provider: SandboxProvider,
    start: Callable[[], Awaitable[SandboxBackend]],
    what: str,
    retries: int,
    permanent: tuple[type[Exception], ...],
) -> SandboxBackend:
    """``start()`` under the provider's gate, retried with jittered exponential backoff unless permanent."""

    async def attempt() -> SandboxBackend:
        async with create_gate(provider):
            return await start()

    def warn(state: RetryCallState) -> None:
        error = state.outcome.exception() if state.outcome else None
        retry, delay = state.attempt_number, state.upcoming_sleep
        log.warning("%s sandbox %s failed (%s); retry %d in %.1fs", provider.name, what, error, retry, delay)

    retrying = AsyncRetrying(
        stop=stop_after_attempt(retries + 1),
        wait=wait_random_exponential(multiplier=BACKOFF_S, max=30.0),
        retry=retry_if_exception(lambda exc: isinstance(exc, SandboxError) and not isinstance(exc, permanent)),
        before_sleep=warn,
        reraise=True,
    )
    try:
        return await retrying(attempt)
    except permanent:
        raise
    except SandboxError as exc:
        raise SandboxError(f"{provider.name} sandbox {what} failed {retries + 1} times; last: {exc}") from exc
