"""`Trajectory`: the one schema of a trajectory line, written by `TrajectoryRecorder` and parsed by every reader
(`read_trajectories`, the report's loader), so a field the writer adds is one the readers see.

Every field has a default: files written before a field existed still parse, and what they lack reads as
unknown (None). A line that is not a trajectory at all (not JSON, a prediction row, wrong types) is a
`ConfigError` naming the file, the line and the problem (`swe_gym.jsonl.read_records`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from swe_gym.jsonl import read_records
from swe_gym.policies.base import PolicyInfo
from swe_gym.policies.llm.tokens import TokenCall

#: What a line must hold at least one of to be a trajectory (a prediction row or a task row holds none).
CORE_KEYS = frozenset({"actions", "observations", "reward"})


class StepInfo(BaseModel):
    """The per-step info keys kept for each action."""

    model_config = ConfigDict(extra="ignore")

    exit_code: int | None = None
    timed_out: bool | None = None
    output_truncated: bool | None = None
    duration_s: float | None = None


class Trajectory(BaseModel):
    """One episode: who ran it, on what, every action and observation, and how it was graded."""

    model_config = ConfigDict(extra="ignore")

    run_id: str | None = Field(default=None, description="swe_gym.sandbox.labels.current_run_id() of the writer")
    policy: PolicyInfo | None = Field(default=None, description="the policy that acted (name; model for llm)")
    instance_id: str | None = None
    repo: str | None = None
    family: str | None = None
    provider: str | None = None
    seed: int | None = None
    actions: list[Any] = Field(default_factory=list, description="bash strings, or tool calls as JSON objects")
    observations: list[str] = Field(default_factory=list, description="the reset observation, then one per step")
    rewards: list[float | None] = Field(default_factory=list)
    step_infos: list[StepInfo | None] = Field(default_factory=list)
    terminated: bool | None = None
    truncated: bool | None = None
    reward: float | None = None
    resolved: bool | None = None
    masked: bool | None = None
    masked_reason: str | None = None
    patch: str | None = None
    patch_error: str | None = Field(default=None, description="why no patch could be read (graded as empty)")
    report: dict[str, Any] | None = Field(default=None, description="the grade report, as the env gave it")
    reset_s: float | None = None
    grade_s: float | None = None
    wall_s: float | None = None
    started_at: str | None = None
    unfinished: bool = Field(default=False, description="cut off before its end (reset or close)")
    policy_stats: dict[str, Any] | None = Field(
        default=None, description="what the recorder's policy_stats returned (LLMPolicy: calls, tokens, latencies)"
    )
    token_calls: list[TokenCall] | None = Field(
        default=None,
        description="each model call's exact token ids and logprobs (the recorder's policy_tokens; "
        "swe_gym.policies.llm.tokens.token_segments gives the model/environment mask)",
    )

    @model_validator(mode="before")
    @classmethod
    def _is_a_trajectory(cls, value: Any) -> Any:
        if isinstance(value, dict) and not CORE_KEYS & value.keys():
            raise ValueError(
                "expected a JSON object with actions, observations and reward, as swe-gym rollout --out writes"
            )
        return value


#: The terminal step's info keys a trajectory keeps (all but the per-step ones it already has).
TERMINAL_INFO_KEYS = (
    "resolved",
    "masked",
    "masked_reason",
    "patch",
    "patch_error",
    "report",
    "reset_s",
    "grade_s",
)


def read_trajectories(path: str | Path) -> list[Trajectory]:
    """Every trajectory in a ``.jsonl`` file (blank lines skipped); a bad line is a `ConfigError` naming it."""
    return [record for _, record in read_records(Path(path), Trajectory, what="a trajectory record")]
