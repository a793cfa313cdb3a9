"""`EpisodeHost`: the episode lifecycle of every front end, written once.

`SWEEnv`, `SWEVectorEnv` (and so each `RayVectorEnv` actor) and NeMo RL's `SWEGymEnvironment` are thin
adapters over a host: they translate call shapes, the host does the rest. It is built from one
`HostConfig` and owns the certified tasks, the resolved settings, the warm pool and its warm-up, the live
episodes by key (a slot number, an episode id), the dispatch of an action (a bash string or a tool call),
forks, the closing of what an episode leaves behind, and shutdown.

The failure rule, the same on every front end:

- **The caller's mistake raises**, at once and before anything starts: a `ConfigError` (a bad option, an
  unknown ``task_id``, a task record that cannot run, a fork from a slot with no live episode), or no
  image named where one is needed.
- **The environment's failure to start an episode masks that episode**, never raises and never touches
  the others: a sandbox that cannot be created (a missing image, an engine refusing, a timeout) or
  forked, or that dies while the episode starts. The reset returns ``[swe_gym: episode masked: ...]``
  with ``info["masked"]`` True and ``info["masked_reason"]``; the next step ends that episode
  (truncated, reward 0.0, masked). A running episode ends masked the same way when its sandbox dies
  not by the agent's own command (`Episode`'s rules).
- **A fork the agent made impossible ends unresolved**, not masked: when a fork of an episode's sandbox fails
  while a fresh sandbox of the same task forks (`Episode.fork`'s control), the fork's episode ends at its next
  step terminated with reward 0.0 (``info["fork_failed"]`` says why), as any episode the agent broke.
- **Closing ends everything**: `close` cancels the calls in flight (a step another thread is waiting
  on raises there), then removes every sandbox of every episode and the pool.
"""

from __future__ import annotations

import asyncio
import dataclasses
import inspect
import logging
from collections.abc import Coroutine, Hashable, Iterable, Mapping, Sequence
from concurrent.futures import CancelledError, Future
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

from swe_gym.envs.checkpoint import EpisodeCheckpoint
from swe_gym.envs.episode import Episode, EpisodeSettings, Reset, StepResult
from swe_gym.envs.options import HostConfig
from swe_gym.envs.text import masked_note, to_observation
from swe_gym.errors import ConfigError, SandboxError, SWEGymError, UnforkableSandboxError
from swe_gym.grading.certificate import env_tasks, load_certificate
from swe_gym.sandbox import SandboxSpec, get_provider
from swe_gym.sandbox.checkpoints import DEFAULT_TTL_S
from swe_gym.sandbox.facade import ProviderLike
from swe_gym.sandbox.loop import background_loop, in_loop_thread, offload, run_sync, to_the_end
from swe_gym.sandbox.pool import SandboxPool, spec_key
from swe_gym.sandbox.protocol import ImageAdopter
from swe_gym.tasks import SWETask, agent_spec, load_tasks, repo_archive
from swe_gym.tasks.loader import TaskSource

log = logging.getLogger(__name__)

T = TypeVar("T")
Key = Hashable

#: Shutdowns begun on the loop itself (a host closed by the GC there), kept until they finish.
_DETACHED: set[asyncio.Future[None]] = set()


def host_config(
    tasks: TaskSource,
    provider: ProviderLike,
    instance_ids: Iterable[str] | None,
    split: str,
    limit: int | slice | None,
    options: Mapping[str, Any],
) -> HostConfig:
    """A front end's arguments as a host's one config (a `ConfigError` naming every bad one)."""
    source = tasks if isinstance(tasks, str | Path) else list(tasks)
    ids = list(instance_ids) if instance_ids is not None else None
    selection = {"tasks": source, "provider": provider, "instance_ids": ids, "split": split, "limit": limit}
    return HostConfig.parse({**selection, **options})


