"""`SWEVectorEnv`: N SWE episodes at once, every sandbox operation concurrent.

All N sub-envs are episodes of one `EpisodeHost`, keyed by their index, on swe_gym's one event loop:
resets (sandbox creation, bounded per provider and retried), steps and gradings of a batch run
concurrently, so a batch costs about its slowest member rather than the sum. Gymnasium's
`SyncVectorEnv` would run them one after another, and `AsyncVectorEnv` pays a process and a pipe per
sub-env for work that only waits on I/O.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Iterable, Sequence
from typing import Any

import numpy as np
from gymnasium.utils import seeding
from gymnasium.vector import AutoresetMode

from swe_gym.envs.episode import Reset, StepResult
from swe_gym.envs.host import EpisodeHost, host_config
from swe_gym.sandbox.facade import ProviderLike
from swe_gym.tasks.loader import TaskSource
from swe_gym.vector.batched import BatchedSWEEnv, ResetRequest


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

    A sub-env whose sandbox cannot start (or be forked) is masked, the others go on: the failure rule
    of `swe_gym.envs.host`.
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
        config = host_config(tasks, provider, instance_ids, split, limit, options)
        self.host = EpisodeHost(config)
        try:
            super().__init__(num_envs, config, self.host.tasks, autoreset_mode=autoreset_mode, render_mode=render_mode)
        except BaseException:  # e.g. num_envs=0: the pool the host started goes
            self.host.close()
            raise
        self._rngs: list[np.random.Generator | None] = [None] * num_envs

    # -- Gymnasium vector API ------------------------------------------------------------

    def reset(
        self, *, seed: int | Sequence[int | None] | None = None, options: dict[str, Any] | None = None
    ) -> tuple[tuple[str, ...], dict[str, Any]]:
        request = ResetRequest(self, seed, dict(options or {}))
        super().reset(seed=seed if isinstance(seed, int) else None)
        for i in request.indices:
            if request.seeds[i] is not None or self._rngs[i] is None:
                self._rngs[i], _ = seeding.np_random(request.seeds[i])
        results = self._all(self._start(i, request.task_ids[i]) for i in request.fresh)
        infos = self.record_resets({}, zip(request.fresh, results, strict=True))
        if request.forks:  # after the resets: a source may be one of them
            forked = self._all(self.host.fork(i, source) for i, source in request.forks)
            infos = self.record_resets(infos, zip([i for i, _ in request.forks], forked, strict=True))
        return tuple(self.observations), infos

    def step(
        self, actions: Sequence[Any]
    ) -> tuple[tuple[str, ...], np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        commands = self.commands(actions)
        restarting = self.needs_reset.copy() if self.autoreset_mode is AutoresetMode.NEXT_STEP else None
        outcomes = self._all(
            self._restart(i) if restarting is not None and restarting[i] else self.host.act(i, command)
            for i, command in enumerate(commands)
        )
        rewards, terminations, truncations, infos = self.batch(outcomes)
        self.needs_reset = terminations | truncations
        if self.autoreset_mode is AutoresetMode.SAME_STEP and self.needs_reset.any():
            ended = [int(i) for i in np.flatnonzero(self.needs_reset)]
            restarted = self._all(self._start(i, None) for i in ended)
            for i in ended:
                infos = self._add_info(infos, {"final_obs": outcomes[i][0], "final_info": outcomes[i][4]}, i)
            infos = self.record_resets(infos, zip(ended, restarted, strict=True))
        return tuple(self.observations), rewards, terminations, truncations, infos

    def close_extras(self, **kwargs: Any) -> None:
        """Stop the running batch (if another thread is in it), then remove every sandbox."""
        self.host.close()

    def can_fork(self, i: int) -> bool:
        return super().can_fork(i) and self.host.live(i)

    # -- internals -------------------------------------------------------------------------

    def _all(self, calls: Iterable[Awaitable[Any]]) -> list[Any]:
        """Run the sub-envs' calls concurrently, in one wait."""

        async def gathered() -> list[Any]:
            return list(await asyncio.gather(*calls))

        return self.host.call(gathered())

    def _start(self, i: int, task_id: str | None) -> Awaitable[Reset]:
        if self._rngs[i] is None:
            self._rngs[i], _ = seeding.np_random(None)
        return self.host.start(i, self.host.pick(self._rngs[i], task_id))

    async def _restart(self, i: int) -> StepResult:
        observation, info = await self._start(i, None)
        return observation, 0.0, False, False, info
