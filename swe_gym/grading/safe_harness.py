"""The safe harness (``harness="safe"``, the default): fresh sandbox, agent patch, files returned to base,
hidden tests, checked log, verdict.

Tasks whose recipe says ``toolkit="swebench"`` get the official swebench eval script, log
parser and resolution rule (`swe_gym.grading.swebench_toolkit`); the rest our own. Either way the
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

import asyncio
import hashlib
import json
import logging
import re
import shlex
import time
from collections.abc import Awaitable, Mapping
from dataclasses import dataclass

from swe_gym.errors import ChannelTamperedError, GradingError, SandboxError, TaskError
from swe_gym.grading import changes, eval_plan, site_check, tamper, twin_pass, twins
from swe_gym.grading.eval_run import (
    EVAL_OUTPUT_BYTES,
    LOG_TAIL,
    EvalRun,
    install_command,
    judge_status,
    masked_report,
    parse_section,
    start_sandbox,
)
from swe_gym.grading.eval_script import TEST_PATCH_FAILED, build_eval_script, restore_script
from swe_gym.grading.parsers import TestStatus
from swe_gym.grading.patch import SCRATCH, apply_patch, patch_paths
from swe_gym.grading.protect import restore_set, task_test_files
from swe_gym.grading.report import GradeReport, classify
from swe_gym.grading.twin_pass import TwinSources, read_twin_sources
from swe_gym.sandbox import AsyncSandbox, SandboxSpec
from swe_gym.sandbox.facade import ProviderLike
from swe_gym.sandbox.loop import to_the_end
from swe_gym.sandbox.pool import SandboxPool
from swe_gym.tasks.model import SWETask

log = logging.getLogger(__name__)

#: Anomalies that, seen without the patch too, mean the task (or its image) is broken: masked.
_DEFECTS = {"timeout", "died", "test_patch", "no_tests", "unjudgeable"}
#: Checks of ours that a task's own harness may trip; seen without the patch too, they are off for it.
_CHECKS = {"canary", "late_status"}


#: (task, script, provider, image) -> the anomaly kinds of its control run (no patch).
_CONTROLS: dict[tuple[str, str, str, str], set[str]] = {}


def _provider_key(provider: ProviderLike) -> str:
    if isinstance(provider, str):
        return provider
    if isinstance(provider, Mapping):
        return json.dumps(dict(provider), sort_keys=True, default=str)
    return f"{provider.name}:{id(provider)}"


#: (provider, image, workdir, preamble) -> what the base environment imports from outside the work tree.
_ENVIRONMENTS: dict[tuple[str, str, str, str], site_check.BaseEnvironment] = {}


async def _base_environment(
    sandbox: AsyncSandbox, task: SWETask, script: str, provider: ProviderLike, spec: SandboxSpec
) -> site_check.BaseEnvironment:
    """The probe of `site_check`, run once per image and eval set-up, before any code of a patch ran there."""
    head = eval_plan.preamble(script, until=install_command(task) or None)  # the reinstall is not the probe's
    key = (_provider_key(provider), spec.image or task.image or "", task.workdir, head)
    if key not in _ENVIRONMENTS:
        result = await sandbox.exec(f"{head}\n{site_check.probe_command(task.workdir)}", timeout=300)
        _ENVIRONMENTS[key] = site_check.BaseEnvironment.parse(result.output, task.repo)
    return _ENVIRONMENTS[key]


async def _restore(
    sandbox: AsyncSandbox, task: SWETask, patch: str, run: EvalRun, env: site_check.BaseEnvironment
) -> None:
    """Return to base the files the apply (and any reinstall since) changed that steer the test run."""
    changed = await changes.changed_since_record(sandbox)
    if not run.changed:
        run.changed = changed
    machinery = changes.in_git_dir(changed)
    if machinery:
        run.tampered = f"the patch changed the repository's git directory ({', '.join(machinery[:5])})"
        return
    texts = await changes.config_texts(sandbox, changed)
    tests = task_test_files(patch_paths(task.test_patch), [*task.fail_to_pass, *task.pass_to_pass])
    found = restore_set(changed, tests, texts.__getitem__, shadowed=env.names, own=env.own)
    run.restored.update(found)
    if found:
        result = await sandbox.exec(restore_script(sorted(found)), timeout=300)
        if result.exit_code != 0:
            raise GradingError(f"could not restore the test files: {result.output[-500:]}")


async def _reinstall(
    sandbox: AsyncSandbox, task: SWETask, run: EvalRun, env: site_check.BaseEnvironment, head: str, install: str
) -> None:
    """Run the eval script's reinstall (the patch's build code) on its own, then check what it wrote outside
    the work tree; what it wrote inside is restored by the `_restore` that follows."""
    before, after = f"{SCRATCH}/site.before", f"{SCRATCH}/site.after"
    script = f'{head}mkdir -p {SCRATCH}\n{env.listing_command(before)}\n{install}\necho "swe_gym: reinstall exit $?"\n'
    script += f"{env.listing_command(after)}\n"
    result = await sandbox.exec(script, timeout=max(task.eval.timeout_s, 300), max_output_bytes=1 << 20)
    run.install_log = result.output[-LOG_TAIL:]
    listing = await sandbox.read_file(before, max_bytes=1 << 30), await sandbox.read_file(after, max_bytes=1 << 30)
    pth = {}
    for path in site_check.changed_pth(*listing):  # only a changed .pth can have gained start-up code
        read = await sandbox.exec(f"head -c 1048576 {shlex.quote(path)} 2>/dev/null", timeout=60)
        pth[path] = read.output
    commands = {"pytest", "py.test", "tox", "nosetests", *site_check.commands_of(task.eval.test_cmd or "")}
    run.tampered = site_check.verify_reinstall(env, *listing, pth, commands)


async def _check_plugins(
    sandbox: AsyncSandbox, task: SWETask, run: EvalRun, env: site_check.BaseEnvironment, script: str
) -> None:
    """pytest auto-loads the plugins every distribution's metadata registers: after the patch (and its
    reinstall) those must be the base's, so no plugin the patch names runs (the restore sent back all other
    metadata; this covers the project's own, which a reinstall rewrites)."""
    probe = (
        f"{eval_plan.preamble(script, until=install_command(task) or None)}\n{site_check.probe_command(task.workdir)}"
    )
    now = site_check.BaseEnvironment.parse((await sandbox.exec(probe, timeout=300)).output, task.repo)
    run.tampered = env.plugins_changed(now)


