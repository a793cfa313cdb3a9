"""`TrajectoryRecorder`: one JSON line per episode, appended to a file.

Each line holds the episode's task (instance id, repo, family), actions, observations (the reset observation
first, then one per step, each capped), rewards, per-step infos and the terminal
grading info. An episode left unfinished (``close()`` or ``reset()`` before its
end, e.g. after Ctrl-C) is still written, with ``"unfinished": true``. With a
``policy_stats`` callback (e.g. `LLMPolicy.episode_stats`), what it returns when
the episode ends is stored under ``"policy"`` (model calls, tokens, latencies).
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

log = logging.getLogger(__name__)

STEP_INFO_KEYS = ("exit_code", "timed_out", "output_truncated", "duration_s")
TERMINAL_INFO_KEYS = ("resolved", "masked", "masked_reason", "patch", "report", "reset_s", "grade_s")


class TrajectoryRecorder(gym.Wrapper):
    """Appends one JSON line per finished episode to ``path``.

    Args:
        env: the environment (usually ``gym.make("swe_gym/SWE-v0", ...)``).
        path: the ``.jsonl`` file; parent directories are created.
        max_observation_chars: each recorded observation is cut to this many characters.
        policy_stats: called when an episode is written; its dict is the record's ``"policy"``
            (None without it). May also be set later as the ``policy_stats`` attribute.
    """

    def __init__(
        self,
        env: gym.Env,
        path: str | Path,
        *,
        max_observation_chars: int = 4000,
        policy_stats: Callable[[], dict[str, Any]] | None = None,
    ) -> None:
        super().__init__(env)
        self.path = Path(path)
        self.max_observation_chars = max_observation_chars
        self.policy_stats = policy_stats
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
            episode["step_infos"].append({key: info.get(key) for key in STEP_INFO_KEYS})
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
        record = episode | {key: None for key in TERMINAL_INFO_KEYS if key not in episode}
        record["wall_s"] = round(time.perf_counter() - self._started, 3)
        record["policy"] = self._policy_stats()
        if unfinished:
            record["unfinished"] = True
        line = json.dumps(record, default=str)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self.path.open("a", encoding="utf-8") as handle:
            handle.write(line + "\n")

    def _policy_stats(self) -> dict[str, Any] | None:
        if self.policy_stats is None:
            return None
        try:
            return dict(self.policy_stats())
        except Exception as exc:  # the trajectory matters more than the stats
            log.warning("policy_stats failed, recording the episode without them: %s", exc)
            return {"error": f"{type(exc).__name__}: {exc}"}


def read_trajectories(path: str | Path) -> list[dict[str, Any]]:
    """All records of a trajectory file written by `TrajectoryRecorder` (blank lines skipped)."""
    records = []
    with Path(path).open(encoding="utf-8") as handle:
        for number, line in enumerate(handle, 1):
            if not line.strip():
                continue
            try:
                records.append(json.loads(line))
            except json.JSONDecodeError as exc:
                raise ValueError(f"{path}:{number}: not a trajectory record ({exc.msg})") from None
    return records


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
