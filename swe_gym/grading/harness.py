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
from swe_gym.grading.eval_run import masked_report, swebench_eval_script
from swe_gym.grading.report import GradeReport
from swe_gym.grading.safe_harness import grade_safe, unresolved_report
from swe_gym.sandbox import AsyncSandbox, SandboxSpec
from swe_gym.sandbox.facade import ProviderLike
from swe_gym.sandbox.loop import blocking
from swe_gym.sandbox.pool import SandboxPool
from swe_gym.tasks.model import SWETask

log = logging.getLogger(__name__)

Harness = Literal["safe", "official"]


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
    artifacts: bytes | None = None,
) -> GradeReport:
    """Grade ``patch`` (a git diff against the task's base) in a fresh sandbox (never used, if from ``pool``).

    ``harness="official"`` follows ``swebench``'s ``run_evaluation`` to the letter instead (its apply
    order, its log checks, none of our integrity checks: `swe_gym.grading.official_harness`), for numbers
    comparable with the leaderboard. ``sandbox``: a fresh one for this task, started ahead (e.g. while
    the agent acted); grade owns and closes it. ``twins=False`` runs one pass without twins
    (`swe_gym.grading.twin_pass`): cheaper, and open to a forger that picks its targets. ``artifacts``: a Harbor
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
        return await grade_safe(task, patch, script, provider, spec, pool, sandbox, started, twins)
    except asyncio.CancelledError:
        raise
    except Exception as exc:  # a defect of ours, after every run has ended: never a crash, never a reward
        log.exception("grading of %s failed", task.instance_id)
        return unresolved_report(task, started, f"grading failed: {type(exc).__name__}: {exc}", tampering=False)


grade = blocking(grade_async)