@dataclass(frozen=True)
class _Pass:
    """What one of a grading's passes runs: the test patch (with the twins of this pass) and their ids."""

    test_patch: str
    twins: frozenset[str] = frozenset()


async def _eval(
    task: SWETask,
    patch: str,
    script: str | None,
    provider: ProviderLike,
    spec: SandboxSpec,
    pool: SandboxPool | None,
    ready: AsyncSandbox | None = None,
    variant: Awaitable[_Pass] | None = None,
    sources: asyncio.Future[TwinSources] | None = None,
) -> EvalRun:
    """One eval in one fresh sandbox. Never raises: what fails before the patch is in is ``infra`` (masked),
    what fails after it is a problem of the run (judged against the control) or tampering."""
    run = EvalRun(empty=not patch.strip())
    try:
        sandbox = ready or await start_sandbox(task, provider, spec, pool, run)
        if sandbox is None:
            return run
        try:
            return await _eval_in(sandbox, run, task, patch, script, provider, spec, variant, sources)
        finally:
            await sandbox.close()
    finally:
        if sources is not None:
            _settle(sources, GradingError(run.infra or "the pass ended before it read the test files"))


def _settle(future: asyncio.Future[TwinSources], outcome: TwinSources | BaseException) -> None:
    """Give the waiting pass its test files, unless it stopped waiting (a cancelled grading cancels the future)."""
    if future.done():
        return
    if isinstance(outcome, BaseException):
        future.set_exception(outcome)
    else:
        future.set_result(outcome)


