"""`SandboxPool`: sandboxes started ahead of need, so a reset only hands one over.

Ready sandboxes are kept per spec (image, limits, env, ... — labels aside), up
to ``size`` each, refilled in the background after every take, and prefetched
for specs the caller knows are coming. A sandbox is checked alive on take and
discarded once half its TTL is gone; ``close`` drains everything.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import time
from collections import OrderedDict, deque
from collections.abc import Awaitable, Iterable, Mapping
from typing import TypeVar

from pydantic import BaseModel

from swe_gym.errors import SandboxError
from swe_gym.sandbox.create import check_forkable, fork_spec
from swe_gym.sandbox.facade import AsyncSandbox, ProviderLike
from swe_gym.sandbox.loop import gather_made, to_the_end
from swe_gym.sandbox.protocol import ImageAdopter, PoolForker
from swe_gym.sandbox.registry import get_provider
from swe_gym.sandbox.spec import SandboxSpec, SandboxStatus

log = logging.getLogger(__name__)

REFILL_DELAY_S = 0.25
RUNNING = SandboxStatus.RUNNING
T = TypeVar("T")


class PoolStats(BaseModel):
    hits: int = 0
    misses: int = 0
    created: int = 0
    discarded: int = 0
    failed: int = 0
    forked: int = 0  # forks made in ready sandboxes (`SandboxPool.fork`)


def spec_key(spec: SandboxSpec) -> str:
    """Specs that differ only in labels share ready sandboxes."""
    return hashlib.sha256(repr(spec.model_dump(exclude={"labels"})).encode()).hexdigest()


class SandboxPool:
    """Keeps ``size`` started sandboxes per spec. Use from the swe_gym event loop (see `loop.run_sync`)."""

    def __init__(self, provider: ProviderLike = "local", size: int = 2, *, max_specs: int = 4) -> None:
        if size < 1 or max_specs < 1:
            raise ValueError("a pool needs size >= 1 and max_specs >= 1")
        self.provider = get_provider(provider)
        self.size = size
        self.max_specs = max_specs
        self.stats = PoolStats()
        # Least recently used spec first: with many images (one per task) only the last
        # ``max_specs`` keep ready sandboxes, so the pool never holds more than size * max_specs.
        self._ready: OrderedDict[str, deque[tuple[float, AsyncSandbox]]] = OrderedDict()
        self._evicting: set[asyncio.Task[None]] = set()
        self._specs: dict[str, SandboxSpec] = {}
        self._filling: dict[str, asyncio.Task[None]] = {}
        self._due: dict[str, asyncio.TimerHandle] = {}  # refills to start a moment after a take
        self._closed = False

    def ready_count(self, spec: SandboxSpec | None = None) -> int:
        if spec is not None:
            return len(self._ready.get(spec_key(spec), ()))
        return sum(len(queue) for queue in self._ready.values())

    async def take(self, spec: SandboxSpec) -> AsyncSandbox:
        """A live sandbox for ``spec``: a ready one if there is one (of its own spec, or of no image made its image's:
        `ImageAdopter`), else a new one."""
        if self._closed:
            raise SandboxError("the sandbox pool is closed")
        if self._adopts(spec) and spec_key(spec) not in self._ready:
            # An image's own sandboxes are kept only once it is forked (`fork`); sandboxes of none serve it.
            return await self._adopted_or_new(spec)
        key = self._register(spec)
        queue = self._ready[key]
        try:
            while queue:
                born, box = queue.popleft()
                if time.monotonic() - born < spec.ttl_s / 2 and await _held(box, box.status()) is RUNNING:
                    self.stats.hits += 1
                    return box
                self.stats.discarded += 1
                await box.close()
            return await self._adopted_or_new(spec)
        finally:
            # Refill a moment later unless empty: starting a sandbox right away would compete
            # for the CPU with the caller's setup of the one just handed over.
            delay = REFILL_DELAY_S if queue else 0.0
            self._refill_later(key, delay)

    async def _adopted_or_new(self, spec: SandboxSpec) -> AsyncSandbox:
        adopted = await self._adopted(spec, 1)
        if adopted:
            self.stats.hits += 1
            return adopted[0]
        self.stats.misses += 1
        return await AsyncSandbox.create(spec, self.provider)

    async def fork(
        self, source: AsyncSandbox, n: int = 1, *, labels: Mapping[str, str] | None = None
    ) -> list[AsyncSandbox]:
        """``n`` forks of ``source`` (see `AsyncSandbox.fork`), made in ready sandboxes of its spec where the provider
        can (`PoolForker`: one copy of what the source changed, replayed in each); the rest, or all where it cannot,
        with `AsyncSandbox.fork`. The pool refills behind. A fork from the pool keeps the TTL its pooled sandbox
        was started with (more than half of it is left: see `take`). All or none: on failure every fork is closed.
        """
        spec = fork_spec(source.backend, labels)
        provider = self.provider
        ready: list[AsyncSandbox] = []
        if isinstance(provider, PoolForker) and _same(source.provider, provider) and not self._closed:
            await check_forkable(source.backend)
            ready = await self._take_ready(source.spec, n, checked=False)
        forks: list[AsyncSandbox] = []
        if ready:
            # Whether each is still alive is asked while the copy goes in (a dead one is dropped after), unless the
            # copy went through each one's runner: then each answered it.
            replay = provider.fork_into(source.backend, [box.backend for box in ready])
            try:
                if provider.replays_through_runners:
                    replayed, alive = await _held(ready, replay), [RUNNING] * len(ready)
                else:
                    replayed, alive = await _held(
                        ready, asyncio.gather(replay, asyncio.gather(*(box.status() for box in ready)))
                    )
            except SandboxError as exc:
                log.warning("a fork into the pool's sandboxes failed (%s); forking anew", exc)
                replayed, alive = False, []
            if replayed:
                forks = [box for box, status in zip(ready, alive, strict=True) if status is RUNNING]
                self.stats.discarded += len(ready) - len(forks)
                for box in forks:
                    box.backend.spec = spec
                    box.backend.shell_live = source.backend.shell_live
            await asyncio.gather(*(box.close() for box in ready if box not in forks), return_exceptions=True)
        try:
            rest = await source.forks(n - len(forks), labels=labels) if len(forks) < n else []
        except BaseException:
            await asyncio.gather(*(box.close() for box in forks), return_exceptions=True)
            raise
        self.stats.forked += len(forks)
        return forks + rest

    async def _take_ready(self, spec: SandboxSpec, n: int, *, checked: bool = True) -> list[AsyncSandbox]:
        """Up to ``n`` ready sandboxes of ``spec`` (fewer, or none, if the pool has fewer), each alive where
        ``checked`` (else the caller asks); refill behind."""
        key = self._register(spec)
        queue, taken = self._ready[key], []
        while queue and len(taken) < n:
            born, box = queue.popleft()
            if time.monotonic() - born < spec.ttl_s / 2:
                taken.append(box)
            else:
                self.stats.discarded += 1
                await box.close()
        alive = await _held(taken, asyncio.gather(*(box.status() for box in taken))) if checked else []
        dead = [box for box, status in zip(taken, alive, strict=True) if status is not RUNNING] if checked else []
        self.stats.discarded += len(dead)
        await asyncio.gather(*(box.close() for box in dead), return_exceptions=True)
        self._refill_later(key, REFILL_DELAY_S)
        live = [box for box in taken if box not in dead]
        return live + (await self._adopted(spec, n - len(live)) if len(live) < n else [])

    def _adopts(self, spec: SandboxSpec) -> bool:
        """Whether sandboxes of no image can become ``spec``'s (`ImageAdopter`) and the pool keeps such."""
        provider, plain = self.provider, spec.model_copy(update={"image": None})
        if not spec.image or not isinstance(provider, ImageAdopter) or spec_key(plain) not in self._ready:
            return False
        return provider.holds(spec.image)

    async def _adopted(self, spec: SandboxSpec, n: int) -> list[AsyncSandbox]:
        """Up to ``n`` ready sandboxes of no image made ``spec.image``'s (`ImageAdopter`: local's saved homes), so
        sandboxes of one spec serve every image of a provider whose images are only files."""
        provider = self.provider
        if not self._adopts(spec) or self._closed:
            return []
        assert isinstance(provider, ImageAdopter) and spec.image
        plain = spec.model_copy(update={"image": None})
        boxes = await self._take_ready(plain, n)
        adopted = await _held(boxes, asyncio.gather(*(provider.adopt(box.backend, spec.image) for box in boxes)))
        kept = [box for box, ok in zip(boxes, adopted, strict=True) if ok]
        await asyncio.gather(*(box.close() for box in boxes if box not in kept), return_exceptions=True)
        return kept

    def prefetch(self, specs: Iterable[SandboxSpec]) -> None:
        """Start filling for the first ``max_specs`` distinct specs that are coming, in order."""
        keys: list[str] = []
        for spec in specs:
            if spec_key(spec) not in keys:
                if len(keys) == self.max_specs:
                    break
                keys.append(self._register(spec))
        for key in keys:
            self._refill(key)

    async def wait_ready(self) -> None:
        """Until every background refill, those due a moment after a take included, has finished (tests and
        benchmarks)."""
        while True:
            pending = [task for task in self._filling.values() if not task.done()]
            if pending:
                await asyncio.gather(*pending, return_exceptions=True)
            elif self._due:
                await asyncio.sleep(REFILL_DELAY_S / 5)
            else:
                return

    async def close(self) -> None:
        self._closed = True
        for due in self._due.values():
            due.cancel()
        self._due.clear()
        for task in self._filling.values():
            task.cancel()
        await asyncio.gather(*self._filling.values(), return_exceptions=True)
        boxes = [box for queue in self._ready.values() for _, box in queue]
        self._ready.clear()
        await asyncio.gather(*(box.close() for box in boxes), *self._evicting, return_exceptions=True)

    def _register(self, spec: SandboxSpec) -> str:
        key = spec_key(spec)
        self._specs.setdefault(key, spec)
        self._ready.setdefault(key, deque())
        self._ready.move_to_end(key)
        while len(self._ready) > self.max_specs:
            self._evict(next(iter(self._ready)))
        return key

    def _evict(self, key: str) -> None:
        """Forget the least recently used spec: stop its refill and close its ready sandboxes."""
        queue = self._ready.pop(key)
        self._specs.pop(key, None)
        due = self._due.pop(key, None)
        if due is not None:
            due.cancel()
        filling = self._filling.pop(key, None)
        if filling is not None:
            filling.cancel()
        boxes = [box for _, box in queue]
        self.stats.discarded += len(boxes)
        task = asyncio.get_running_loop().create_task(self._close_boxes(boxes, filling))
        self._evicting.add(task)
        task.add_done_callback(self._evicting.discard)

    @staticmethod
    async def _close_boxes(boxes: list[AsyncSandbox], filling: asyncio.Task[None] | None) -> None:
        if filling is not None:
            await asyncio.gather(filling, return_exceptions=True)
        await asyncio.gather(*(box.close() for box in boxes), return_exceptions=True)

    def _pool_spec(self, spec: SandboxSpec) -> SandboxSpec:
        """Pooled sandboxes serve any task: they carry the pool label instead of the task's."""
        return spec.model_copy(update={"labels": {"pool": "true"}})

    def _refill_later(self, key: str, delay: float) -> None:
        due = self._due.pop(key, None)
        if due is not None:
            due.cancel()
        self._due[key] = asyncio.get_running_loop().call_later(delay, self._refill, key)

    def _refill(self, key: str) -> None:
        self._due.pop(key, None)
        running = self._filling.get(key)
        if self._closed or key not in self._ready or (running is not None and not running.done()):
            return
        self._filling[key] = asyncio.get_running_loop().create_task(self._fill(key))

    async def _fill(self, key: str) -> None:
        spec = self._pool_spec(self._specs[key])
        while not self._closed and key in self._ready and len(self._ready[key]) < self.size:
            need = self.size - len(self._ready[key])
            results = await gather_made(
                [AsyncSandbox.create(spec, self.provider) for _ in range(need)], AsyncSandbox.close
            )
            unwanted = []  # the pool closed or forgot the spec meanwhile
            for result in results:
                if isinstance(result, BaseException):
                    self.stats.failed += 1
                    log.warning("sandbox pool could not start a sandbox: %s", result)
                elif self._closed or key not in self._ready:
                    unwanted.append(result)
                else:
                    self.stats.created += 1
                    self._ready[key].append((time.monotonic(), result))
            await to_the_end(asyncio.gather(*(box.close() for box in unwanted), return_exceptions=True))
            if any(isinstance(r, BaseException) for r in results):
                return  # no hot loop on a failing provider; the next take retries


def _same(one: object, other: object) -> bool:
    """The same provider: one instance, or two of one class and equal options (each config dict makes its own)."""
    if one is other:
        return True
    options = getattr(one, "config", None)
    return type(one) is type(other) and options is not None and options == getattr(other, "config", None)


async def _held(boxes: AsyncSandbox | list[AsyncSandbox], awaitable: Awaitable[T]) -> T:
    """``awaitable``, awaited while ``boxes`` are out of the queue and not yet handed over: if it fails or we are
    cancelled meanwhile, they are closed (to the end) before the error goes on, never dropped."""
    try:
        return await awaitable
    except BaseException:
        held = boxes if isinstance(boxes, list) else [boxes]
        await to_the_end(asyncio.gather(*(box.close() for box in held), return_exceptions=True))
        raise
