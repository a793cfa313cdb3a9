"""Grade a file of predictions against a dataset, as ``swebench.harness.run_evaluation`` does.

A prediction is one row ``{"instance_id", "model_name_or_path", "model_patch"}``.
`read_predictions` reads them from JSONL or JSON and reports bad rows instead of
stopping at them; `evaluate` grades every valid one concurrently (at most
``workers`` at a time), writes each instance's patch, report and eval log under
``run_dir/run_id/model/instance_id/``, and returns an `EvaluationReport` whose
JSON is swebench's run report (``make_run_report``) plus a ``swe_gym`` section.

Nothing a prediction holds stops the run: a bad row, an unknown instance, a
patch that is empty, huge, binary or no diff, a grading that raises — each
becomes that instance's verdict or error, with the reason.

Categories (swebench's, with one difference: a masked grading — the
infrastructure failed — is an *error*, never *completed*):

- ``resolved`` / ``unresolved``: graded (``completed``); an unresolved one has its
  reason (tests failing, patch did not apply, patch rejected before grading).
- ``empty_patch``: the patch is empty or blank; not graded.
- ``error``: the grading was masked or raised, or the instance's only row was invalid.
- ``incomplete``: in the dataset, but no prediction names it.
- ``skipped`` (swe_gym's own): not graded because it failed the fidelity certificate or is absent from it
  (``certificate=..., uncertified="skip"``); in no swebench list, but in ``swe_gym.uncertified`` with why.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictStr, ValidationError

from swe_gym.errors import ConfigError, validation_problems
from swe_gym.grading.certificate import Certificate, Uncertified, screen_tasks
from swe_gym.grading.eval_run import GRADING_GRACE_S, with_timeout
from swe_gym.grading.harness import Harness, grade
from swe_gym.grading.report import GradeReport
from swe_gym.jsonl import BadLine, json_document, json_lines
from swe_gym.sandbox import SandboxSpec
from swe_gym.sandbox.facade import ProviderLike
from swe_gym.sandbox.loop import offload
from swe_gym.sandbox.registry import get_provider
from swe_gym.tasks.model import SWETask

log = logging.getLogger(__name__)

#: Patches larger than this are rejected unread (real fixes are kilobytes; a 10 MB "patch" is output gone wrong).
MAX_PATCH_BYTES = 5 << 20
#: The version of swebench's run-report format the summary follows.
SCHEMA_VERSION = 2

Status = Literal["resolved", "unresolved", "empty_patch", "masked", "error", "skipped"]

_DIFF_GIT = re.compile(r"^diff --git ", re.MULTILINE)
_OLD_NEW = (re.compile(r"^--- ", re.MULTILINE), re.compile(r"^\+\+\+ ", re.MULTILINE))


class Prediction(BaseModel):
    """One row of a predictions file (swebench's fields; others, such as ``full_output``, are ignored).

    ``model_patch`` may be ``null``, which swebench counts as an empty patch.
    """

    model_config = ConfigDict(extra="ignore", frozen=True)

    instance_id: StrictStr = Field(min_length=1)
    model_name_or_path: StrictStr = Field(min_length=1)
    model_patch: StrictStr | None
    where: str = Field(default="", exclude=True, description="file and line or index it came from")


class PredictionError(BaseModel):
    """A row that is no valid prediction, where it is, and why."""

    where: str
    instance_id: str | None = None
    error: str


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
    invalid_predictions: list[PredictionError] = Field(default_factory=list)
    unknown_instance_ids: list[str] = Field(default_factory=list, description="predicted, but not in the dataset")
    duplicate_predictions: dict[str, list[str]] = Field(
        default_factory=dict, description="id -> where its rows are; the last one is graded (as in swebench)"
    )
    durations_s: dict[str, float] = Field(default_factory=dict)
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


ProgressCallback = Callable[[InstanceResult, int, int], None]


# -- reading predictions -------------------------------------------------------------------------


def _row_id(row: Any) -> str | None:
    value = row.get("instance_id") if isinstance(row, Mapping) else None
    return value if isinstance(value, str) and value else None


def _validate(row: Any, where: str) -> Prediction | PredictionError:
    if not isinstance(row, Mapping):
        return PredictionError(where=where, error=f"a prediction must be a JSON object, got {type(row).__name__}")
    try:
        return Prediction.model_validate({**row, "where": where})
    except ValidationError as exc:
        text = validation_problems(exc, whole="row").lower()
        return PredictionError(where=where, instance_id=_row_id(row), error=f"invalid prediction ({text})")


def _json_rows(path: Path) -> list[tuple[Any, str]]:
    parsed = json_document(path)
    if isinstance(parsed, BadLine):
        raise ConfigError(f"predictions file {path} is {parsed.reason}; use a list of predictions")
    if isinstance(parsed, dict) and "instance_id" in parsed:
        return [(parsed, f"{path}")]
    if isinstance(parsed, dict):  # keyed by instance_id, as swebench accepts
        return [
            ({"instance_id": key, **row} if isinstance(row, dict) else row, f"{path}[{key!r}]")
            for key, row in parsed.items()
        ]
    if isinstance(parsed, list):
        return [(row, f"{path}[{i}]") for i, row in enumerate(parsed)]
    raise ConfigError(f"predictions file {path} holds a {type(parsed).__name__}; expected a list or an object")


def read_predictions(path: str | Path) -> tuple[list[Prediction], list[PredictionError]]:
    """Predictions from a ``.jsonl`` file (one per line) or a ``.json`` file (a list, or an object keyed
    by instance id); every bad row or line becomes a `PredictionError` naming where it is, and reading
    goes on. Raises `ConfigError` only when the file itself cannot be read as predictions.
    """
    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"predictions file {path} does not exist")
    if path.suffix not in (".json", ".jsonl"):
        raise ConfigError(f"predictions file {path} must be .json or .jsonl")
    predictions: list[Prediction] = []
    errors: list[PredictionError] = []
    if path.suffix == ".json":
        rows = _json_rows(path)
    else:
        rows = []
        for number, value in json_lines(path):
            if isinstance(value, BadLine):
                errors.append(PredictionError(where=f"{path}:{number}", error=value.reason))
            else:
                rows.append((value, f"{path}:{number}"))
    for row, where in rows:
        item = _validate(row, where)
        (predictions if isinstance(item, Prediction) else errors).append(item)  # type: ignore[arg-type]
    if errors:
        log.warning(
            "%d invalid prediction rows in %s (first: %s: %s)", len(errors), path, errors[0].where, errors[0].error
        )
    return predictions, errors


def gold_predictions(tasks: Iterable[SWETask]) -> list[Prediction]:
    """The tasks' own gold patches as predictions of the model ``gold`` (a check of the images and tasks)."""
    return [
        Prediction(instance_id=t.instance_id, model_name_or_path="gold", model_patch=t.patch, where="gold")
        for t in tasks
    ]


def reject_patch(patch: str, max_bytes: int = MAX_PATCH_BYTES) -> str | None:
    """Why ``patch`` cannot be graded as a diff at all (None if it can): too big, binary, or no diff."""
    try:
        size = len(patch.encode("utf-8", "surrogateescape"))
    except UnicodeEncodeError:
        return "patch rejected: it holds characters no file can (lone UTF-16 surrogates)"
    if size > max_bytes:
        return f"patch rejected: {size / 1e6:.1f} MB is over the limit of {max_bytes / 1e6:.1f} MB"
    if "\x00" in patch:
        return "patch rejected: it holds NUL bytes (raw binary data; binary files need git's 'GIT binary patch' form)"
    if not _DIFF_GIT.search(patch) and not all(p.search(patch) for p in _OLD_NEW):
        return "patch rejected: not a unified diff (no 'diff --git' or '---'/'+++' file headers)"
    return None


# -- evaluating ----------------------------------------------------------------------------------


def _safe_name(name: str) -> str:
    name = name.replace("/", "__").replace("\\", "__").replace("\x00", "")
    return name if name not in ("", ".", "..") else f"_{name}"


def _write_outputs(directory: Path, patch: str | None, report: GradeReport | None, log_text: str) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    if patch is not None:
        (directory / "patch.diff").write_bytes(patch.encode("utf-8", "surrogateescape"))
    if report is not None:
        (directory / "report.json").write_text(report.model_dump_json(indent=2) + "\n")
    (directory / "eval.log").write_bytes(log_text.encode("utf-8", "replace"))


class _Run:
    """One evaluation's state: where its outputs go and how far it got."""

    def __init__(self, log_dir: Path, total: int, on_result: ProgressCallback | None) -> None:
        self.log_dir = log_dir
        self.total = total
        self.on_result = on_result
        self.results: dict[str, InstanceResult] = {}

    def finish(self, result: InstanceResult) -> InstanceResult:
        self.results[result.instance_id] = result
        log.info("%s: %s%s", result.instance_id, result.status, f" ({result.reason})" if result.reason else "")
        if self.on_result is not None:
            try:
                self.on_result(result, len(self.results), self.total)
            except Exception:  # a broken progress display must not cost the evaluation
                log.exception("the on_result callback failed")
        return result

    def instance_dir(self, model: str, instance_id: str) -> Path:
        return self.log_dir / _safe_name(model) / _safe_name(instance_id)

    async def record(
        self,
        prediction: Prediction | None,
        instance_id: str,
        model: str,
        status: Status,
        reason: str | None,
        started: float,
        report: GradeReport | None = None,
    ) -> InstanceResult:
        directory = self.instance_dir(model, instance_id)
        log_text = (report.eval_log or report.log_tail) if report is not None else ""
        log_text = log_text or (f"{status}: {reason}\n" if reason else "")
        patch = prediction.model_patch if prediction is not None else None
        try:
            await offload(_write_outputs, directory, patch, report, log_text)
        except OSError as exc:
            log.error("could not write the outputs of %s to %s: %s", instance_id, directory, exc)
            status, reason = "error", f"{reason + '; ' if reason else ''}could not write outputs: {exc}"
        return self.finish(
            InstanceResult(
                instance_id=instance_id,
                model_name_or_path=model,
                status=status,
                reason=reason,
                duration_s=time.perf_counter() - started,
                log_dir=str(directory),
                report=report,
            )
        )


async def _grade_one(
    run: _Run,
    task: SWETask,
    prediction: Prediction,
    gate: asyncio.Semaphore,
    provider: ProviderLike,
    spec: SandboxSpec,
    max_patch_bytes: int,
    harness: Harness = "safe",
) -> InstanceResult:
    patch = prediction.model_patch or ""
    model = prediction.model_name_or_path
    async with gate:
        started = time.perf_counter()
        rejected = reject_patch(patch, max_patch_bytes)
        if rejected is not None:
            report = GradeReport(instance_id=task.instance_id, log_tail=rejected)
            return await run.record(prediction, task.instance_id, model, "unresolved", rejected, started, report)
        try:
            report = await asyncio.wait_for(
                grade(task, patch, provider=provider, spec=spec, harness=harness),
                timeout=task.eval.timeout_s + GRADING_GRACE_S,
            )
        except TimeoutError:
            reason = f"grading did not finish within {task.eval.timeout_s + GRADING_GRACE_S:.0f}s"
            return await run.record(prediction, task.instance_id, model, "error", reason, started)
        except Exception as exc:
            reason = f"grading failed: {type(exc).__name__}: {exc}"
            log.warning("%s: %s", task.instance_id, reason)
            log.debug("grading %s raised", task.instance_id, exc_info=True)
            return await run.record(prediction, task.instance_id, model, "error", reason, started)
        if report.masked:
            return await run.record(
                prediction, task.instance_id, model, "masked", report.masked_reason, started, report
            )
        if report.resolved:
            return await run.record(prediction, task.instance_id, model, "resolved", None, started, report)
        return await run.record(prediction, task.instance_id, model, "unresolved", report.summary(), started, report)


async def evaluate(
    tasks: Sequence[SWETask],
    predictions: Sequence[Prediction],
    *,
    provider: ProviderLike = "local",
    spec: SandboxSpec | None = None,
    workers: int = 4,
    run_dir: str | Path = "runs/evaluation",
    run_id: str,
    invalid: Sequence[PredictionError] = (),
    on_result: ProgressCallback | None = None,
    timeout_s: float | None = None,
    max_patch_bytes: int = MAX_PATCH_BYTES,
    harness: Harness = "safe",
    certificate: Certificate | None = None,
    uncertified: Uncertified = "flag",
) -> EvaluationReport:
    """Grade ``predictions`` against ``tasks``, at most ``workers`` at a time; never stops at a bad one.

    With a fidelity ``certificate`` (`swe_gym.grading.certificate`), instances it does not certify (they
    failed it, or it does not name them) are listed with why in ``swe_gym.uncertified``; ``uncertified="skip"``
    does not grade them (status ``skipped``), ``"flag"`` grades them as usual.

    ``invalid`` are the bad rows `read_predictions` found: an instance whose only rows are
    invalid is an error. ``on_result(result, done, total)`` is called as each instance
    finishes. ``timeout_s`` overrides every task's eval timeout. ``harness="official"`` grades by
    ``run_evaluation``'s rules (see `swe_gym.grading.official_mode`). Writes each instance's
    ``patch.diff``, ``report.json`` and ``eval.log`` under ``run_dir/run_id/<model>/<instance_id>/``
    and the summary to ``run_dir/run_id/<model>.<run_id>.json``; returns it.
    """
    if workers < 1:
        raise ConfigError(f"workers must be >= 1, got {workers}")
    if not run_id or _safe_name(run_id) != run_id:
        raise ConfigError(f"run id {run_id!r} must be a plain name (no '/', not '.' or '..')")
    started = time.perf_counter()
    provider = get_provider(provider)  # one instance for every grading (shared creation limits)
    spec = spec or SandboxSpec()
    spec = spec.model_copy(update={"labels": {**spec.labels, "evaluation": run_id}})
    by_id = {t.instance_id: t for t in tasks}

    chosen: dict[str, Prediction] = {}
    rows_of: dict[str, list[str]] = {}
    unknown: list[str] = []
    for prediction in predictions:
        iid = prediction.instance_id
        rows_of.setdefault(iid, []).append(prediction.where)
        if iid not in by_id:
            if iid not in unknown:
                unknown.append(iid)
            continue
        chosen[iid] = prediction  # the last one wins, as in swebench's dict of predictions
    if unknown:
        log.warning("%d predictions name instances not in the dataset: %s", len(unknown), ", ".join(unknown[:10]))
    invalid_only = {e.instance_id: e for e in invalid if e.instance_id in by_id and e.instance_id not in chosen}
    submitted = set(rows_of) | {e.instance_id for e in invalid if e.instance_id}

    model = next(iter(chosen.values())).model_name_or_path if chosen else "unknown"
    log_dir = Path(run_dir) / run_id
    todo = [iid for iid in by_id if iid in chosen or iid in invalid_only]
    reasons: dict[str, str] = {}
    if certificate is not None:
        _, reasons = screen_tasks([by_id[iid] for iid in todo], certificate, uncertified)
    run = _Run(log_dir, len(todo), on_result)
    gate = asyncio.Semaphore(workers)
    # A task group, not gather: when cancelled (Ctrl-C) it returns only after every grading has closed its sandbox.
    async with asyncio.TaskGroup() as group:
        for iid in todo:
            if uncertified == "skip" and iid in reasons:
                skipped = chosen.get(iid)
                who = skipped.model_name_or_path if skipped is not None else model
                await run.record(skipped, iid, who, "skipped", reasons[iid], time.perf_counter())
            elif iid in invalid_only:
                error = invalid_only[iid]
                await run.record(None, iid, model, "error", f"{error.where}: {error.error}", time.perf_counter())
            elif not (chosen[iid].model_patch or "").strip():
                empty = chosen[iid]
                await run.record(empty, iid, empty.model_name_or_path, "empty_patch", None, time.perf_counter())
            else:
                task = with_timeout(by_id[iid], timeout_s)
                group.create_task(_grade_one(run, task, chosen[iid], gate, provider, spec, max_patch_bytes, harness))

    report = _summarise(
        run,
        dataset_ids=list(by_id),
        submitted=submitted,
        section=SWEGymSection(
            run_id=run_id,
            model_name_or_path=model,
            invalid_predictions=list(invalid),
            unknown_instance_ids=unknown,
            duplicate_predictions={iid: rows for iid, rows in rows_of.items() if len(rows) > 1},
            certificate=None if certificate is None else str(certificate.path or certificate.dataset),
            uncertified_mode=None if certificate is None else uncertified,
            uncertified=dict(sorted(reasons.items())),
            workers=workers,
            harness=harness,
            wall_s=round(time.perf_counter() - started, 3),
            log_dir=str(log_dir),
        ),
    )
    path = log_dir / f"{_safe_name(model)}.{run_id}.json"
    await offload(_write_summary, path, report)
    report.path = path
    return report


def _write_summary(path: Path, report: EvaluationReport) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(report.model_dump(mode="json"), indent=4) + "\n")


def _summarise(run: _Run, *, dataset_ids: list[str], submitted: set[str], section: SWEGymSection) -> EvaluationReport:
    results = run.results

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
