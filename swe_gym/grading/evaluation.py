"""Grade a file of predictions against a dataset, as ``swebench.harness.run_evaluation`` does.

A prediction is one row ``{"instance_id", "model_name_or_path", "model_patch"}``.
`read_predictions` reads them from JSONL or JSON and reports bad rows instead of
stopping at them; `evaluate_async` (`evaluate`, its blocking form) grades every valid one concurrently (at most
``workers`` at a time), writes each instance's patch, report and eval log under
``run_dir/run_id/model/instance_id/``, and returns an `EvaluationReport` whose
JSON is swebench's run report (``make_run_report``) plus a ``swe_gym`` section.

Nothing a prediction holds stops the run: a bad row, an unknown instance, a
patch that is empty, huge, binary or no diff, a grading that raises — each
becomes that instance's verdict or error, with the reason.

Rows are read by `swe_gym.grading.predictions`; the report and its categories (swebench's, but a
masked grading is an *error*, never *completed*; and swe_gym's own *skipped* for uncertified instances)
are `swe_gym.grading.run_report`'s; this module runs the gradings.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from swe_gym.errors import ConfigError
from swe_gym.grading.certificate import Certificate, Uncertified, screen_tasks
from swe_gym.grading.eval_run import GRADING_GRACE_S, with_timeout
from swe_gym.grading.harness import Harness, grade_async
from swe_gym.grading.predictions import (
    MAX_PATCH_BYTES,
    Prediction,
    UnusablePrediction,
    gold_predictions,
    read_predictions,
    reject_patch,
)
from swe_gym.grading.report import GradeReport
from swe_gym.grading.run_report import (
    SCHEMA_VERSION,
    EvaluationReport,
    InstanceResult,
    Status,
    SWEGymSection,
    summarise,
    write_summary,
)
from swe_gym.sandbox import SandboxSpec
from swe_gym.sandbox.facade import ProviderLike
from swe_gym.sandbox.loop import blocking, offload
from swe_gym.sandbox.registry import get_provider
from swe_gym.tasks.model import SWETask

log = logging.getLogger(__name__)

ProgressCallback = Callable[[InstanceResult, int, int], None]


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
            async with asyncio.timeout(task.eval.timeout_s + GRADING_GRACE_S):
                report = await grade_async(task, patch, provider=provider, spec=spec, harness=harness)
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


async def evaluate_async(
    tasks: Sequence[SWETask],
    predictions: Sequence[Prediction],
    *,
    provider: ProviderLike = "local",
    spec: SandboxSpec | None = None,
    workers: int = 4,
    run_dir: str | Path = "runs/evaluation",
    run_id: str,
    invalid: Sequence[UnusablePrediction] = (),
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
    ``run_evaluation``'s rules (see `swe_gym.grading.official_harness`). Writes each instance's
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

    report = summarise(
        run.results,
        dataset_ids=list(by_id),
        submitted=submitted,
        section=SWEGymSection(
            run_id=run_id,
            model_name_or_path=model,
            invalid_predictions=list(invalid),
            unknown_instance_ids=unknown,
            duplicate_predictions={iid: rows for iid, rows in rows_of.items() if len(rows) > 1},
            repos={iid: by_id[iid].repo for iid in run.results if iid in by_id},
            families={iid: by_id[iid].family for iid in run.results if iid in by_id},
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
    await offload(write_summary, path, report)
    report.path = path
    return report


evaluate = blocking(evaluate_async)

__all__ = [
    "MAX_PATCH_BYTES",
    "SCHEMA_VERSION",
    "EvaluationReport",
    "InstanceResult",
    "Prediction",
    "ProgressCallback",
    "SWEGymSection",
    "Status",
    "UnusablePrediction",
    "evaluate",
    "evaluate_async",
    "gold_predictions",
    "read_predictions",
    "reject_patch",
]
