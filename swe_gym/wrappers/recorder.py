"""`TrajectoryRecorder`: one JSON line per episode, appended to a file, each a `Trajectory`.

Each line says who made it (the run id, the policy and its model), the episode's task (instance id, repo,
family), actions, observations (the reset observation first, then one per step, each capped), rewards,
per-step infos and the terminal grading info (`swe_gym.wrappers.trajectory` is the schema). An episode left
unfinished (``close()`` or ``reset()`` before its end, e.g. after Ctrl-C) is still written, with
``"unfinished": true``. With a ``policy_stats`` callback (e.g. `LLMPolicy.episode_stats`), what it returns
when the episode ends is stored under ``"policy_stats"`` (model calls, tokens, latencies); with a
``policy_tokens`` callback (`LLMPolicy.episode_tokens`), each model call's exact token ids under ``"token_calls"``.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import gymnasium as gym

from swe_gym.policies.base import PolicyInfo, policy_info
from swe_gym.policies.llm.tokens import TokenCall
from swe_gym.sandbox.labels import current_run_id
from swe_gym.wrappers.trajectory import TERMINAL_INFO_KEYS, StepInfo, Trajectory

log = logging.getLogger(__name__)


class TrajectoryRecorder(gym.Wrapper):
    """Appends one JSON line per finished episode to ``path``.

    Args:
        env: the environment (usually ``gym.make("swe_gym/SWE-v0", ...)``).
        path: the ``.jsonl`` file; parent directories are created.
        max_observation_chars: each recorded observation is cut to this many characters.
        policy: the policy that acts (its ``identity``: name, and model for `LLMPolicy`), or its `PolicyInfo`;
            recorded as the record's ``"policy"``. May also be set later as the ``policy`` attribute.
        policy_stats: called when an episode is written; its dict is the record's ``"policy_stats"``
            (None without it). May also be set later as the ``policy_stats`` attribute.
        policy_tokens: called when an episode is written; its `TokenCall` list is the record's ``"token_calls"``
            (None without it, or when it is empty). May also be set later as the ``policy_tokens`` attribute.
    """

    def __init__(
        self,
        env: gym.Env,
        path: str | Path,
        *,
        max_observation_chars: int = 4000,
        policy: object | None = None,
        policy_stats: Callable[[], dict[str, Any]] | None = None,
        policy_tokens: Callable[[], list[TokenCall]] | None = None,
    ) -> None:
        super().__init__(env)
        self.path = Path(path)
        self.max_observation_chars = max_observation_chars
        self.policy = policy
        self.policy_stats = policy_stats
        self.policy_tokens = policy_tokens
        self._episode: dict[str, Any] | None = None
        self._started = 0.0

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[Any, dict[str, Any]]:
        if self._episode is not None:
            self._write(unfinished=True)
        started = time.perf_counter()
        observation, info = self.env.reset(seed=seed, options=options)
        self._started = started
        task = getattr(self.env.unwrapped, "task", None)
        self._episode = {
            "run_id": current_run_id(),
            "instance_id": info.get("instance_id"),
            "repo": getattr(task, "repo", None),
            "family": getattr(task, "family", None),
            "provider": info.get("provider"),
            "seed": seed,
            "actions": [],
            "observations": [self._cap(observation)],
            "rewards": [],
            "step_infos": [],
            "terminated": False,
            "truncated": False,
            "reward": 0.0,
            "reset_s": info.get("reset_s"),
            "started_at": datetime.now(UTC).isoformat(timespec="seconds"),
        }
        return observation, info

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        observation, reward, terminated, truncated, info = self.env.step(action)
        episode = self._episode
        if episode is not None:
            episode["actions"].append(_recorded(action))
            episode["observations"].append(self._cap(observation))
            episode["rewards"].append(float(reward))
            episode["step_infos"].append(StepInfo.model_validate(info))
            if terminated or truncated:
                episode.update(terminated=bool(terminated), truncated=bool(truncated), reward=float(reward))
                episode.update({key: info.get(key) for key in TERMINAL_INFO_KEYS if key in info})
                self._write(unfinished=False)
        return observation, reward, terminated, truncated, info

    def close(self) -> None:
        try:
            if self._episode is not None:
                self._write(unfinished=True)
        finally:
            super().close()

    def _cap(self, observation: Any) -> str:
        text = observation if isinstance(observation, str) else repr(observation)
        return text[: self.max_observation_chars]

    def _write(self, *, unfinished: bool) -> None:
        episode, self._episode = self._episode, None
        if episode is None:
            return
        record = Trajectory(
            **episode,
            wall_s=round(time.perf_counter() - self._started, 3),
            policy=self._policy_info(),
            policy_stats=self._policy_stats(),
            token_calls=(self.policy_tokens() or None) if self.policy_tokens is not None else None,
            unfinished=unfinished,
        )
        line = json.dumps(record.model_dump(mode="json"), default=str)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self.path.open("a", encoding="utf-8") as handle:
            handle.write(line + "\n")

    def _policy_info(self) -> PolicyInfo | None:
        if self.policy is None:
            return None
        return self.policy if isinstance(self.policy, PolicyInfo) else policy_info(self.policy)

    def _policy_stats(self) -> dict[str, Any] | None:
        if self.policy_stats is None:
            return None
        try:
            return dict(self.policy_stats())
        except Exception as exc:  # the trajectory matters more than the stats
            log.warning("policy_stats failed, recording the episode without them: %s", exc)
            return {"error": f"{type(exc).__name__}: {exc}"}


def _recorded(action: Any) -> Any:
    """An action as JSON holds it: text as is, a tool call (dict, or an SDK object) as its JSON object."""
    if isinstance(action, str):
        return action
    if isinstance(action, bytes):
        return action.decode("utf-8", "surrogateescape")
    dump = getattr(action, "model_dump", None)
    value = dump(mode="json") if callable(dump) else action
    try:
        json.dumps(value)
    except (TypeError, ValueError):
        return repr(action)
    return value