async def _eval_in(
    sandbox: AsyncSandbox,
    run: EvalRun,
    task: SWETask,
    patch: str,
    script: str | None,
    provider: ProviderLike,
    spec: SandboxSpec,
    variant: Awaitable[_Pass] | None,
    sources: asyncio.Future[TwinSources] | None,
) -> EvalRun:
    full = build_eval_script(task, script)
    clock = time.perf_counter()
    try:  # before the patch is in: a failure here is the environment's
        env = await _base_environment(sandbox, task, full, provider, spec)
        if sources is not None:
            try:
                found = await read_twin_sources(sandbox, task)
            except (SandboxError, GradingError) as exc:
                _settle(sources, exc)
            else:
                _settle(sources, found)
        if not run.empty:
            await changes.record(sandbox)
    except (SandboxError, GradingError) as exc:
        run.infra = f"grading sandbox failed before the patch was applied: {exc}"
        return run
    if not run.empty:
        try:
            run.method, run.apply_log = await apply_patch(sandbox, patch)
        except SandboxError as exc:  # applying runs no code of the patch: the sandbox failed
            run.infra = f"grading sandbox failed while the patch was applied: {exc}"
            return run
        if run.method is None:
            return run
        run.applied = True
    try:
        if not run.empty:
            await _restore(sandbox, task, patch, run, env)
            if run.tampered:
                return run
        install = install_command(task)
        body, run.install = eval_plan.plan(full, install, run.changed)
        body = eval_plan.without_state_commands(body)
        reinstalled = bool(install) and run.install.startswith("ran")
        if reinstalled:
            head, body = eval_plan.split_install(body, install)
            await _reinstall(sandbox, task, run, env, head, install)
            if run.tampered:
                return run
            if not run.empty:
                await _restore(sandbox, task, patch, run, env)
                if run.tampered:
                    return run
        if reinstalled or site_check.touches_metadata(run.changed):
            await _check_plugins(sandbox, task, run, env, full)
            if run.tampered:
                return run
        run.timings["apply"] = round(time.perf_counter() - clock, 4)
        chosen = await variant if variant is not None else _Pass(task.test_patch)
        run.twins = set(chosen.twins)
        if chosen.test_patch != task.test_patch and task.test_patch in body:
            body = body.replace(task.test_patch, chosen.test_patch)
        nonce = tamper.new_nonce()
        sealed, canary = tamper.add_canary(tamper.seal_markers(body, nonce), nonce)
        if canary is not None:
            await sandbox.write_file(canary.path, canary.source)
        if task.test_patch.strip():
            await sandbox.write_file(f"{SCRATCH}/test.patch", chosen.test_patch.encode("utf-8", "surrogateescape"))
        await sandbox.write_file(f"{SCRATCH}/eval.sh", sealed, mode=0o755)
    except asyncio.CancelledError:
        raise
    except SandboxError as exc:
        _after_apply_failure(run, f"the grading sandbox failed after the patch was applied: {exc}", "died")
        return run
    except Exception as exc:  # anything else after the apply: the patch's doing until the control says otherwise
        _after_apply_failure(run, f"grading failed after the patch was applied: {type(exc).__name__}: {exc}", "error")
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
    run.log, run.exit_code = result.output, result.exit_code
    try:
        _inspect(task, run, nonce, canary, timed_out=result.timed_out)
    except Exception as exc:
        run.problems["unjudgeable"] = f"the test log could not be judged: {type(exc).__name__}: {exc}"
    return run


def _after_apply_failure(run: EvalRun, detail: str, kind: str) -> None:
    """Without a patch nothing of the agent's ran: the environment failed (masked). With one, a problem."""
    if run.empty:
        run.infra = detail
    else:
        run.problems[kind] = detail


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
    section = tamper.normalize(section)
    try:
        status = parse_section(task, section)
    except (TaskError, GradingError) as exc:
        run.problems["unjudgeable"] = f"the test log could not be judged: {exc}"
        return
    late = tamper.late_status_lines(section, lambda text: parse_section(task, text))
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
    digest = hashlib.sha256((script or task.eval.eval_script or task.eval.test_cmd or "").encode()).hexdigest()
    key = (task.instance_id, digest, _provider_key(provider), spec.image or task.image or "")
    if key not in _CONTROLS:
        control = await _eval(task, "", script, provider, spec, pool)
        if control.infra:
            return control.infra
        _CONTROLS[key] = set(control.problems)
    return _CONTROLS[key]


