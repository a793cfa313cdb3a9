"""Episode bookkeeping of the NeMo RL env: which sample is which episode, and what the env remembers.

Episodes are keyed by their sample's metadata (NeMo RL's ``extra_env_info``); `EpisodeLedger.plan`
decides, before anything runs, what each entry of a batch is:

- an entry with ``instance_id`` and no ``episode_id`` starts a new episode on that task (the env
  returns its new ``episode_id`` in the metadata, which NeMo RL hands back on the next turn);
- an entry whose ``episode_id`` is live steps that episode;
- an entry with an ``episode_id`` the env never saw starts it under that id if its ``step`` is 0 or
  missing (callers that pick their own ids), else it is *unknown* (e.g. the env actor was restarted);
- an entry for an episode that already ended, an ``instance_id`` the env does not have, a repeated
  ``episode_id`` within one batch, or no usable metadata at all is rejected with a reason.

Each episode's first observation starts with its tag (`EPISODE_TAG`), which NeMo RL keeps in the
finished batch row even when it drops the metadata: `row_episode` reads it back.
"""

from __future__ import annotations

import re
import time
import uuid
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, NamedTuple

from swe_gym.tasks import SWETask

#: Starts an episode's first observation; `row_episode` reads it back from a finished batch row.
EPISODE_TAG = "[swe_gym episode {}]"
_EPISODE_TAG = re.compile(r"^\[swe_gym episode ([\w-]+)\]")


@dataclass
class LiveEpisode:
    """An episode the env is running: its task, id (its key in the env's host), starting metadata, turn counts."""

    task: SWETask
    episode_id: str
    base: dict[str, Any] = field(default_factory=dict)  # the metadata the episode started with
    turns: int = 0
    format_errors: int = 0
    last_used: float = field(default_factory=time.monotonic)

    def tagged(self, observation: str) -> str:
        """The episode's first observation starts with its tag: how a finished batch row finds its episode."""
        return f"{EPISODE_TAG.format(self.episode_id)}\n{observation}" if self.turns <= 1 else observation


@dataclass(frozen=True)
class EpisodeOutcome:
    """What the env remembers of an ended episode."""

    episode_id: str
    instance_id: str | None
    reward: float
    resolved: bool
    masked: bool
    masked_reason: str | None
    turns: int
    format_errors: int
    truncated: bool


class Turn(NamedTuple):
    """One sample's result of a turn, before the batch is assembled into an `EnvironmentReturn`.
    ``message``: the observation message's role and keys other than its content (a tool call's result:
    ``{"role": "tool", "tool_call_id": ...}``); None: the config's ``observation_role``."""

    observation: str
    reward: float
    terminated: bool
    metadata: dict[str, Any]
    answer: str | None
    message: dict[str, Any] | None = None


class Plan(NamedTuple):
    """What a batch entry is: ``step`` a live episode, ``start`` one, or ``reject`` the entry."""

    kind: Literal["step", "start", "reject"]
    live: LiveEpisode | None = None
    episode_id: str = ""
    task: SWETask | None = None
    meta: dict[str, Any] | None = None
    reason: str = ""


