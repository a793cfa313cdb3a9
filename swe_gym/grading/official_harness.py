"""``harness="official"``: grade as ``swebench.harness.run_evaluation`` does, rule for rule.

For users who need numbers comparable with the SWE-bench leaderboard. What it takes from the installed swebench
(4.x or 5.x; `swe_gym.grading.swebench_api` tells them apart): the apply commands (``GIT_APPLY_CMDS``, tried in
order, the first that exits 0 wins: 4.x on the same tree with nothing reset in between; 5.x resetting the tree
before each later one and finally accepting a patch that is already in), the eval script as its ``run_instance``
runs it (no nonce, no canary, the patch's files not restored; 5.x records the test exit status), and the log
rules of ``get_logs_eval``: a log that holds any of ``APPLY_PATCH_FAIL``, ``RESET_FAILED``, ``TESTS_ERROR``,
``TESTS_TIMEOUT``, or lacks either output marker, is not resolved; otherwise the text between the markers is
parsed (the whole log when that yields nothing) and judged by swebench's report (5.x's own ``get_logs_eval``
also refuses a log whose suite never ran or whose exit status contradicts it).

Where swebench raises (``EvaluationError``: the patch did not apply, the tests timed out) its run
report counts an error; here that is an unresolved verdict with the reason. What stays ours: the
sandbox (fresh, no network), and the reinstall and setup planned by `swe_gym.grading.eval_plan` (offline pip;
skipped for an editable install when no build input changed), which changes no verdict. It keeps the script's
``git status``/``git show``/``git diff`` that the safe grader leaves out: swebench scans the whole log, the patch
``git diff`` prints included.

None of the integrity checks of the default grader run here, so a patch that rewrites the tests'
configuration can pass: never train on rewards from this mode.
"""

from __future__ import annotations

import shlex
import time

from swe_gym.errors import GradingError, SandboxError, TaskError
from swe_gym.grading import changes, eval_plan, swebench_api
from swe_gym.grading.eval_run import (
    EVAL_OUTPUT_BYTES,
    LOG_TAIL,
    EvalRun,
    install_command,
    judge_status,
    masked_report,
    start_sandbox,
)
from swe_gym.grading.eval_script import build_eval_script
from swe_gym.grading.parsers import TestStatus, get_parser
from swe_gym.grading.patch import SCRATCH
from swe_gym.grading.report import GradeReport, classify
from swe_gym.sandbox import AsyncSandbox, SandboxSpec
from swe_gym.sandbox.facade import ProviderLike
from swe_gym.sandbox.pool import SandboxPool
from swe_gym.tasks.model import SWETask


def log_verdict(task: SWETask, log: str) -> tuple[dict[str, TestStatus], str | None]:
    """(test statuses, why the log is not judged) by the installed swebench's ``get_logs_eval`` rules.

    Both lines refuse a log with a failure code or without both markers; 5.x also one whose suite shows no sign
    of having run, or whose recorded test exit status contradicts a log without failures, which its own
    ``get_logs_eval`` checks here (`swebench_api.logs_eval`).
    """
    constants = swebench_api.harness("constants")
    bad = [
        code
        for code in (constants.APPLY_PATCH_FAIL, constants.RESET_FAILED, constants.TESTS_ERROR, constants.TESTS_TIMEOUT)
        if code in log
    ]
    if bad:
        return {}, f"the log holds {bad[0]!r} (swebench: not resolved)"
    start, end = constants.START_TEST_OUTPUT, constants.END_TEST_OUTPUT
    if start not in log or end not in log:
        return {}, "the log lacks the test output markers (swebench: not resolved)"
    section = log.split(start)[1].split(end)[0]
    if task.eval.toolkit == "swebench":
        from swe_gym.grading import swebench_toolkit

        status = swebench_toolkit.parse_section(task, section) or swebench_toolkit.parse_section(task, log)
        native = swebench_api.logs_eval(swebench_toolkit.test_spec(task), log)
        if native is not None and not native[1]:
            return {}, "swebench's get_logs_eval accepts no test results from this log (swebench: not resolved)"
        return status, None
    parser = get_parser(task.eval.log_parser or "pytest")
    return parser(section) or parser(log), None


