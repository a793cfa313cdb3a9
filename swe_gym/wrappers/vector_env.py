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
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space

from swe_gym.envs.episode import Episode, StepResult, make_settings, pick_task, warm_up
from swe_gym.envs.options import EnvOptions
from swe_gym.envs.swe_env import MAX_ACTION_CHARS, _as_text
from swe_gym.envs.text import text_space, to_observation
from swe_gym.errors import ConfigError, SandboxError
from swe_gym.grading.certificate import env_tasks
from swe_gym.sandbox.facade import ProviderLike
from swe_gym.sandbox.loop import background_loop, run_sync
from swe_gym.tasks import SWETask, load_tasks
from swe_gym.tasks.loader import TaskSource

log = logging.getLogger(__name__)

Reset = tuple[str, dict[str, Any]]


class SWEVectorEnv(VectorEnv):
    """``num_envs`` SWE episodes stepped together; same options as `SWEEnv`, plus:

    Args:
        num_envs: number of sub-envs.
        autoreset_mode: ``NEXT_STEP`` (default), ``SAME_STEP`` or ``DISABLED`` (reset with
            ``reset(options={"reset_mask": mask})``). Resets here cost a sandbox: ``NEXT_STEP``
            keeps the finished sub-env's terminal observation visible for one step and starts the
            new episode on the next call; ``SAME_STEP`` starts it within the same call (the batch
            waits for it); ``DISABLED`` lets the trainer choose when to pay for it.
        pool_size: sandboxes kept ready for resets and gradings (default ``max(1, num_envs // 4)``; 0: off).

    ``reset(options=...)`` also takes ``task_ids`` (one id or None per sub-env).
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
        **options: Any,
    ) -> None:
        if num_envs < 1:
            raise ConfigError(f"num_envs must be >= 1, got {num_envs}")
        self.num_envs = num_envs
        self.autoreset_mode = AutoresetMode(autoreset_mode)
        self.metadata = {"autoreset_mode": self.autoreset_mode}
        if options.get("pool_size") is None:
            options["pool_size"] = max(1, num_envs // 4)
        parsed = EnvOptions.parse(options)
        self.settings = make_settings(provider, parsed)
        loaded = load_tasks(tasks, split=split, instance_ids=instance_ids, limit=limit)
        self.tasks: list[SWETask] = env_tasks(loaded, self.settings.certificate, parsed.uncertified)
        self._by_id = {task.instance_id: task for task in self.tasks}
        self.single_observation_space = text_space(parsed.max_observation_chars)
        self.single_action_space = text_space(MAX_ACTION_CHARS)
        self.observation_space = batch_space(self.single_observation_space, num_envs)
        self.action_space = batch_space(self.single_action_space, num_envs)
        self._episodes: list[Episode | None] = [None] * num_envs
        self._start_failures: list[str | None] = [None] * num_envs
        self._needs_reset = np.ones(num_envs, dtype=bool)
        self._observations: list[str] = [""] * num_envs
        self._rngs: list[np.random.Generator | None] = [None] * num_envs
        self._inflight: Future[Any] | None = None
        self._closing: list[Future[None]] = []
        self.closed = False
        run_sync(warm_up(self.settings, self.tasks))

    # -- Gymnasium vector API ------------------------------------------------------------

    def reset(
        self, *, seed: int | Sequence[int | None] | None = None, options: dict[str, Any] | None = None
    ) -> tuple[tuple[str, ...], dict[str, Any]]:
        options = dict(options or {})
        super().reset(seed=seed if isinstance(seed, int) else None)
        seeds = self._seeds(seed)
        mask = np.asarray(options.get("reset_mask", np.ones(self.num_envs, dtype=bool)), dtype=bool)
        if mask.shape != (self.num_envs,):
            raise ConfigError(f"reset_mask must have shape ({self.num_envs},), got {mask.shape}")
        task_ids = options.get("task_ids") or [options.get("task_id")] * self.num_envs
        if len(task_ids) != self.num_envs:
            raise ConfigError(f"task_ids needs one entry (or None) per sub-env: {self.num_envs}")
        for i in np.flatnonzero(mask):
            if seeds[i] is not None or self._rngs[i] is None:
                self._rngs[i], _ = seeding.np_random(seeds[i])
        indices = [int(i) for i in np.flatnonzero(mask)]
        results = self._run(self._start_all([(i, task_ids[i]) for i in indices]))
        infos: dict[str, Any] = {}
        for i, (observation, info) in zip(indices, results, strict=True):
            self._observations[i] = observation
            infos = self._add_info(infos, info, i)
        self._needs_reset[mask] = False
        return tuple(self._observations), infos

    def step(
        self, actions: Sequence[str]
    ) -> tuple[tuple[str, ...], np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        commands = check_actions(self, actions)
        restarting = self._needs_reset.copy() if self.autoreset_mode is AutoresetMode.NEXT_STEP else None
        outcomes = self._run(self._step_all(commands, restarting))
        rewards, terminations, truncations, infos = batch_outcomes(self, outcomes)
        self._needs_reset = terminations | truncations
        if self.autoreset_mode is AutoresetMode.SAME_STEP and self._needs_reset.any():
            ended = [int(i) for i in np.flatnonzero(self._needs_reset)]
            finals = {i: (self._observations[i], outcomes[i][4]) for i in ended}
            restarted = self._run(self._start_all([(i, None) for i in ended]))
            for i, (observation, info) in zip(ended, restarted, strict=True):
                infos = self._add_info(infos, {"final_obs": finals[i][0], "final_info": finals[i][1]}, i)
                infos = self._add_info(infos, info, i)
                self._observations[i] = observation
            self._needs_reset[:] = False
        return tuple(self._observations), rewards, terminations, truncations, infos

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

    def _seeds(self, seed: int | Sequence[int | None] | None) -> list[int | None]:
        if seed is None:
            return [None] * self.num_envs
        if isinstance(seed, int | np.integer):
            return [int(seed) + i for i in range(self.num_envs)]
        seeds = list(seed)
        if len(seeds) != self.num_envs:
            raise ConfigError(f"expected {self.num_envs} seeds, got {len(seeds)}")
        return seeds

    def _pick(self, i: int, task_id: str | None) -> SWETask:
        if self._rngs[i] is None:
            self._rngs[i], _ = seeding.np_random(None)
        return pick_task(self.tasks, self._by_id, self._rngs[i], task_id)

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

    async def _step_one(self, i: int, command: str, restart: bool) -> StepResult:
        if restart:
            observation, info = await self._start(i, None)
            return observation, 0.0, False, False, info
        episode = self._episodes[i]
        if episode is None:  # its sandbox never started: end the sub-episode, masked
            reason = self._start_failures[i] or "no episode"
            return self._observations[i], 0.0, False, True, {"masked": True, "masked_reason": reason}
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


def check_actions(env: Any, actions: Sequence[str]) -> list[str]:
    """The batch's actions as commands, after the checks every swe_gym vector env makes."""
    actions = list(actions)
    if len(actions) != env.num_envs:
        raise ConfigError(f"expected {env.num_envs} actions, got {len(actions)}")
    if env.autoreset_mode is AutoresetMode.DISABLED and env._needs_reset.any():
        ended = np.flatnonzero(env._needs_reset).tolist()
        raise RuntimeError(f"sub-envs {ended} have ended: reset them with reset(options={{'reset_mask': mask}})")
    return [_as_text(a) for a in actions]


def batch_outcomes(env: Any, outcomes: Sequence[Any]) -> tuple[np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
    """Per-sub-env step results as Gymnasium's batched rewards, flags and infos (observations kept on ``env``)."""
    rewards = np.zeros(env.num_envs, dtype=np.float64)
    terminations = np.zeros(env.num_envs, dtype=bool)
    truncations = np.zeros(env.num_envs, dtype=bool)
    infos: dict[str, Any] = {}
    for i, (observation, reward, terminated, truncated, info) in enumerate(outcomes):
        env._observations[i] = observation
        rewards[i], terminations[i], truncations[i] = reward, terminated, truncated
        infos = env._add_info(infos, info, i)
    return rewards, terminations, truncations, infos