#: (provider, image, instance, test patch) -> the test files twins are made from.
_SOURCES: dict[tuple[str, str, str, str], twin_pass.TwinSources] = {}
#: the same key and the perturbations -> graded tests whose twin passes under the gold patch (no check for them).
_UNSOUND: dict[tuple[str, str, str, str, str], set[str]] = {}


def _sources_key(task: SWETask, provider: ProviderLike, spec: SandboxSpec) -> tuple[str, str, str, str]:
    digest = hashlib.sha256(task.test_patch.encode("utf-8", "surrogateescape")).hexdigest()
    return (_provider_key(provider), spec.image or task.image or "", task.instance_id, digest)


async def _two_passes(
    task: SWETask,
    patch: str,
    script: str | None,
    provider: ProviderLike,
    spec: SandboxSpec,
    pool: SandboxPool | None,
    ready: AsyncSandbox | None,
) -> tuple[list[EvalRun], twin_pass.PassPlan | str]:
    """Both passes at once, each in a fresh sandbox; the first reads the test files (before the patch) the
    twins are made from, unless cached. Both run to the end: each test's status comes from the pass that ran
    its original (partial rewards count them)."""
    loop = asyncio.get_running_loop()
    key = _sources_key(task, provider, spec)
    sources: asyncio.Future[twin_pass.TwinSources] = loop.create_future()
    if key in _SOURCES:
        sources.set_result(_SOURCES[key])
    variants: list[asyncio.Future[_Pass]] = [loop.create_future(), loop.create_future()]
    first = asyncio.ensure_future(
        _eval(task, patch, script, provider, spec, pool, ready, variants[0], None if sources.done() else sources)
    )
    second = asyncio.ensure_future(_eval(task, patch, script, provider, spec, pool, None, variants[1]))
    try:
        try:
            _SOURCES[key] = await sources
            plan: twin_pass.PassPlan | str = twin_pass.plan_passes(task, _SOURCES[key])
        except (SandboxError, GradingError) as exc:
            plan = f"the test files could not be read: {exc}"
        except Exception as exc:  # a test file our twin maker cannot handle: no twins, said so
            log.warning("no twins for %s: %s: %s", task.instance_id, type(exc).__name__, exc)
            plan = f"twins could not be made ({type(exc).__name__}: {exc})"
        if isinstance(plan, str):
            variants[0].set_result(_Pass(task.test_patch))
            second.cancel()
            return [await first], plan
        for future, test_patch, ids in zip(variants, plan.patches, plan.twinned, strict=True):
            future.set_result(_Pass(test_patch, ids))
        return list(await asyncio.gather(first, second)), plan
    finally:
        await _finish(first, second)


async def _finish(*jobs: asyncio.Future[EvalRun]) -> None:
    """Cancel the passes still running and wait until each has closed its sandbox, however often the grading
    itself is cancelled meanwhile (a pass left running would leak its sandbox when the loop stops)."""
    for job in jobs:
        job.cancel()
    for outcome in await to_the_end(asyncio.gather(*jobs, return_exceptions=True)):
        if isinstance(outcome, Exception):  # a pass never raises: a defect of ours, seen while stopping
            log.error("a grading pass failed while the grading stopped", exc_info=outcome)