def host_tasks(config: HostConfig) -> list[SWETask]:
    """The tasks a host of ``config`` runs: loaded, then screened by its certificate."""
    loaded = load_tasks(config.tasks, split=config.split, instance_ids=config.instance_ids, limit=config.limit)
    return env_tasks(loaded, config.certificate, config.uncertified)


def host_settings(config: HostConfig) -> EpisodeSettings:
    """What every episode of a host runs with: the options, and the provider, spec, pool they resolve to."""
    provider = get_provider(config.provider)
    spec = config.sandbox.model_copy(
        update={
            "image": config.image or config.sandbox.image,
            "exec_timeout_s": config.step_timeout,
            "max_output_bytes": config.max_observation_chars * 4,
        }
    )
    return EpisodeSettings(
        options=config,
        provider=provider,
        spec=spec,
        pool=SandboxPool(provider, config.pool_size) if config.pool_size else None,
        certificate=load_certificate(config.certificate) if config.certificate is not None else None,
    )


def pick_task(
    tasks: Sequence[SWETask], by_id: Mapping[str, SWETask], rng: np.random.Generator, task_id: str | None
) -> SWETask:
    """The task named ``task_id`` (a `ConfigError` if there is none), else one drawn with ``rng``."""
    if task_id is None:
        return tasks[int(rng.integers(len(tasks)))]
    if task_id not in by_id:
        raise ConfigError(f"unknown task_id {task_id!r}; this env has {len(tasks)} tasks")
    return by_id[task_id]


def as_command(action: Any) -> str:
    """An action as the command it runs (text as an observation shows it: `swe_gym.shown_text`)."""
    if isinstance(action, str):
        return action
    raise TypeError(
        f"an SWEEnv action is a bash command string (or, with tools=..., a tool call), got {type(action).__name__}"
    )


def masked_step(reason: str, max_chars: int, info: Mapping[str, Any] | None = None) -> StepResult:
    """The step that ends an episode the environment failed: truncated, reward 0.0, masked."""
    observation = to_observation(masked_note(reason), max_chars)
    return observation, 0.0, False, True, {**(info or {}), "masked": True, "masked_reason": reason}


@dataclasses.dataclass(frozen=True)
class Failure:
    """Why the episode at a key could not start: the environment's doing (``masked``), or the agent's (a fork
    of a sandbox it made unforkable), which ends the episode unresolved."""

    reason: str
    instance_id: str
    masked: bool = True

    def reset(self, max_chars: int, provider: str) -> Reset:
        info: dict[str, Any] = {"instance_id": self.instance_id, "provider": provider, "masked": self.masked}
        if self.masked:
            info["masked_reason"] = self.reason
            return to_observation(masked_note(self.reason), max_chars), info
        info["fork_failed"] = self.reason
        return to_observation(f"[swe_gym: this fork ends unresolved: {self.reason}]", max_chars), info

    def step(self, max_chars: int) -> StepResult:
        info = {"instance_id": self.instance_id}
        if self.masked:
            return masked_step(self.reason, max_chars, info)
        observation = to_observation(f"[swe_gym: episode over, unresolved: {self.reason}]", max_chars)
        return observation, 0.0, True, False, {**info, "resolved": False, "masked": False, "fork_failed": self.reason}


