"""`SWETask`: one task record, whatever dataset it came from."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from swe_gym.sandbox.spec import Resources


class EvalRecipe(BaseModel):
    """How to run a task's tests: a test command, or a whole eval script, and whose code judges the log.

    ``toolkit="swebench"`` hands SWE-bench-format tasks to the official ``swebench``
    code (`swe_gym.grading.swebench_toolkit`): its eval script (derived from the repo's spec
    when the row carries none), its log parser (``log_parser`` names one, else the repo's),
    and its resolution rule. Either grading harness (``grade(harness=...)``) uses it.
    ``toolkit="harbor"`` is a Harbor task's verifier (`swe_gym.tasks.harbor`).
    """

    model_config = ConfigDict(extra="forbid")

    toolkit: Literal["swe_gym", "swebench", "harbor"] = Field(
        default="swe_gym",
        description="whose code builds the eval script, parses its log and decides the verdict (harbor: the "
        "task's tests/test.sh and the reward file it writes, `swe_gym.grading.harbor_verifier`)",
    )
    test_cmd: str | None = Field(default=None, description="run in the workdir between output markers")
    eval_script: str | None = Field(default=None, description="a complete script, run instead of test_cmd")
    log_parser: str | None = Field(default=None, description="parser name (swe_gym default: pytest)")
    timeout_s: float = Field(default=1800.0, gt=0)

    @model_validator(mode="after")
    def _needs_a_command(self) -> EvalRecipe:
        if self.toolkit == "swe_gym" and not (self.test_cmd or self.eval_script):
            raise ValueError("an eval recipe needs test_cmd or eval_script (or toolkit='swebench')")
        return self


class SWETask(BaseModel):
    """A repository at a base commit, an issue to solve, and the hidden tests that grade it.

    The gold patch (``patch``) is kept for oracle policies and ``--gold`` checks;
    the environment never shows it, or the test patch, to the agent.
    """

    model_config = ConfigDict(populate_by_name=True, extra="forbid", frozen=True)

    instance_id: str = Field(min_length=1)
    family: str = Field(default="custom", description="dataset family: swebench, swe-gym, swe-smith, r2e-gym, ...")
    repo: str = Field(min_length=1)
    problem_statement: str = Field(min_length=1)
    base_commit: str | None = None
    image: str | None = Field(default=None, description="sandbox image; None = the env's default image")
    workdir: str = "/testbed"
    resources: Resources | None = Field(default=None, description="the task's own limits (None: the env's)")
    repo_source: Path | None = Field(default=None, description="host directory copied in at reset")
    setup_script: str | None = Field(
        default=None,
        description="bash run in the workdir after provisioning, before the agent or the grader (e.g. "
        "checking out a task branch)",
    )
    eval: EvalRecipe
    hidden_paths: list[str] = Field(
        default_factory=list,
        description="removed from the agent's sandbox at reset (hidden tests, test runners); the grader's keeps them",
    )
    hide_history: Literal["future", "all"] = Field(
        default="future",
        description="git history kept from the agent: commits after the base (refs), or all of it (when the "
        "history itself holds the answer, e.g. a bug introduced on top of the fixed code)",
    )
    fail_to_pass: list[str] = Field(alias="FAIL_TO_PASS", default_factory=list)
    pass_to_pass: list[str] = Field(alias="PASS_TO_PASS", default_factory=list)
    test_patch: str = Field(default="", repr=False)
    patch: str = Field(default="", repr=False, description="the gold patch")
    metadata: dict[str, Any] = Field(default_factory=dict)

    @model_validator(mode="before")
    @classmethod
    def _gather(cls, data: Any) -> Any:
        """Accept flat rows (``test_cmd`` beside the other fields) and keep unknown fields in metadata."""
        if not isinstance(data, dict):
            return data
        data = dict(data)
        if "eval" not in data:
            recipe = {k: data.pop(k) for k in list(EvalRecipe.model_fields) if k in data}
            if recipe:
                data["eval"] = recipe
        known = set()
        for name, field in cls.model_fields.items():
            known.update({name, field.alias} - {None})
        extra = {k: data.pop(k) for k in list(data) if k not in known}
        if extra:
            data["metadata"] = {**extra, **dict(data.get("metadata") or {})}
        return data

    @field_validator("fail_to_pass", "pass_to_pass", mode="before")
    @classmethod
    def _json_list(cls, value: Any) -> Any:
        """SWE-bench rows store these lists as JSON strings."""
        return json.loads(value) if isinstance(value, str) else value
