"""What a report shows: a `Run` of `EpisodeRecord` records, whatever file they were read from."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field

Kind = Literal["rollout", "evaluation", "certificate"]
#: rollout and evaluation outcomes, then a certificate's.
Status = Literal[
    "resolved", "unresolved", "empty_patch", "masked", "error", "skipped", "unfinished", "passed", "failed"
]
#: Outcomes that count towards a resolve (or pass) rate; masked, errors, skipped and unfinished ones do not.
GRADED: frozenset[str] = frozenset({"resolved", "unresolved", "empty_patch", "passed", "failed"})
SUCCESS: frozenset[str] = frozenset({"resolved", "passed"})


class Step(BaseModel):
    """One action and what it printed."""

    action: str
    observation: str = ""
    reward: float | None = None
    exit_code: int | None = None
    timed_out: bool | None = None
    output_truncated: bool | None = None
    duration_s: float | None = None


class EpisodeRecord(BaseModel):
    """One episode (rollout), one graded prediction (evaluation) or one validated task (certificate)."""

    number: int = Field(description="1-based position in the input; names the episode's page")
    instance_id: str
    repo: str = "unknown"
    family: str = "unknown"
    model: str | None = Field(default=None, description="evaluation: model_name_or_path")
    run_id: str | None = Field(default=None, description="the run that made it (its trajectory's or evaluation's)")
    policy: str | None = Field(default=None, description="rollout: the policy that acted, with its model")
    status: Status
    reason: str | None = Field(default=None, description="why it was not resolved, masked or skipped, in words")
    reward: float | None = None
    masked_reasons: list[str] = Field(default_factory=list, description="why it (or each masked run) was masked")
    prompt: str | None = Field(default=None, description="rollout: the reset observation")
    steps: list[Step] = Field(default_factory=list)
    patch: str | None = None
    verdict: str | None = Field(default=None, description="the grade report's summary line")
    report: dict | None = Field(default=None, description="the grade report, as recorded")
    eval_log: str | None = Field(default=None, description="evaluation: the eval log (its tail)")
    reset_s: float | None = None
    grade_s: float | None = None
    wall_s: float | None = None
    facts: dict[str, str] = Field(default_factory=dict, description="more name -> value lines for its page")
    runs: list[dict[str, str]] = Field(default_factory=list, description="certificate: one row per grading run")
    grade_times_s: list[float] = Field(default_factory=list, description="certificate: seconds per grading run")
    flaky: dict[str, str] = Field(default_factory=dict, description="certificate: test -> statuses per run")
    problems: list[str] = Field(default_factory=list, description="certificate: why it did not pass")

    @property
    def graded(self) -> bool:
        return self.status in GRADED

    @property
    def success(self) -> bool:
        return self.status in SUCCESS


class Run(BaseModel):
    """Everything one input holds."""

    kind: Kind
    source: Path
    title: str
    facts: dict[str, str] = Field(default_factory=dict, description="name -> value lines of the summary table")
    episodes: list[EpisodeRecord] = Field(default_factory=list)

    @property
    def success_word(self) -> str:
        """What success is called: ``resolve`` (``resolved``), or ``pass`` (``passed``) for a certificate."""
        return "pass" if self.kind == "certificate" else "resolve"

    @property
    def success_past(self) -> str:
        return "passed" if self.kind == "certificate" else "resolved"
