"""The numbers a report shows: rates per group, the values behind each distribution, percentiles."""

from __future__ import annotations

import re
import statistics
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from swe_gym.report.model import EpisodeRecord, Run

_LONG_HEX = re.compile(r"\b[0-9a-f]{12,}\b")


@dataclass(frozen=True)
class Group:
    """Episodes sharing a repository (or family): how many there were, were graded, and succeeded."""

    label: str
    total: int
    graded: int
    success: int
    masked: int

    @property
    def rate(self) -> float:
        return self.success / self.graded if self.graded else 0.0


def groups(episodes: Iterable[EpisodeRecord], key: Callable[[EpisodeRecord], str]) -> list[Group]:
    """One `Group` per key, the largest first (then by name). The rate's denominator is the graded
    episodes: masked, errored, skipped and unfinished ones are no verdict, so they are not a 0."""
    by: dict[str, list[EpisodeRecord]] = {}
    for episode in episodes:
        by.setdefault(key(episode), []).append(episode)
    found = [
        Group(
            label=label,
            total=len(members),
            graded=sum(e.graded for e in members),
            success=sum(e.success for e in members),
            masked=sum(e.status == "masked" for e in members),
        )
        for label, members in by.items()
    ]
    return sorted(found, key=lambda g: (-g.total, g.label))


def outcomes(episodes: Iterable[EpisodeRecord]) -> Counter[str]:
    return Counter(e.status for e in episodes)


def rewards(run: Run) -> list[float]:
    return [e.reward for e in run.episodes if e.reward is not None]


def episode_lengths(run: Run) -> list[int]:
    """Steps per rollout episode (other inputs hold no trajectories)."""
    return [len(e.steps) for e in run.episodes] if run.kind == "rollout" else []


def step_latencies(run: Run) -> list[float]:
    """Seconds per step that ran a command (``submit`` and a step into a dead sandbox record 0: none ran)."""
    return [s.duration_s for e in run.episodes for s in e.steps if s.duration_s]


def reset_times(run: Run) -> list[float]:
    return [e.reset_s for e in run.episodes if e.reset_s is not None]


def grade_times(run: Run) -> list[float]:
    """Seconds per grading: each run of a certificate, else each episode's."""
    times: list[float] = []
    for episode in run.episodes:
        if episode.grade_times_s:
            times.extend(episode.grade_times_s)
        elif episode.grade_s is not None and episode.status not in ("skipped", "unfinished"):
            times.append(episode.grade_s)
    return times


def masked_reasons(run: Run) -> Counter[str]:
    """Masked episodes (or runs) by reason: the first line, long hex ids (sandbox ids) blanked so alike ones group."""
    return Counter(normalise_reason(text) for e in run.episodes for text in e.masked_reasons)


def normalise_reason(text: str) -> str:
    line = text.strip().split("\n", 1)[0]
    line = re.sub(r"^(gold|empty) run \d+: ", "", line)
    return _LONG_HEX.sub("\u2026", line)[:200] or "no reason recorded"


def percentile(values: Sequence[float], q: float) -> float:
    """The ``q``-th percentile (0-100), linear between the closest ranks."""
    ordered = sorted(values)
    if not ordered:
        return 0.0
    position = (len(ordered) - 1) * q / 100
    low = int(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def mean(values: Sequence[float]) -> float:
    return statistics.fmean(values) if values else 0.0