def _merged(
    runs: list[EvalRun], plan: twin_pass.PassPlan | str, sources: twin_pass.TwinSources | None
) -> tuple[dict[str, TestStatus], dict[str, TestStatus]]:
    """(each test's status from the first pass that ran its original, each graded twin's status).

    Every status a pass reports is attributed by the definition it resolves to, whatever form its id takes
    (cut at a space by the parser, another parametrization, a docstring line): a status of a definition that
    is twinned in that pass is the twin's, never a test's, so nothing a check adds reaches the verdict; an id
    that resolves to no definition is read from a pass that twins no definition of its name."""
    status: dict[str, TestStatus] = {}
    twin: dict[str, TestStatus] = {}
    if isinstance(plan, str) or sources is None:
        for run in runs:
            for test, value in run.status.items():
                status.setdefault(test, value)
        return status, twin
    keys = twins.index_tests({t for run in runs for t in run.status}, sources.post).of_test
    for run in runs:
        twinned = {plan.def_of(t) for t in run.twins}
        names = {plan.index.defs[key].qualname.rpartition(".")[2] for key in twinned if key}
        for test, value in run.status.items():
            if test in keys:
                if keys[test] not in twinned:
                    status.setdefault(test, value)
                continue
            # An id no definition answers for (a runner's summary line naming a test by its bare name, a name
            # several classes define; a nested run's output) may be a twin's failure when it bears the name of a
            # definition twinned in this pass: it counts from the other passes then.
            if _short_name(test) not in names:
                status.setdefault(test, value)
        for graded in run.twins:
            shown = run.status.get(plan.renamed.get(graded, graded))
            if shown is not None:
                twin[graded] = shown
    return status, twin


def _short_name(test_id: str) -> str:
    """The function name an id ends with: ``test_x`` of ``a.py::C::test_x[p]``, ``test_x (m.C)``, ``m.C.test_x``,
    sympy's ``a.py:test_x``."""
    head = re.split(r"[\s\[(]", test_id.strip(), maxsplit=1)[0]
    return re.split(r"[:.]", head)[-1]


async def _unsound_twins(
    task: SWETask,
    script: str | None,
    provider: ProviderLike,
    spec: SandboxSpec,
    pool: SandboxPool | None,
    plan: twin_pass.PassPlan,
    passed: list[str],
) -> set[str] | str:
    """Which of the graded tests in `passed`, twinned as in `plan`, have a twin that passes under the gold patch
    too, or why that is unknown. Cached per perturbed expected value: whether gold reaches it does not depend on
    the character a grading changes there."""
    choices = {k: c for t in passed if (k := plan.def_of(t)) and (c := plan.choices.get(k))}
    key = (*_sources_key(task, provider, spec), json.dumps(sorted((k, c.literal) for k, c in choices.items())))
    if key in _UNSOUND:
        return _UNSOUND[key]
    if not task.patch.strip():
        return set()  # nothing to validate against: every twin counts
    gold = twin_pass.plan_passes(task, _SOURCES[key[:4]], every=True, choices=plan.choices)
    if isinstance(gold, str):
        return gold
    chosen: asyncio.Future[_Pass] = asyncio.get_running_loop().create_future()
    chosen.set_result(_Pass(gold.patches[0], gold.twinned[0]))
    run = await _eval(task, task.patch, script, provider, spec, pool, None, chosen)
    if run.infra or run.tampered or not run.applied:
        return run.infra or run.tampered or "the gold patch did not apply"
    twin = _merged([run], gold, _SOURCES[key[:4]])[1]
    _UNSOUND[key] = {t for t in passed if twin.get(t) in twin_pass.PASSING}
    return _UNSOUND[key]


