"""Grade a patch: fresh sandbox, agent patch, files returned to base, hidden tests, checked log, verdict.

Tasks whose recipe says ``harness="swebench"`` get the official swebench eval script, log
parser and resolution rule (`swe_gym.grading.official`); the rest our own. Either way the
patch goes through our apply ladder (paths checked first), the files that steer the test
run go back to base (`protect`, decided from what the apply changed: `changes`), the
markers carry a nonce and pytest runs get canary tests (`tamper`).

``masked`` means the environment failed, never the agent: only what happens before the
patch is in the sandbox (no sandbox, a task whose eval cannot be derived) is masked at once.
Anything odd after that (a timeout, a dead sandbox, the test patch not applying, no test
output, a canary or log check tripping) may be the patch's doing, so the same eval runs once
without the patch (the control, cached per task): if it shows the same, the task is at
fault (masked, or the check is off for that task); if not, the patch is (unresolved, with
the reason). A forged runner channel or a patch that changed ``.git`` is tampering outright.
"""

from __future__ import annotations

import hashlib
import json
import logging
import shlex
import time
from typing import Literal

from swe_gym.errors import ChannelTamperedError, GradingError, SandboxError, TaskError
from swe_gym.grading import changes, eval_plan, tamper
from swe_gym.grading.eval_run import (
    EVAL_OUTPUT_BYTES,
    LOG_TAIL,
    EvalRun,
    install_command,
    judge_status,
    masked_report,
    official_eval_script,
    parse_section,
    start_sandbox,
)
from swe_gym.grading.eval_script import TEST_PATCH_FAILED, build_eval_script, restore_script
from swe_gym.grading.patch import GIT_ENV, SCRATCH, apply_patch, patch_paths
from swe_gym.grading.protect import SECTIONED, restore_set, task_test_files
from swe_gym.grading.report import GradeReport, classify
from swe_gym.sandbox import AsyncSandbox, SandboxSpec
from swe_gym.sandbox.facade import ProviderLike
from swe_gym.sandbox.pool import SandboxPool
from swe_gym.tasks.model import SWETask

log = logging.getLogger(__name__)

#: Anomalies that, seen without the patch too, mean the task (or its image) is broken: masked.
_DEFECTS = {"timeout", "died", "test_patch", "no_tests", "unjudgeable"}
#: Checks of ours that a task's own harness may trip; seen without the patch too, they are off for it.
_CHECKS = {"canary", "late_status"}


#: (task, script, provider, image) -> the anomaly kinds of its control run (no patch).
_CONTROLS: dict[tuple[str, str, str, str], set[str]] = {}


async def _restore(sandbox: AsyncSandbox, task: SWETask, patch: str, run: EvalRun) -> None:
    """Return to base the files the apply changed that steer the test run."""
    changed = run.changed = await changes.changed_since_record(sandbox)
    machinery = sorted(p for p in changed if p == ".git" or p.startswith(".git/"))
    if machinery:
        run.tampered = f"applying the patch changed the repository's git directory ({', '.join(machinery[:5])})"
        return
    texts: dict[str, tuple[str | None, str | None]] = {}
    for path, kind in changed.items():
        if path.rsplit("/", 1)[-1] in SECTIONED:
            base = await sandbox.exec(f"{GIT_ENV} git show HEAD:./{shlex.quote(path)}", timeout=60)
            patched = None if kind == "deleted" else (await sandbox.read_file(path)).decode("utf-8", "replace")
            texts[path] = (base.output if base.exit_code == 0 else None, patched)
    tests = task_test_files(patch_paths(task.test_patch), [*task.fail_to_pass, *task.pass_to_pass])
    run.restored = restore_set(changed, tests, texts.__getitem__)
    if run.restored:
        result = await sandbox.exec(restore_script(sorted(run.restored)), timeout=300)
        if result.exit_code != 0:
            raise GradingError(f"could not restore the test files: {result.output[-500:]}")


