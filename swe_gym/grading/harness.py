"""Grade a patch: fresh sandbox, agent patch, hidden tests, parsed log, verdict.

Tasks whose recipe says ``harness="swebench"`` get the official swebench eval
script, log parser and resolution rule (`swe_gym.grading.official`); the rest
our own. Either way the agent's patch goes through our apply ladder and test
files the agent touched are restored first. Infrastructure failures (no
sandbox, dead sandbox, eval timeout, a test patch that does not apply, a task
the official harness cannot derive) come back as ``masked`` reports, never as a silent 0.
"""

from __future__ import annotations

import logging
import time

from swe_gym.errors import GradingError, SandboxError, TaskError
from swe_gym.grading.eval_script import TEST_PATCH_FAILED, build_eval_script, test_section
from swe_gym.grading.parsers import TestStatus, get_parser
from swe_gym.grading.patch import SCRATCH, apply_patch, is_test_path, patch_paths
from swe_gym.grading.report import GradeReport, TestGroup, classify
from swe_gym.sandbox import SandboxSpec
from swe_gym.sandbox.facade import ProviderLike
from swe_gym.sandbox.pool import SandboxPool
from swe_gym.tasks.model import SWETask
from swe_gym.tasks.provision import provision

log = logging.getLogger(__name__)

EVAL_OUTPUT_BYTES = 64 << 20
_LOG_TAIL = 4000


def official_eval_script(task: SWETask) -> str:
    from swe_gym.grading import official

    return official.eval_script(task)


def judge_log(task: SWETask, log: str) -> tuple[bool, TestGroup, TestGroup, dict[str, TestStatus]]:
    """The verdict on an eval log: the official parser and rule for swebench tasks, ours otherwise."""
    if task.eval.harness == "swebench":
        from swe_gym.grading import official

        if test_section(log) is None:  # the tests never ran: unresolved, as the official harness says
            return False, classify(task.fail_to_pass, {}), classify(task.pass_to_pass, {}), {}
        status = official.parse_log(task, log)
        resolved, f2p, p2p = official.judge(task, status)
        return resolved, f2p, p2p, status
    section = test_section(log)
    status = get_parser(task.eval.log_parser or "pytest")(section if section is not None else log)
    f2p, p2p = classify(task.fail_to_pass, status), classify(task.pass_to_pass, status)
    return not f2p.failure and not p2p.failure, f2p, p2p, status


def _masked(task: SWETask, reason: str, started: float, **fields: object) -> GradeReport:
    log.warning("grading of %s masked: %s", task.instance_id, reason)
    return GradeReport(
        instance_id=task.instance_id,
        masked=True,
        masked_reason=reason,
        duration_s=time.perf_counter() - started,
        **fields,  # type: ignore[arg-type]
    )


async def grade(
    task: SWETask,
    patch: str,
    *,
    provider: ProviderLike = "local",
    spec: SandboxSpec | None = None,
    pool: SandboxPool | None = None,
) -> GradeReport:
    """Grade ``patch`` (a git diff against the task's base) in a fresh sandbox (never used, if from ``pool``)."""
    started = time.perf_counter()
    try:
        script = official_eval_script(task) if task.eval.harness == "swebench" else None
    except (TaskError, GradingError) as exc:
        return _masked(task, f"no eval script for this task: {exc}", started)
    try:
        sandbox = await provision(task, provider, spec or SandboxSpec(), pool)
    except SandboxError as exc:
        return _masked(task, f"grading sandbox could not start: {exc}", started)
    empty = not patch.strip()
    restore = sorted({p for p in patch_paths(patch) if is_test_path(p)} | set(patch_paths(task.test_patch)))
    try:
        method, apply_log = (None, "") if empty else await apply_patch(sandbox, patch)
        if not empty and method is None:
            return GradeReport(
                instance_id=task.instance_id,
                empty_patch=False,
                patch_applied=False,
                duration_s=time.perf_counter() - started,
                log_tail=apply_log[-_LOG_TAIL:],
            )
        if task.test_patch.strip():
            await sandbox.write_file(f"{SCRATCH}/test.patch", task.test_patch.encode("utf-8", "surrogateescape"))
        await sandbox.write_file(f"{SCRATCH}/eval.sh", build_eval_script(task, restore, script), mode=0o755)
        result = await sandbox.exec(
            f"bash {SCRATCH}/eval.sh", timeout=task.eval.timeout_s, max_output_bytes=EVAL_OUTPUT_BYTES
        )
    except SandboxError as exc:
        return _masked(task, f"grading sandbox failed: {exc}", started)
    finally:
        await sandbox.close()
    common = {
        "empty_patch": empty,
        "patch_applied": not empty,
        "apply_method": method,
        "restored_test_files": restore,
        "eval_exit_code": result.exit_code,
        "log_tail": result.output[-_LOG_TAIL:],
        "eval_log": result.output,
    }
    if result.timed_out:
        return _masked(task, f"eval timed out after {task.eval.timeout_s:.0f}s", started, **common)
    if TEST_PATCH_FAILED in result.output:
        return _masked(task, "the task's test patch did not apply (task defect)", started, **common)
    try:
        resolved, f2p, p2p, status = judge_log(task, result.output)
    except (TaskError, GradingError) as exc:
        return _masked(task, f"the test log could not be judged: {exc}", started, **common)
    return GradeReport(
        instance_id=task.instance_id,
        resolved=resolved,
        fail_to_pass=f2p,
        pass_to_pass=p2p,
        test_status=status,
        duration_s=time.perf_counter() - started,
        **common,  # type: ignore[arg-type]
    )
