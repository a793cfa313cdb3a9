"""`grade_async` and `grade`: one patch, one verdict, under the grading rules the caller chose (the harness).

``harness="safe"`` (the default) is ours, with the integrity checks (`swe_gym.grading.safe_harness`);
``harness="official"`` follows ``swebench``'s ``run_evaluation`` rule for rule (`swe_gym.grading.official_harness`).
Either way a ``toolkit="swebench"`` task's eval script, log parser and verdict are swebench's
(`swe_gym.grading.swebench_toolkit`).
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Literal

from swe_gym.errors import GradingError, TaskError
from swe_gym.grading import patch_scan
from swe_gym.grading.eval_run import masked_report, swebench_eval_script
from swe_gym.grading.protect import is_test_path
from swe_gym.grading.report import GradeReport
from swe_gym.grading.safe_harness import grade_safe, unresolved_report
from swe_gym.sandbox import AsyncSandbox, SandboxSpec
from swe_gym.sandbox.facade import ProviderLike
from swe_gym.sandbox.loop import blocking
from swe_gym.sandbox.pool import SandboxPool
from swe_gym.tasks.model import SWETask

log = logging.getLogger(__name__)

Harness = Literal["safe", "official"]
#: What a finding of the static reading of the patch does to a verdict (see `grade_async`).
Scan = Literal["flag", "report", "off"]


def _restored(path: str) -> bool:
    return is_test_path(path) or path.rpartition("/")[2] in {"conftest.py", "pytest.ini", ".pytest.ini"}


def judge_scan(report: GradeReport, task: SWETask, patch: str, mode: Scan) -> GradeReport:
    """The safe verdict with the static reading's findings: listed, and under ``"flag"`` the verdict unresolved
    as tampering with no reward in any mode (a masked one stays masked: the environment failed, whatever the
    patch did)."""
    if mode == "off" or not patch.strip():
        return report
    # Test files and pytest's configuration go back to base before the tests: what the patch writes there never
    # runs (an honest agent's own tests may monkeypatch builtins or read frames).
    findings = [f for f in patch_scan.scan_patch(patch, task.repo) if not _restored(f.path)]
    if not findings:
        return report
    update: dict[str, object] = {"scan_findings": [str(f) for f in findings]}
    if mode == "flag" and not report.masked:
        if not report.tampering:  # a check that already caught it keeps its reason
            reason = f"tampering detected: {patch_scan.describe(findings)}"
            log.warning("grading of %s: %s", task.instance_id, reason)
            update.update(tampering=True, unresolved_reason=reason)
        # No reward in any mode: the groups read as failed, the statuses stay for the record.
        failed = unresolved_report(task, time.perf_counter(), "", tampering=True)
        update.update(resolved=False, fail_to_pass=failed.fail_to_pass, pass_to_pass=failed.pass_to_pass)
    return report.model_copy(update=update)


async def grade_async(
    task: SWETask,
    patch: str,
    *,
    provider: ProviderLike = "local",
    spec: SandboxSpec | None = None,
    pool: SandboxPool | None = None,
    harness: Harness = "safe",
    sandbox: AsyncSandbox | None = None,
    twins: bool = True,
    scan: Scan = "flag",
    artifacts: bytes | None = None,
) -> GradeReport:
    """Grade ``patch`` (a git diff against the task's base) in a fresh sandbox (never used, if from ``pool``).

    ``harness="official"`` follows ``swebench``'s ``run_evaluation`` to the letter instead (its apply
    order, its log checks, none of our integrity checks: `swe_gym.grading.official_harness`), for numbers
    comparable with the leaderboard. ``sandbox``: a fresh one for this task, started ahead (e.g. while
    the agent acted); grade owns and closes it. ``twins=False`` runs one pass without twins
    (`swe_gym.grading.twin_pass`): cheaper, and open to a forger that picks its targets. ``scan``: what a finding
    of the static reading of the patch (`swe_gym.grading.patch_scan`) does to a verdict: ``"flag"`` makes a
    resolved one unresolved (tampering), ``"report"`` only lists it in ``report.scan_findings``, ``"off"`` skips
    the reading. ``artifacts``: a Harbor
    task's, from the agent's sandbox (`swe_gym.grading.harbor_verifier.collect_artifacts`). Never raises.
    """
    started = time.perf_counter()
    spec = spec or SandboxSpec()
    try:
        script = swebench_eval_script(task) if task.eval.toolkit == "swebench" else None
    except (TaskError, GradingError) as exc:
        if sandbox is not None:
            await sandbox.close()
        return masked_report(task, f"no eval script for this task: {exc}", started)
    if task.eval.toolkit == "harbor":  # the task's own verifier, whichever harness was asked for
        from swe_gym.grading.harbor_verifier import grade_harbor

        return await grade_harbor(task, patch, provider, spec, pool, sandbox, started, artifacts)
    if harness == "official":
        from swe_gym.grading.official_harness import grade_official

        return await grade_official(task, patch, script, provider, spec, pool, sandbox, started)
    try:
        report = await grade_safe(task, patch, script, provider, spec, pool, sandbox, started, twins)
        return judge_scan(report, task, patch, scan)
    except asyncio.CancelledError:
        raise
    except Exception as exc:  # a defect of ours, after every run has ended: never a crash, never a reward
        log.exception("grading of %s failed", task.instance_id)
        return unresolved_report(task, started, f"grading failed: {type(exc).__name__}: {exc}", tampering=False)


grade = blocking(grade_async)
