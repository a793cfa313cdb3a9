"""The run report of an evaluation: swebench's (``make_run_report``, same keys, same meaning) plus a
``swe_gym`` section, built from what became of each instance (`InstanceResult`).

Categories (swebench's, with one difference: a masked grading — the infrastructure failed — is an
*error*, never *completed*):

- ``resolved`` / ``unresolved``: graded (``completed``); an unresolved one has its
  reason (tests failing, patch did not apply, patch rejected before grading).
- ``empty_patch``: the patch is empty or blank; not graded.
- ``error``: the grading was masked or raised, or the instance's only row was invalid.
- ``incomplete``: in the dataset, but no prediction names it.
- ``skipped`` (swe_gym's own): not graded because it failed the fidelity certificate or is absent from it
  (``certificate=..., uncertified="skip"``); in no swebench list, but in ``swe_gym.uncertified`` with why.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field

from swe_gym.grading.predictions import UnusablePrediction
from swe_gym.grading.report import GradeReport

#: The version of swebench's run-report format the summary follows.
SCHEMA_VERSION = 2

Status = Literal["resolved", "unresolved", "empty_patch", "masked", "error", "skipped"]


class InstanceResult(BaseModel):
    """What became of one instance's prediction."""

    instance_id: str
    model_name_or_path: str
    status: Status
    reason: str | None = None
    duration_s: float = 0.0
    log_dir: str | None = None
    report: GradeReport | None = Field(default=None, exclude=True)


class SWEGymSection(BaseModel):
    """What swebench's report has no place for."""

    run_id: str
    model_name_or_path: str
    masked: dict[str, str] = Field(default_factory=dict, description="id -> why grading itself failed")
    errors: dict[str, str] = Field(default_factory=dict, description="id -> error (masked ones excluded)")
    unresolved_reasons: dict[str, str] = Field(default_factory=dict)
    invalid_predictions: list[UnusablePrediction] = Field(default_factory=list)
    unknown_instance_ids: list[str] = Field(default_factory=list, description="predicted, but not in the dataset")
    duplicate_predictions: dict[str, list[str]] = Field(
        default_factory=dict, description="id -> where its rows are; the last one is graded (as in swebench)"
    )
    durations_s: dict[str, float] = Field(default_factory=dict)
    repos: dict[str, str] = Field(default_factory=dict, description="id -> repository (for reports by repository)")
    families: dict[str, str] = Field(default_factory=dict, description="id -> dataset family")
    certificate: str | None = Field(default=None, description="the fidelity certificate the run was checked against")
    uncertified_mode: Literal["skip", "flag"] | None = Field(
        default=None, description="'skip': uncertified instances were not graded; 'flag': graded and listed"
    )
    uncertified: dict[str, str] = Field(
        default_factory=dict, description="id -> why the certificate does not certify it (failed, or absent)"
    )
    workers: int = 1
    harness: str = Field(default="safe", description="'safe' (swe_gym's grader) or 'official' (run_evaluation's rules)")
    wall_s: float = 0.0
    log_dir: str = ""


class EvaluationReport(BaseModel):
    """swebench's run report (same keys, same meaning) plus a ``swe_gym`` section.

    ``results`` (not serialised) holds every instance's `InstanceResult` with its `GradeReport`.
    """

    total_instances: int
    submitted_instances: int
    completed_instances: int
    resolved_instances: int
    unresolved_instances: int
    empty_patch_instances: int
    error_instances: int
    completed_ids: list[str]
    incomplete_ids: list[str]
    empty_patch_ids: list[str]
    submitted_ids: list[str]
    resolved_ids: list[str]
    unresolved_ids: list[str]
    error_ids: list[str]
    schema_version: int = SCHEMA_VERSION
    swe_gym: SWEGymSection
    results: dict[str, InstanceResult] = Field(default_factory=dict, exclude=True)
    path: Path | None = Field(default=None, exclude=True, description="where the summary was written")


def write_summary(path: Path, report: EvaluationReport) -> None:
    """Write ``report``'s JSON (swebench's run report and the ``swe_gym`` section) to ``path``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(report.model_dump(mode="json"), indent=4) + "\n")


def summarise(
    results: dict[str, InstanceResult], *, dataset_ids: list[str], submitted: set[str], section: SWEGymSection
) -> EvaluationReport:
    """The run report of ``results`` (instance id -> what became of it) over the dataset's ``dataset_ids``;
    fills ``section``'s per-instance maps (durations, masked, errors, unresolved reasons)."""

    def ids(*statuses: str) -> list[str]:
        return sorted(iid for iid, r in results.items() if r.status in statuses)

    for iid, result in sorted(results.items()):
        section.durations_s[iid] = round(result.duration_s, 3)
        if result.status == "masked":
            section.masked[iid] = result.reason or "masked"
        elif result.status == "error":
            section.errors[iid] = result.reason or "error"
        elif result.status == "unresolved" and result.reason:
            section.unresolved_reasons[iid] = result.reason
    completed, errors = ids("resolved", "unresolved"), ids("masked", "error")
    resolved, unresolved, empty = ids("resolved"), ids("unresolved"), ids("empty_patch")
    return EvaluationReport(
        total_instances=len(dataset_ids),
        submitted_instances=len(submitted),
        completed_instances=len(completed),
        resolved_instances=len(resolved),
        unresolved_instances=len(unresolved),
        empty_patch_instances=len(empty),
        error_instances=len(errors),
        completed_ids=completed,
        incomplete_ids=sorted(iid for iid in dataset_ids if iid not in results),
        empty_patch_ids=empty,
        submitted_ids=sorted(submitted),
        resolved_ids=resolved,
        unresolved_ids=unresolved,
        error_ids=errors,
        swe_gym=section,
        results=results,
    )