async def _eval(
    task: SWETask,
    patch: str,
    script: str | None,
    provider: ProviderLike,
    spec: SandboxSpec,
    pool: SandboxPool | None,
    ready: AsyncSandbox | None = None,
) -> EvalRun:
    run = EvalRun(empty=not patch.strip())
    sandbox = ready or await start_sandbox(task, provider, spec, pool, run)
    if sandbox is None:
        return run
    try:
        try:
            clock = time.perf_counter()
            if not run.empty:
                await changes.record(sandbox)
                run.method, run.apply_log = await apply_patch(sandbox, patch)
                if run.method is None:
                    return run
                run.applied = True
                await _restore(sandbox, task, patch, run)
                if run.tampered:
                    return run
            run.timings["apply"] = round(time.perf_counter() - clock, 4)
            nonce = tamper.new_nonce()
            body, run.install = eval_plan.plan(build_eval_script(task, script), install_command(task), run.changed)
            sealed = tamper.seal_markers(body, nonce)
            sealed, canary = tamper.add_canary(sealed, nonce)
            if canary is not None:
                await sandbox.write_file(canary.path, canary.source)
            if task.test_patch.strip():
                await sandbox.write_file(f"{SCRATCH}/test.patch", task.test_patch.encode("utf-8", "surrogateescape"))
            await sandbox.write_file(f"{SCRATCH}/eval.sh", sealed, mode=0o755)
        except (SandboxError, GradingError) as exc:
            run.infra = f"grading sandbox failed before the tests ran: {exc}"
            return run
        clock = time.perf_counter()
        try:
            result = await sandbox.exec(
                f"bash {SCRATCH}/eval.sh", timeout=task.eval.timeout_s, max_output_bytes=EVAL_OUTPUT_BYTES
            )
        except ChannelTamperedError as exc:
            run.tampered = f"the sandbox's runner channel was forged during the tests: {exc}"
            return run
        except SandboxError as exc:
            run.problems["died"] = f"the grading sandbox died during the tests: {exc}"
            return run
        finally:
            run.timings["tests"] = round(time.perf_counter() - clock, 4)
    finally:
        await sandbox.close()
    run.log, run.exit_code = result.output, result.exit_code
    _inspect(task, run, nonce, canary, timed_out=result.timed_out)
    return run


def _inspect(task: SWETask, run: EvalRun, nonce: str, canary: tamper.Canary | None, *, timed_out: bool) -> None:
    """Fill ``run.status`` and ``run.problems`` from the log."""
    if timed_out:
        run.problems["timeout"] = f"the tests timed out after {task.eval.timeout_s:.0f}s"
    if f"{TEST_PATCH_FAILED} {nonce}" in run.log:
        run.problems["test_patch"] = "the task's test patch did not apply"
        return
    section, wrong = tamper.section(run.log, nonce)
    if wrong:
        run.tampered = wrong
        return
    if section is None:
        run.problems["no_tests"] = "the tests never started (no test output markers)"
        return
    try:
        status = parse_section(task, section)
    except (TaskError, GradingError) as exc:
        run.problems["unjudgeable"] = f"the test log could not be judged: {exc}"
        return
    late = tamper.late_status_lines(section)
    if late:
        run.problems["late_status"] = late
    if canary is None:
        run.canary = "not applicable (not a single pytest command)"
    else:
        wrong = canary.verdict(status)
        run.canary = wrong or "passed"
        if wrong:
            run.problems["canary"] = wrong
        status = canary.strip(status)
    run.status = status


async def _control_kinds(
    task: SWETask, script: str | None, provider: ProviderLike, spec: SandboxSpec, pool: SandboxPool | None
) -> set[str] | str:
    """The anomaly kinds the eval shows without any patch (cached), or why it could not run."""
    name = json.dumps(provider, sort_keys=True, default=str) if isinstance(provider, dict) else provider
    name = name if isinstance(name, str) else f"{getattr(name, 'name', type(name).__name__)}:{id(name)}"
    digest = hashlib.sha256((script or task.eval.eval_script or task.eval.test_cmd or "").encode()).hexdigest()
    key = (task.instance_id, digest, str(name), spec.image or task.image or "")
    if key not in _CONTROLS:
        control = await _eval(task, "", script, provider, spec, pool)
        if control.infra:
            return control.infra
        _CONTROLS[key] = set(control.problems)
    return _CONTROLS[key]