class EpisodeLedger:
    """The live episodes by id, the ended ones remembered (at most ``max_remembered``), and the plan of a batch."""

    def __init__(self, tasks: Sequence[SWETask], *, max_live: int, max_remembered: int) -> None:
        self.by_id = {task.instance_id: task for task in tasks}
        self.max_live = max_live
        self.max_remembered = max_remembered
        self.live: dict[str, LiveEpisode] = {}
        self.ended: OrderedDict[str, EpisodeOutcome] = OrderedDict()

    def plan(self, metadata: Sequence[Any]) -> list[Plan]:
        """A `Plan` per entry; ids are claimed so one batch cannot step one episode twice."""
        claimed: set[str] = set()
        starts = 0
        plans = []
        for entry in metadata:
            plan = self._plan(entry, claimed, starts)
            starts += plan.kind == "start"
            plans.append(plan)
        return plans

    def _plan(self, entry: Any, claimed: set[str], starts: int) -> Plan:
        if not isinstance(entry, Mapping):
            kind = type(entry).__name__
            return _reject(f"metadata must be a dict with an instance_id (NeMo RL extra_env_info), got {kind}", {})
        meta = dict(entry)
        episode_id = meta.get("episode_id")
        if episode_id is not None and not isinstance(episode_id, str):
            return _reject(f"episode_id must be a string, got {type(episode_id).__name__}", meta)
        if episode_id in claimed:
            return _reject(f"episode {episode_id} appears more than once in this batch", meta)
        if episode_id is not None:
            claimed.add(episode_id)
            if episode_id in self.live:
                return Plan("step", live=self.live[episode_id])
            if episode_id in self.ended:
                return _reject(f"episode {episode_id} already ended; NeMo RL sent it another turn", meta)
            if meta.get("step") not in (None, 0):
                return _reject(
                    f"unknown episode {episode_id} (at step {meta.get('step')}): this env never "
                    "started it, or has forgotten it (was the env actor restarted?)",
                    meta,
                )
        instance_id = meta.get("instance_id")
        if instance_id not in self.by_id:
            return _reject(f"unknown instance_id {instance_id!r}; this env has {len(self.by_id)} tasks", meta)
        if len(self.live) + starts >= self.max_live:
            return _reject(f"max_live_episodes={self.max_live} episodes are live: end some before starting more", meta)
        new_id = episode_id or uuid.uuid4().hex
        claimed.add(new_id)
        return Plan("start", episode_id=new_id, task=self.by_id[instance_id], meta=meta)

    def remember(self, outcome: EpisodeOutcome) -> None:
        """Record an ended episode (and forget the oldest beyond ``max_remembered``)."""
        self.live.pop(outcome.episode_id, None)
        self.ended[outcome.episode_id] = outcome
        while len(self.ended) > self.max_remembered:
            self.ended.popitem(last=False)

    def cut(self, episode_ids: Sequence[str]) -> list[LiveEpisode]:
        """End these live episodes as cut off (truncated, unmasked, reward 0); returns them, to be closed."""
        lives = [self.live[i] for i in dict.fromkeys(episode_ids) if i in self.live]
        for live in lives:
            instance_id, turns, errors = live.task.instance_id, live.turns, live.format_errors
            self.remember(EpisodeOutcome(live.episode_id, instance_id, 0.0, False, False, None, turns, errors, True))
        return lives

    def idle(self, idle_timeout_s: float) -> list[str]:
        """The live episodes not stepped for ``idle_timeout_s``."""
        cutoff = time.monotonic() - idle_timeout_s
        return [i for i, live in self.live.items() if live.last_used < cutoff]

    def task_mean(self, instance_id: str | None) -> float:
        """The mean reward of the task's unmasked ended episodes the ledger remembers, else 0."""
        return mean([o.reward for o in self.ended.values() if o.instance_id == instance_id and not o.masked])


def _reject(reason: str, meta: dict[str, Any]) -> Plan:
    return Plan("reject", meta=meta, reason=reason)


def row_episode(info: Any, message_log: Any) -> str | None:
    """The episode a finished batch row belongs to: the tag of its first environment message (which
    NeMo RL keeps even for a sample that ended, or was cut, on its first turn), else the ``episode_id``
    of its ``extra_env_info``. Never its history: GRPO's repeats share one."""
    for message in message_log if isinstance(message_log, Sequence) else ():
        content = message.get("content") if isinstance(message, Mapping) else None
        if isinstance(content, str) and message.get("role") != "assistant":  # the model cannot pose as one
            found = _EPISODE_TAG.match(content)
            if found:
                return found.group(1)
    episode_id = info.get("episode_id") if isinstance(info, Mapping) else None
    return episode_id if isinstance(episode_id, str) else None


def mean(values: Sequence[float | bool | int]) -> float:
    return float(sum(values)) / len(values) if values else 0.0
