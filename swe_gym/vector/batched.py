"""`BatchedSWEEnv`: what every swe_gym vector env shares, whoever runs its sub-envs.

`SWEVectorEnv` runs its episodes on swe_gym's event loop, `RayVectorEnv` in Ray actors; both
are Gymnasium ``VectorEnv``s with the same tasks, spaces, autoreset modes, reset options
(``reset_mask``, ``task_ids``, ``fork_from``, per-sub-env seeds), action checks, batched outcomes and
``render_mode="ansi"``. They are written here once; the subclasses only start and step.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, ClassVar

import numpy as np
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space

from swe_gym.envs.host import as_command, pick_task
from swe_gym.envs.options import HostConfig
from swe_gym.envs.spaces import env_spaces
from swe_gym.errors import ConfigError
from swe_gym.tasks import SWETask

Outcome = tuple[str, float, bool, bool, dict[str, Any]]


class ResetRequest:
    """A checked ``reset(seed=..., options=...)``: which sub-envs, with which seed and task, or forked from which.

    ``fork_from``: one entry per sub-env, None or the index of the sub-env whose live episode sub-env ``i``
    (in ``reset_mask``) becomes a fork of. A source is a sub-env whose episode runs and which this call does
    not reset, or one this call resets afresh (resets run first, then forks); never itself a fork of this
    call. A fork takes its source's task (``task_id`` applies to the fresh resets only).
    """

    def __init__(self, env: BatchedSWEEnv, seed: int | Sequence[int | None] | None, options: dict[str, Any]) -> None:
        n = env.num_envs
        if seed is None:
            self.seeds: list[int | None] = [None] * n
        elif isinstance(seed, int | np.integer):
            self.seeds = [int(seed) + i for i in range(n)]  # sub-env i gets seed + i
        else:
            self.seeds = list(seed)
            if len(self.seeds) != n:
                raise ConfigError(f"expected {n} seeds, got {len(self.seeds)}")
        self.mask = np.asarray(options.pop("reset_mask", np.ones(n, dtype=bool)), dtype=bool)
        if self.mask.shape != (n,):
            raise ConfigError(f"reset_mask must have shape ({n},), got {self.mask.shape}")
        explicit_tasks = options.get("task_ids") is not None
        self.task_ids: list[str | None] = list(options.pop("task_ids", None) or [options.pop("task_id", None)] * n)
        if len(self.task_ids) != n:
            raise ConfigError(f"task_ids needs one entry (or None) per sub-env: {n}")
        self.fork_from = self._fork_from(env, options.pop("fork_from", None), explicit_tasks=explicit_tasks)
        for i, source in enumerate(self.fork_from):
            if source is not None:
                self.task_ids[i] = None
        for task_id in self.task_ids:  # an unknown id fails here, before any sub-env has reset
            if task_id is not None:
                pick_task(env.tasks, env.tasks_by_id, env.np_random, task_id)
        self.options = options

    def _fork_from(self, env: BatchedSWEEnv, value: Any, *, explicit_tasks: bool) -> list[int | None]:
        n = env.num_envs
        if value is None:
            return [None] * n
        if isinstance(value, str | bytes) or not isinstance(value, Sequence | np.ndarray):
            raise ConfigError(f"fork_from must be a list of {n} entries (None or a sub-env index), got {value!r}")
        entries = list(value)
        if len(entries) != n:
            raise ConfigError(f"fork_from needs one entry per sub-env: {n}; got {len(entries)}")
        sources: list[int | None] = []
        for i, entry in enumerate(entries):
            if entry is None:
                sources.append(None)
                continue
            if isinstance(entry, bool) or not isinstance(entry, int | np.integer) or not 0 <= int(entry) < n:
                raise ConfigError(f"fork_from[{i}] must be None or a sub-env index in 0..{n - 1}, got {entry!r}")
            if not self.mask[i]:
                raise ConfigError(f"fork_from[{i}] is {entry}, but sub-env {i} is not in reset_mask")
            if int(entry) == i:
                raise ConfigError(f"fork_from[{i}]: sub-env {i} cannot be forked from itself")
            if explicit_tasks and self.task_ids[i] is not None:
                raise ConfigError(f"both task_ids[{i}] and fork_from[{i}]; a fork has its source's task")
            sources.append(int(entry))
        for i, source in enumerate(sources):
            if source is None:
                continue
            if sources[source] is not None:
                raise ConfigError(
                    f"fork_from[{i}] is {source}, which this call forks too; fork from a sub-env with its own episode"
                )
            if not self.mask[source] and not env.can_fork(source):
                raise ConfigError(
                    f"fork_from[{i}] is {source}, which has no live episode (it ended or never started); fork from "
                    "a running sub-env, or reset the source in the same call (resets run before forks)"
                )
        return sources

    @property
    def indices(self) -> list[int]:
        return [int(i) for i in np.flatnonzero(self.mask)]

    @property
    def fresh(self) -> list[int]:
        """The sub-envs this call resets with a new episode (the others in the mask are forks)."""
        return [i for i in self.indices if self.fork_from[i] is None]

    @property
    def forks(self) -> list[tuple[int, int]]:
        """(sub-env, source) for each sub-env this call forks."""
        return [(i, source) for i, source in enumerate(self.fork_from) if source is not None]


class BatchedSWEEnv(VectorEnv):
    """The batch state (observations, which sub-envs must reset) and the checks of every swe_gym vector env."""

    metadata: ClassVar[dict[str, Any]] = {"render_modes": ["ansi"], "autoreset_mode": AutoresetMode.NEXT_STEP}

    def __init__(
        self,
        num_envs: int,
        config: HostConfig,
        tasks: list[SWETask],
        *,
        autoreset_mode: AutoresetMode | str,
        render_mode: str | None,
    ) -> None:
        if num_envs < 1:
            raise ConfigError(f"num_envs must be >= 1, got {num_envs}")
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ConfigError(f"render_mode must be one of {self.metadata['render_modes']}, got {render_mode!r}")
        self.num_envs = num_envs
        self.render_mode = render_mode
        self.autoreset_mode = AutoresetMode(autoreset_mode)
        self.metadata = {**self.metadata, "autoreset_mode": self.autoreset_mode}
        self.config = config
        self.tasks = tasks
        self.tasks_by_id = {task.instance_id: task for task in tasks}
        self.single_observation_space, self.single_action_space = env_spaces(config.max_observation_chars, config.tools)
        self.observation_space = batch_space(self.single_observation_space, num_envs)
        self.action_space = batch_space(self.single_action_space, num_envs)
        self.needs_reset = np.ones(num_envs, dtype=bool)
        self.observations: list[str] = [""] * num_envs
        self.closed = False

    def can_fork(self, i: int) -> bool:
        """Whether sub-env ``i``'s episode is running (a `ResetRequest` can fork from it without resetting it)."""
        return not self.needs_reset[i]

    def render(self) -> tuple[str, ...] | None:
        """``"ansi"``: every sub-env's last observation."""
        return tuple(self.observations) if self.render_mode == "ansi" else None

    def commands(self, actions: Sequence[Any]) -> list[Any]:
        """The batch's actions as commands, after the checks every swe_gym vector env makes."""
        actions = list(actions)
        if len(actions) != self.num_envs:
            raise ConfigError(f"expected {self.num_envs} actions, got {len(actions)}")
        if self.autoreset_mode is AutoresetMode.DISABLED and self.needs_reset.any():
            ended = np.flatnonzero(self.needs_reset).tolist()
            raise RuntimeError(f"sub-envs {ended} have ended: reset them with reset(options={{'reset_mask': mask}})")
        if self.config.tools is not None:  # tool calls go to the episode as they are (it answers bad ones)
            return actions
        return [as_command(a) for a in actions]

    def batch(self, outcomes: Sequence[Outcome]) -> tuple[np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        """Per-sub-env step results as Gymnasium's batched rewards, flags and infos (observations kept)."""
        rewards = np.zeros(self.num_envs, dtype=np.float64)
        terminations = np.zeros(self.num_envs, dtype=bool)
        truncations = np.zeros(self.num_envs, dtype=bool)
        infos: dict[str, Any] = {}
        for i, (observation, reward, terminated, truncated, info) in enumerate(outcomes):
            self.observations[i] = observation
            rewards[i], terminations[i], truncations[i] = reward, terminated, truncated
            infos = self._add_info(infos, info, i)
        return rewards, terminations, truncations, infos

    def record_resets(
        self, infos: dict[str, Any], resets: Iterable[tuple[int, tuple[str, dict[str, Any]]]]
    ) -> dict[str, Any]:
        """Store each reset sub-env's first observation and add its info to ``infos``."""
        for i, (observation, info) in resets:
            self.observations[i] = observation
            self.needs_reset[i] = False
            infos = self._add_info(infos, info, i)
        return infos