Harness = Literal["safe", "official"]


async def grade(
    task: SWETask,
    patch: str,
    *,
    provider: ProviderLike = "local",
    spec: SandboxSpec | None = None,
    pool: SandboxPool | None = None,
    harness: Harness = "safe",
    sandbox: AsyncSandbox | None = None,
) -> GradeReport:
    """Grade ``patch`` (a git diff against the task's base) in a fresh sandbox (never used, if from ``pool``).

    ``harness="official"`` follows ``swebench``'s ``run_evaluation`` to the letter instead (its apply
    order, its log checks, none of our integrity checks: `swe_gym.grading.official_mode`), for numbers
    comparable with the leaderboard. ``sandbox``: a fresh one for this task, started ahead (e.g. while
    the agent acted); grade owns and closes it.
    """
    started = time.perf_counter()
    spec = spec or SandboxSpec()
    try:
        script = official_eval_script(task) if task.eval.harness == "swebench" else None
    except (TaskError, GradingError) as exc:
        if sandbox is not None:
            await sandbox.close()
        return masked_report(task, f"no eval script for this task: {exc}", started)
    if harness == "official":
        from swe_gym.grading.official_mode import grade_official

        return await grade_official(task, patch, script, provider, spec, pool, sandbox, started)
    run = await _eval(task, patch, script, provider, spec, pool, sandbox)
    if run.infra:
        return masked_report(task, run.infra, started, timings_s=run.timings)
    common: dict[str, object] = {
        "empty_patch": run.empty,
        "patch_applied": run.applied,
        "apply_method": run.method,
        "restored_test_files": sorted(run.restored),
        "restore_reasons": run.restored,
        "eval_exit_code": run.exit_code,
        "log_tail": (run.log or run.apply_log)[-LOG_TAIL:],
        "eval_log": run.log,
        "canary": run.canary,
        "install": run.install,
        "timings_s": run.timings,
    }
    if not run.empty and not run.applied:
        return GradeReport(instance_id=task.instance_id, duration_s=time.perf_counter() - started, **common)  # type: ignore[arg-type]
    if run.tampered:
        log.warning("grading of %s: tampering detected: %s", task.instance_id, run.tampered)
        return _unresolved(task, started, f"tampering detected: {run.tampered}", tampering=True, **common)
    if run.problems:
        control = set(run.problems)  # an empty patch is its own control
        if not run.empty:
            found = await _control_kinds(task, script, provider, spec, pool)
            if isinstance(found, str):
                return masked_report(task, f"an anomaly needed a control run, which failed: {found}", started, **common)
            control = found
            common["control_run"] = True
        defects = [detail for kind, detail in run.problems.items() if kind in _DEFECTS and kind in control]
        if defects:
            return masked_report(task, f"{defects[0]}, also without the patch (task defect)", started, **common)
        caused = {kind: detail for kind, detail in run.problems.items() if kind not in control}
        if caused:
            tampering = any(kind in _CHECKS for kind in caused)
            reason = "; ".join(caused.values())
            return _unresolved(
                task, started, f"tampering detected: {reason}" if tampering else reason, tampering=tampering, **common
            )
        if "canary" in run.problems:
            common["canary"] = f"off for this task (its harness fails it without any patch: {run.canary})"
    resolved, f2p, p2p = judge_status(task, run.status)
    return GradeReport(
        instance_id=task.instance_id,
        resolved=resolved,
        fail_to_pass=f2p,
        pass_to_pass=p2p,
        test_status=run.status,
        duration_s=time.perf_counter() - started,
        **common,  # type: ignore[arg-type]
    )


def _unresolved(task: SWETask, started: float, reason: str, *, tampering: bool, **common: object) -> GradeReport:
    return GradeReport(
        instance_id=task.instance_id,
        unresolved_reason=reason,
        tampering=tampering,
        fail_to_pass=classify(task.fail_to_pass, {}),
        pass_to_pass=classify(task.pass_to_pass, {}),
        duration_s=time.perf_counter() - started,
        **common,  # type: ignore[arg-type]
    )
