"""Bounded, retrying sandbox creation: the one path every caller goes through.

A semaphore per provider instance caps concurrent creates (a Docker daemon that
gets 64 starts at once times out), and transient failures are retried with
jittered exponential backoff. Permanent failures (missing image, unavailable
provider, bad configuration) are raised at once.
"""

from __future__ import annotations

import asyncio
import logging
import random
import weakref

from swe_gym.errors import ConfigError, ImageNotFoundError, ProviderUnavailableError, SandboxError
from swe_gym.sandbox.protocol import SandboxBackend, SandboxProvider
from swe_gym.sandbox.spec import SandboxSpec

log = logging.getLogger(__name__)

DEFAULT_MAX_CONCURRENT_CREATES = 8
CREATE_RETRIES = 3
BACKOFF_S = 0.5
PERMANENT = (ImageNotFoundError, ProviderUnavailableError, ConfigError)

_gates: weakref.WeakKeyDictionary[SandboxProvider, asyncio.Semaphore] = weakref.WeakKeyDictionary()


def forget_gates() -> None:
    """Semaphores belong to one event loop; a forked child starts a new one."""
    _gates.clear()


def create_gate(provider: SandboxProvider) -> asyncio.Semaphore:
    """The provider's create semaphore (size: its ``max_concurrent_creates``, default 8)."""
    gate = _gates.get(provider)
    if gate is None:
        gate = asyncio.Semaphore(int(getattr(provider, "max_concurrent_creates", DEFAULT_MAX_CONCURRENT_CREATES)))
        _gates[provider] = gate
    return gate


async def create_backend(
    provider: SandboxProvider, spec: SandboxSpec, *, retries: int = CREATE_RETRIES
) -> SandboxBackend:
    for attempt in range(retries + 1):
        try:
            async with create_gate(provider):
                return await provider.create(spec)
        except PERMANENT:
            raise
        except SandboxError as exc:
            if attempt == retries:
                raise SandboxError(f"{provider.name} sandbox creation failed {retries + 1} times; last: {exc}") from exc
            delay = BACKOFF_S * 2**attempt * (0.5 + random.random())
            log.warning("%s sandbox creation failed (%s); retry %d in %.1fs", provider.name, exc, attempt + 1, delay)
            await asyncio.sleep(delay)
    raise AssertionError("unreachable")