class EpisodeHost:
    """The tasks, settings, pool and live episodes of one front end (see the module for the failure rule)."""

    def __init__(self, config: HostConfig) -> None:
        self.config = config
        self.settings = host_settings(config)
        self.tasks = host_tasks(config)
        self.by_id = {task.instance_id: task for task in self.tasks}
        self.episodes: dict[Key, Episode] = {}
        self.failures: dict[Key, Failure] = {}  # why the episode at a key could not start
        self._closing: list[Future[None]] = []
        self._inflight: set[Future[Any]] = set()
        self.closed = False
        try:
            self.call(self._warm_up())
        except BaseException:  # e.g. Ctrl-C while the pool starts: what it started goes
            self.close()
            raise

    @classmethod
    def _branch(cls, source: EpisodeHost, key: Key, episode: Episode | Failure) -> EpisodeHost:
        """A host sharing ``source``'s config and tasks, without its pool, running ``episode`` at ``key`` (or
        holding the `Failure` its fork ended with)."""
        host = cls.__new__(cls)
        host.config, host.tasks, host.by_id = source.config, source.tasks, source.by_id
        if isinstance(episode, Failure):
            host.settings = dataclasses.replace(source.settings, pool=None)
            host.episodes, host.failures = {}, {key: episode}
        else:
            host.settings = episode.settings
            host.episodes, host.failures = {key: episode}, {}
        host._closing, host._inflight, host.closed = [], set(), False
        return host

    # -- the sync side: every front end's calls go through here ----------------------------------

    def call(self, coro: Coroutine[Any, Any, T]) -> T:
        """Run ``coro`` on swe_gym's loop and wait; `close` (from any thread) cancels it."""
        future = self._submit(coro)
        try:
            return future.result()
        except CancelledError:
            raise self._cancelled() from None
        except BaseException:
            future.cancel()
            raise
        finally:
            self._inflight.discard(future)

    async def call_async(self, coro: Coroutine[Any, Any, T]) -> T:
        """`call` for a caller on another event loop (a Ray asyncio actor's): it waits without blocking it."""
        future = self._submit(coro)
        try:
            return await asyncio.wrap_future(future)
        except asyncio.CancelledError:
            if not self.closed:  # our caller was cancelled: so is the work
                future.cancel()
                raise
            raise self._cancelled() from None
        finally:
            self._inflight.discard(future)

    def _submit(self, coro: Coroutine[Any, Any, T]) -> Future[T]:
        if self.closed:
            coro.close()
            raise RuntimeError("this env is closed")
        if in_loop_thread():
            coro.close()
            raise RuntimeError("swe_gym's sync API was called from its own event loop; use the async API there")
        future = asyncio.run_coroutine_threadsafe(coro, background_loop())
        self._inflight.add(future)
        return future

    def _cancelled(self) -> BaseException:
        """What a caller sees of its call cancelled: closing, if that was why."""
        return RuntimeError("this env was closed while the call ran") if self.closed else CancelledError()

    def close(self) -> None:
        """Cancel the calls in flight, then remove every episode's sandboxes and the pool; idempotent."""
        if self.closed:
            return
        self.closed = True
        for future in list(self._inflight):
            future.cancel()
        episodes, self.episodes = list(self.episodes.values()), {}
        shutdown = self._shutdown(episodes)
        if in_loop_thread():  # e.g. a __del__ run by the GC on the loop: never block it
            task = asyncio.ensure_future(shutdown)
            _DETACHED.add(task)
            task.add_done_callback(_DETACHED.discard)
            return
        run_sync(shutdown)
        for future in self._closing:
            try:
                future.result()
            except SandboxError as exc:
                log.warning("could not close a sandbox: %s", exc)
        self._closing.clear()

    async def _shutdown(self, episodes: list[Episode]) -> None:
        results = await asyncio.gather(*(to_the_end(e.close()) for e in episodes), return_exceptions=True)
        for result in results:
            if isinstance(result, Exception):
                log.warning("could not close a sandbox: %s", result)
        if self.settings.pool is not None:
            await self.settings.pool.close()

    # -- episodes ----------------------------------------------------------------------------------

    def pick(self, rng: np.random.Generator, task_id: str | None = None) -> SWETask:
        return pick_task(self.tasks, self.by_id, rng, task_id)

    def episode(self, key: Key) -> Episode | None:
        """The episode at ``key`` (None where none runs, or its start failed)."""
        return self.episodes.get(key)

    def live(self, key: Key) -> bool:
        episode = self.episodes.get(key)
        return episode is not None and not episode.done

    async def start(self, key: Key, task: SWETask) -> Reset:
        """A new episode of ``task`` at ``key``; the one there before is closed once the new one is up."""
        previous = self.episodes.pop(key, None)
        self.failures.pop(key, None)
        episode = self.episodes[key] = Episode(self.settings, task)
        try:
            return await self._started(key, episode, episode.start(), task.instance_id)
        finally:
            self.release(previous)

    async def fork(self, key: Key, source: Key) -> Reset:
        """The episode at ``key`` becomes a fork of the live one at ``source`` (its task, steps and files).

        A source whose own start failed this round masks the fork too; one that has no episode at all is
        the caller's mistake."""
        origin = self.episodes.get(source)
        previous = self.episodes.pop(key, None)
        self.failures.pop(key, None)
        try:
            if origin is not None and not origin.done:
                return await self._started(key, None, self._forked(key, origin), origin.task.instance_id)
            if source in self.failures:
                failure = self.failures[source]
                reason = f"its source {source!r} could not start: {failure.reason}"
                return self._failed(key, Failure(reason, failure.instance_id, failure.masked))
            raise ConfigError(f"cannot fork {source!r}: it has no live episode")
        finally:
            self.release(previous)

    async def _forked(self, key: Key, origin: Episode) -> Reset:
        forked = self.episodes[key] = await origin.fork()
        return forked.last_observation, forked.reset_info()

    async def _started(
        self, key: Key, episode: Episode | None, starting: Coroutine[Any, Any, Reset], instance_id: str
    ) -> Reset:
        """``starting``'s reset; the failure rule applied if it fails (the episode at ``key`` closed)."""
        try:
            return await starting
        except BaseException as exc:
            made = self.episodes.pop(key, None) or episode
            if made is not None:
                await to_the_end(made.close())
            if isinstance(exc, UnforkableSandboxError):
                return self._failed(key, Failure(str(exc), instance_id, masked=False))
            if isinstance(exc, SWEGymError) and not isinstance(exc, ConfigError):
                return self._failed(key, Failure(f"sandbox could not start for {instance_id}: {exc}", instance_id))
            raise

    def _failed(self, key: Key, failure: Failure) -> Reset:
        log.warning("episode %r %s: %s", key, "masked" if failure.masked else "ends unresolved", failure.reason)
        self.failures[key] = failure
        return failure.reset(self.config.max_observation_chars, self.settings.provider.name)

    async def act(self, key: Key, action: Any) -> StepResult:
        """One action of the episode at ``key``: a tool call or bash string with ``tools``, else a bash string."""
        episode = self.episodes.get(key)
        if episode is None:
            if key not in self.failures:
                raise RuntimeError("the episode is over (or never started): call reset() before step()")
            return self.failures.pop(key).step(self.config.max_observation_chars)
        if self.config.tools is not None:
            return await episode.act(action)
        return await episode.step(as_command(action))

    def act_here(self, key: Key, action: Any) -> StepResult:
        """`act`, called from the caller's thread (`call`'s): a bash command runs over its sandbox's channel right
        there (`Episode.step_here`; a bash tool call too, `Episode.act_here`), with no hop onto swe_gym's loop and
        back; only what must (grading a last step, a dead sandbox, an editor call, a channel that cannot block) goes
        through the loop."""
        episode = self.episodes.get(key)
        if episode is None or self.closed or in_loop_thread():
            return self.call(self.act(key, action))
        try:
            outcome = episode.step_here(as_command(action)) if self.config.tools is None else episode.act_here(action)
        except Exception:
            if self.closed:  # closed from another thread while the command ran (that is what ended it)
                raise self._cancelled() from None
            raise
        if outcome is None:
            return self.call(self.act(key, action))
        if not inspect.iscoroutine(outcome):
            return outcome
        if self.closed:
            outcome.close()
            raise self._cancelled()
        return self.call(outcome)

    async def fork_out(self, key: Key, n: int) -> list[EpisodeHost]:
        """``n`` hosts, each running a fork of the episode at ``key`` (at the same key), sharing this host's
        config and tasks but not its pool (the forks are made in it: `Episode.forks`); if one fork fails, none is
        kept and its error raised, except a fork the agent made impossible: then each host holds that `Failure`,
        so each branch ends unresolved."""
        episode = self.episodes.get(key)
        if episode is None or episode.done:
            raise RuntimeError("only a live episode can fork: call reset() (and do not end the episode) first")
        settings = dataclasses.replace(episode.settings, pool=None)  # the branches must not depend on our pool
        try:
            made = await episode.forks(n, settings)  # all or none
        except UnforkableSandboxError as exc:
            verdict = Failure(str(exc), episode.task.instance_id, masked=False)
            log.warning("fork of episode %r ends unresolved: %s", key, verdict.reason)
            return [EpisodeHost._branch(self, key, verdict) for _ in range(n)]
        return [EpisodeHost._branch(self, key, branch) for branch in made]

    async def end(self, key: Key) -> None:
        """Close the episode at ``key`` now (its sandboxes removed); nothing if none runs there."""
        self.failures.pop(key, None)
        episode = self.episodes.pop(key, None)
        if episode is not None:
            episode.done = True
            await to_the_end(episode.close())

    def release(self, episode: Episode | None) -> None:
        """Close ``episode`` in the background (off the caller's critical path); `close` waits for it."""
        self._closing = [f for f in self._closing if not f.done()]
        if episode is not None:
            self._closing.append(asyncio.run_coroutine_threadsafe(episode.close(), background_loop()))

    async def _warm_up(self) -> None:
        """Start the pool and build the tasks' repository archives now, not in the first resets."""
        settings = self.settings
        if settings.pool is None:
            return
        # Prepared images are other images: the pool holds what the tasks' resets will start from. Where a
        # sandbox of no image can become any (local: an image is a saved home copied in), one spec serves all.
        adopter = settings.pool.provider if isinstance(settings.pool.provider, ImageAdopter) else None
        specs: dict[str, SandboxSpec] = {}
        for task in self.tasks:
            if len(specs) == settings.pool.max_specs:
                break
            spec = await agent_spec(task, settings.spec, settings.provider, self.config.scrub_history)
            if adopter is not None and spec.image and adopter.holds(spec.image):
                spec = spec.model_copy(update={"image": None})
            specs.setdefault(spec_key(spec), spec)
        settings.pool.prefetch(specs.values())
        for task in self.tasks:
            if task.repo_source is not None:
                await offload(repo_archive, task)

    # -- durable episodes (swe_gym.envs.checkpoint) ------------------------------------------------------------

    async def checkpoint(
        self, key: Key, *, labels: Mapping[str, str] | None = None, ttl_s: float = DEFAULT_TTL_S
    ) -> EpisodeCheckpoint:
        """Save the live episode at ``key`` (it goes on); see `Episode.checkpoint`."""
        episode = self.episodes.get(key)
        if episode is None or episode.done:
            raise RuntimeError("only a live episode can be checkpointed: call reset() (and do not end it) first")
        return await episode.checkpoint(labels=labels, ttl_s=ttl_s)

    async def resume(self, key: Key, checkpoint: EpisodeCheckpoint) -> Reset:
        """The episode at ``key`` becomes the one ``checkpoint`` saved (`Episode.resumed`), its reset's info with
        ``resumed_from`` (the checkpoint's id) and ``step``. A checkpoint that is gone or expired raises
        (`CheckpointNotFoundError`: the caller's to replace); a restore the environment fails masks, as a reset."""
        previous = self.episodes.pop(key, None)
        self.failures.pop(key, None)
        try:
            return await self._started(key, None, self._resumed(key, checkpoint), checkpoint.task.instance_id)
        finally:
            self.release(previous)

    async def _resumed(self, key: Key, checkpoint: EpisodeCheckpoint) -> Reset:
        resumed = self.episodes[key] = await Episode.resumed(self.settings, checkpoint)
        info = resumed.reset_info()
        info.update(resumed_from=checkpoint.id, step=resumed.steps)
        return resumed.last_observation, info