async def _apply(sandbox: AsyncSandbox, task: SWETask, patch: str) -> tuple[str | None, str]:
    """``GIT_APPLY_CMDS`` in order, the first that exits 0 wins; where swebench resets the tree before each later
    attempt (5.x) so does this, and 5.x's last check (the patch is in already: ``git apply --check --reverse``)."""
    path = f"{SCRATCH}/patch.diff"
    workdir = shlex.quote(task.workdir)
    await sandbox.write_file(path, patch.encode("utf-8", errors="surrogateescape"))
    resets = swebench_api.resets_between_applies()
    attempts = []
    for index, command in enumerate(swebench_api.apply_commands()):
        if index and resets:
            await sandbox.exec(f"cd {workdir} && git checkout -- . ; git clean -fd", timeout=300)
        result = await sandbox.exec(f"cd {workdir} && {command} {path}", timeout=300)
        attempts.append(f"$ {command} -> exit {result.exit_code}\n{result.output}")
        if result.exit_code == 0:
            return command, "\n".join(attempts)
    if resets:
        check = "git apply --check --reverse"
        result = await sandbox.exec(f"cd {workdir} && {check} {path}", timeout=300)
        attempts.append(f"$ {check} -> exit {result.exit_code}\n{result.output}")
        if result.exit_code == 0:
            return check, "\n".join(attempts)
    return None, "\n".join(attempts)


async def grade_official(
    task: SWETask,
    patch: str,
    script: str | None,
    provider: ProviderLike,
    spec: SandboxSpec,
    pool: SandboxPool | None,
    ready: AsyncSandbox | None,
    started: float,
) -> GradeReport:
    run = EvalRun(empty=not patch.strip())
    sandbox = ready or await start_sandbox(task, provider, spec, pool, run)
    if sandbox is None:
        return masked_report(task, run.infra or "no sandbox", started, harness="official", timings_s=run.timings)
    timed_out = False
    try:
        try:
            clock = time.perf_counter()
            if not run.empty:
                await changes.record(sandbox)
                run.method, run.apply_log = await _apply(sandbox, task, patch)
                run.applied = run.method is not None
                run.changed = await changes.changed_since_record(sandbox)
            run.timings["apply"] = round(time.perf_counter() - clock, 4)
            if run.empty or run.applied:
                official = swebench_api.as_run(script) if script else None
                body, run.install = eval_plan.plan(
                    build_eval_script(task, official), install_command(task), run.changed
                )
                if task.test_patch.strip():
                    await sandbox.write_file(
                        f"{SCRATCH}/test.patch", task.test_patch.encode("utf-8", "surrogateescape")
                    )
                await sandbox.write_file(f"{SCRATCH}/eval.sh", body, mode=0o755)
                clock = time.perf_counter()
                result = await sandbox.exec(
                    f"bash {SCRATCH}/eval.sh", timeout=task.eval.timeout_s, max_output_bytes=EVAL_OUTPUT_BYTES
                )
                run.timings["tests"] = round(time.perf_counter() - clock, 4)
                run.log, run.exit_code, timed_out = result.output, result.exit_code, result.timed_out
        except SandboxError as exc:
            return masked_report(
                task, f"grading sandbox failed: {exc}", started, harness="official", timings_s=run.timings
            )
    finally:
        await sandbox.close()
    common: dict[str, object] = {
        "harness": "official",
        "empty_patch": run.empty,
        "patch_applied": run.applied,
        "apply_method": run.method,
        "eval_exit_code": run.exit_code,
        "log_tail": (run.log or run.apply_log)[-LOG_TAIL:],
        "eval_log": run.log,
        "install": run.install,
        "timings_s": run.timings,
        "duration_s": 0.0,
    }
    reason: str | None = None
    status: dict[str, TestStatus] = {}
    if not run.empty and not run.applied:
        reason = "Patch Apply Failed (swebench: error)"
    elif timed_out:
        reason = f"Tests Timed Out after {task.eval.timeout_s:.0f}s (swebench: error)"
    else:
        try:
            status, reason = log_verdict(task, run.log)
        except (TaskError, GradingError) as exc:
            return masked_report(task, f"the test log could not be judged: {exc}", started, **common)
    if reason is not None:
        common["duration_s"] = time.perf_counter() - started
        return GradeReport(
            instance_id=task.instance_id,
            unresolved_reason=reason,
            fail_to_pass=classify(task.fail_to_pass, {}),
            pass_to_pass=classify(task.pass_to_pass, {}),
            **common,  # type: ignore[arg-type]
        )
    resolved, f2p, p2p = judge_status(task, status)
    common["duration_s"] = time.perf_counter() - started
    return GradeReport(
        instance_id=task.instance_id,
        resolved=resolved,
        fail_to_pass=f2p,
        pass_to_pass=p2p,
        test_status=status,
        **common,  # type: ignore[arg-type]
    )
