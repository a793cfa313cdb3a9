"""`SWEVectorEnv`: N SWE episodes at once, every sandbox operation concurrent.

All N sub-envs live on swe_gym's one event loop: resets (sandbox creation,
bounded per provider and retried), steps and gradings of a batch run
concurrently, so a batch costs about its slowest member rather than the sum.
Gymnasium's `SyncVectorEnv` would run them one after another, and
`AsyncVectorEnv` pays a process and a pipe per sub-env for work that only waits
on I/O.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Coroutine, Iterable, Sequence
from concurrent.futures import Future
from typing import Any

import numpy as np
from gymnasium.utils import seeding
from gymnasium.vector import AutoresetMode

from swe_gym.envs.episode import Episode, StepResult, make_settings, pick_task, warm_up
from swe_gym.envs.options import EnvOptions
from swe_gym.envs.text import to_observation
from swe_gym.errors import SandboxError
from swe_gym.sandbox.facade import ProviderLike
from swe_gym.sandbox.loop import background_loop, run_sync
from swe_gym.tasks import SWETask
from swe_gym.tasks.loader import TaskSource
from swe_gym.vector.batched import BatchedSWEEnv, ResetRequest

log = logging.getLogger(__name__)

Reset = tuple[str, dict[str, Any]]


class SWEVectorEnv(BatchedSWEEnv):
    """``num_envs`` SWE episodes stepped together; same options as `SWEEnv`, plus:

    Args:
        num_envs: number of sub-envs.
        autoreset_mode: ``NEXT_STEP`` (default), ``SAME_STEP`` or ``DISABLED`` (reset with
            ``reset(options={"reset_mask": mask})``). Resets here cost a sandbox: ``NEXT_STEP``
            keeps the finished sub-env's terminal observation visible for one step and starts the
            new episode on the next call; ``SAME_STEP`` starts it within the same call (the batch
            waits for it); ``DISABLED`` lets the trainer choose when to pay for it.
        pool_size: sandboxes kept ready for resets and gradings (default ``max(1, num_envs // 4)``; 0: off).

    ``reset(options=...)`` also takes ``task_ids`` (one id or None per sub-env) and ``fork_from``
    (one entry per sub-env: None, or the index of a sub-env whose live episode sub-env ``i`` of
    ``reset_mask`` continues as a fork of: same task, steps and observation, a copy of its sandbox's
    file system; see `SWEEnv.fork`). ``reset(options={"reset_mask": [0, 1, 1, 1], "fork_from":
    [None, 0, 0, 0]})`` branches sub-env 0 into 1-3, e.g. for a GRPO group that shares a prefix;
    with ``reset_mask`` all ones the same call first resets sub-env 0, then forks it.
    """

    def __init__(
        self,
        num_envs: int = 1,
        tasks: TaskSource = "bundled",
        provider: ProviderLike = "local",
        *,
        autoreset_mode: AutoresetMode | str = AutoresetMode.NEXT_STEP,
        instance_ids: Iterable[str] | None = None,
        split: str = "test",
        limit: int | slice | None = None,
        render_mode: str | None = None,
        **options: Any,
    ) -> None:
        if options.get("pool_size") is None:
            options["pool_size"] = max(1, num_envs // 4)
        parsed = EnvOptions.parse(options)
        super().__init__(
            num_envs,
            tasks,
            parsed,
            autoreset_mode=autoreset_mode,
            instance_ids=instance_ids,
            split=split,
            limit=limit,
            render_mode=render_mode,
        )
        self.settings = make_settings(provider, parsed)
        self._episodes: list[Episode | None] = [None] * num_envs
        self._start_failures: list[str | None] = [None] * num_envs
        self._rngs: list[np.random.Generator | None] = [None] * num_envs
        self._inflight: Future[Any] | None = None
        self._closing: list[Future[None]] = []
        run_sync(warm_up(self.settings, self.tasks))

    # -- Gymnasium vector API ------------------------------------------------------------

    def reset(
        self, *, seed: int | Sequence[int | None] | None = None, options: dict[str, Any] | None = None
    ) -> tuple[tuple[str, ...], dict[str, Any]]:
        request = ResetRequest(self, seed, dict(options or {}))
        super().reset(seed=seed if isinstance(seed, int) else None)
        for i in request.indices:
            if request.seeds[i] is not None or self._rngs[i] is None:
                self._rngs[i], _ = seeding.np_random(request.seeds[i])
        results = self._run(self._start_all([(i, request.task_ids[i]) for i in request.fresh]))
        infos = self.record_resets({}, zip(request.fresh, results, strict=True))
        if request.forks:  # after the resets: a source may be one of them
            forked = self._run(self._fork_all(request.forks))
            infos = self.record_resets(infos, zip([i for i, _ in request.forks], forked, strict=True))
        return tuple(self.observations), infos

    def step(
        self, actions: Sequence[str]
    ) -> tuple[tuple[str, ...], np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        commands = self.commands(actions)
        restarting = self.needs_reset.copy() if self.autoreset_mode is AutoresetMode.NEXT_STEP else None
        outcomes = self._run(self._step_all(commands, restarting))
        rewards, terminations, truncations, infos = self.batch(outcomes)
        self.needs_reset = terminations | truncations
        if self.autoreset_mode is AutoresetMode.SAME_STEP and self.needs_reset.any():
            ended = [int(i) for i in np.flatnonzero(self.needs_reset)]
            finals = {i: (self.observations[i], outcomes[i][4]) for i in ended}
            restarted = self._run(self._start_all([(i, None) for i in ended]))
            for i in ended:
                infos = self._add_info(infos, {"final_obs": finals[i][0], "final_info": finals[i][1]}, i)
            infos = self.record_resets(infos, zip(ended, restarted, strict=True))
        return tuple(self.observations), rewards, terminations, truncations, infos

    def close_extras(self, **kwargs: Any) -> None:
        """Stop the running batch (if another thread is in it), then remove every sandbox."""
        inflight = self._inflight
        if inflight is not None and not inflight.done():
            inflight.cancel()
        episodes, self._episodes = self._episodes, [None] * self.num_envs
        run_sync(self._close_all(episodes))
        _wait_all(self._closing)
        if self.settings.pool is not None:
            run_sync(self.settings.pool.close())

    def can_fork(self, i: int) -> bool:
        episode = self._episodes[i]
        return super().can_fork(i) and episode is not None and not episode.done

    # -- internals -------------------------------------------------------------------------

    def _run(self, coro: Coroutine[Any, Any, Any]) -> Any:
        if self.closed:
            coro.close()
            raise RuntimeError("this vector env is closed")
        self._inflight = asyncio.run_coroutine_threadsafe(coro, background_loop())
        try:
            return self._inflight.result()
        except BaseException:
            self._inflight.cancel()
            raise

    def _pick(self, i: int, task_id: str | None) -> SWETask:
        if self._rngs[i] is None:
            self._rngs[i], _ = seeding.np_random(None)
        return pick_task(self.tasks, self.tasks_by_id, self._rngs[i], task_id)

    async def _start(self, i: int, task_id: str | None) -> Reset:
        """Start sub-env ``i``'s next episode; a sandbox that cannot start masks it instead of failing all."""
        task = self._pick(i, task_id)
        previous, episode = self._episodes[i], Episode(self.settings, task)
        self._episodes[i], self._start_failures[i] = episode, None
        try:
            return await episode.start()
        except SandboxError as exc:
            await episode.close()
            self._episodes[i] = None
            reason = f"sandbox could not start for {task.instance_id}: {exc}"
            self._start_failures[i] = reason
            log.warning("sub-env %d: %s", i, reason)
            observation = to_observation(f"[swe_gym: {reason}]", self.settings.max_observation_chars)
            return observation, {"instance_id": task.instance_id, "masked": True, "masked_reason": reason}
        finally:
            if previous is not None:  # torn down after the new one is up, off the critical path
                self._closing = [f for f in self._closing if not f.done()]
                self._closing.append(asyncio.run_coroutine_threadsafe(previous.close(), background_loop()))

    async def _start_all(self, starts: list[tuple[int, str | None]]) -> list[Reset]:
        return list(await asyncio.gather(*(self._start(i, task_id) for i, task_id in starts)))

    async def _fork(self, i: int, source: int) -> Reset:
        """Sub-env ``i`` continues as a fork of sub-env ``source``'s episode; a failed fork masks it."""
        episode = self._episodes[source]
        previous, self._episodes[i], self._start_failures[i] = self._episodes[i], None, None
        try:
            if episode is None or episode.done:  # a source reset in this call whose sandbox could not start
                raise SandboxError(self._start_failures[source] or f"sub-env {source} has no live episode")
            forked = await episode.fork()
            self._episodes[i] = forked
            return forked.last_observation, forked.reset_info()
        except SandboxError as exc:
            reason = f"sub-env {source} could not be forked: {exc}"
            self._start_failures[i] = reason
            log.warning("sub-env %d: %s", i, reason)
            observation = to_observation(f"[swe_gym: {reason}]", self.settings.max_observation_chars)
            instance = episode.task.instance_id if episode is not None else ""
            return observation, {"instance_id": instance, "masked": True, "masked_reason": reason}
        finally:
            if previous is not None:  # torn down off the critical path, as in `_start`
                self._closing = [f for f in self._closing if not f.done()]
                self._closing.append(asyncio.run_coroutine_threadsafe(previous.close(), background_loop()))

    async def _fork_all(self, forks: list[tuple[int, int]]) -> list[Reset]:
        return list(await asyncio.gather(*(self._fork(i, source) for i, source in forks)))

    async def _step_one(self, i: int, command: str, restart: bool) -> StepResult:
        if restart:
            observation, info = await self._start(i, None)
            return observation, 0.0, False, False, info
        episode = self._episodes[i]
        if episode is None:  # its sandbox never started: end the sub-episode, masked
            reason = self._start_failures[i] or "no episode"
            return self.observations[i], 0.0, False, True, {"masked": True, "masked_reason": reason}
        if self.settings.tools is not None:  # a tool call, or a plain bash string
            return await episode.act(command)
        return await episode.step(command)

    async def _step_all(self, commands: list[str], restarting: np.ndarray | None) -> list[StepResult]:
        return list(
            await asyncio.gather(
                *(
                    self._step_one(i, command, bool(restarting is not None and restarting[i]))
                    for i, command in enumerate(commands)
                )
            )
        )

    @staticmethod
    async def _close_all(episodes: list[Episode | None]) -> None:
        await asyncio.gather(*(e.close() for e in episodes if e is not None), return_exceptions=True)


def _wait_all(futures: list[Future[None]]) -> None:
    """Wait for background closes; one that failed is logged, not raised (close must finish)."""
    for future in futures:
        try:
            future.result()
        except SandboxError as exc:
            log.warning("could not close a sandbox: %s", exc)
    futures.clear()