async def grade_safe(
    task: SWETask,
    patch: str,
    script: str | None,
    provider: ProviderLike,
    spec: SandboxSpec,
    pool: SandboxPool | None,
    ready: AsyncSandbox | None,
    started: float,
    twins: bool,
) -> GradeReport:
    """``harness="safe"``, as `swe_gym.grading.grade_async` calls it: ``script`` is the swebench eval script of a
    ``toolkit="swebench"`` task, else None; ``ready`` a fresh sandbox started ahead, or None."""
    plan: twin_pass.PassPlan | str = "off (twins=False)" if twins is False else "not needed (empty patch)"
    if (
        twins
        and patch.strip()
        and (script or task.eval.eval_script)
        and task.test_patch not in (script or task.eval.eval_script or "")
    ):
        twins, plan = False, "none: the eval script does not apply the task's test patch as written"
    if twins and patch.strip() and task.test_patch.strip():
        runs, plan = await _two_passes(task, patch, script, provider, spec, pool, ready)
    else:
        runs = [await _eval(task, patch, script, provider, spec, pool, ready)]
    run = runs[0]
    infra = next((r.infra for r in runs if r.infra), None)
    if infra:
        return masked_report(task, infra, started, timings_s=run.timings)
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
        "install_log": run.install_log,
        "timings_s": run.timings,
        "twins": plan if isinstance(plan, str) else f"{sum(map(len, plan.twinned))} graded tests twinned in 2 passes",
        "uncovered_tests": {} if isinstance(plan, str) else twin_pass.uncovered(plan),
    }
    if not run.empty and not run.applied:
        return GradeReport(instance_id=task.instance_id, duration_s=time.perf_counter() - started, **common)  # type: ignore[arg-type]
    tampered = next((r.tampered for r in runs if r.tampered), None)
    if tampered:
        log.warning("grading of %s: tampering detected: %s", task.instance_id, tampered)
        return unresolved_report(task, started, f"tampering detected: {tampered}", tampering=True, **common)
    problems = {kind: detail for r in reversed(runs) for kind, detail in r.problems.items()}
    if problems:
        control = set(problems)  # an empty patch is its own control
        if not run.empty:
            found = await _control_kinds(task, script, provider, spec, pool)
            if isinstance(found, str):
                return masked_report(task, f"an anomaly needed a control run, which failed: {found}", started, **common)
            control = found
            common["control_run"] = True
        defects = [detail for kind, detail in problems.items() if kind in _DEFECTS and kind in control]
        if defects:
            return masked_report(task, f"{defects[0]}, also without the patch (task defect)", started, **common)
        caused = {kind: detail for kind, detail in problems.items() if kind not in control}
        if caused:
            tampering = any(kind in _CHECKS for kind in caused)
            reason = "; ".join(caused.values())
            return unresolved_report(
                task, started, f"tampering detected: {reason}" if tampering else reason, tampering=tampering, **common
            )
        if "canary" in problems:
            common["canary"] = f"off for this task (its harness fails it without any patch: {run.canary})"
    status, twin_status = _merged(runs, plan, _SOURCES.get(_sources_key(task, provider, spec)))
    graded = {*task.fail_to_pass, *task.pass_to_pass}
    # A twin passes honestly where its original fails (an inverted assertion that was false); both passing is
    # what no test run can show, unless the twin's assertions never run (the gold run tells).
    passed_twins = sorted(
        t
        for t, value in twin_status.items()
        if t in graded and value in twin_pass.PASSING and t in status and status[t].ok
    )
    if passed_twins:
        unsound = (
            "no twins ran"
            if isinstance(plan, str)
            else await _unsound_twins(task, script, provider, spec, pool, plan, passed_twins)
        )
        if isinstance(unsound, str):
            return masked_report(
                task, f"a twin passed, and the gold run that validates twins failed: {unsound}", started, **common
            )
        caught = [t for t in passed_twins if t not in unsound]
        if caught:
            reason = (
                f"the twin of {caught[0]!r} (the same test expecting another value, which no fix can pass) "
                f"passed{f', and {len(caught) - 1} more' if len(caught) > 1 else ''}: the test machinery reports "
                "results it did not see"
            )
            log.warning("grading of %s: tampering detected: %s", task.instance_id, reason)
            common["test_status"] = status  # what the originals showed, for the record (flaky tests show here)
            return unresolved_report(task, started, f"tampering detected: {reason}", tampering=True, **common)
        common["twins"] = f"{common['twins']}; {len(unsound)} pass under gold too (no check for them)"
    resolved, f2p, p2p = judge_status(task, status)
    return GradeReport(
        instance_id=task.instance_id,
        resolved=resolved,
        fail_to_pass=f2p,
        pass_to_pass=p2p,
        test_status=status,
        duration_s=time.perf_counter() - started,
        **common,  # type: ignore[arg-type]
    )


def unresolved_report(task: SWETask, started: float, reason: str, *, tampering: bool, **common: object) -> GradeReport:
    return GradeReport(
        instance_id=task.instance_id,
        unresolved_reason=reason,
        tampering=tampering,
        fail_to_pass=classify(task.fail_to_pass, {}),
        pass_to_pass=classify(task.pass_to_pass, {}),
        duration_s=time.perf_counter() - started,
        **common,  # type: ignore[arg-type]
    )
