"""A Harbor task's verifier (``toolkit="harbor"``): its ``tests/test.sh`` in a fresh sandbox, its reward file read.

What the verifier gets from the agent is the work tree, as the agent's patch (Harbor's separate verifier mode, and
what every swe_gym grading gives): a fresh sandbox of the task's image, the patch applied through our apply ladder
(paths outside the work tree refused), what it (and the artifacts) changed that steers a Python test run returned
to base (`_return_to_base`), then the verifier's own files put in place anew, whatever the image or the
patch left there: ``/tests`` is the task's ``tests/`` uploaded from the host, ``/logs/verifier`` starts empty.
``test.sh`` runs in the work tree under the verifier's timeout and ``[verifier].env``, from memory (``bash -c`` of
its text, ``$0`` still ``/tests/test.sh``): bash reads a script file as it goes, so code under test that rewrote
the file's rest would otherwise be run by the verifier itself. The reward is read from the sandbox's file system
afterwards (never from what the run printed, which the code under test controls): ``/logs/verifier/reward.json``
(``{"reward": x}``, or one number), else ``reward.txt``, as Harbor reads them; a kind that no file of the task's
``tests/`` names is not read (code under test writing ``reward.json`` beside a verifier that writes ``reward.txt``
gains nothing), and where both kinds are named and there, the lower counts. The verdict is the reward (a fraction
where the task writes one; resolved at 1.0).

The reward is read only once the verifier's process tree is gone: the runner (PID 1 or a subreaper of every
sandbox it runs) kills ``test.sh``'s process group when it ends, then every process of its tree that outlived its
parent (re-parented to the runner), stopping each before it is killed so none forks meanwhile, and a second sweep
after it ends any the first missed. A provider whose sandboxes do not run that runner is masked before anything
runs, with the reason. Two things only the code under test does are checked, each judged against a control run
without the patch (as the safe harness judges its anomalies): a process of the verifier's tree that outlived its
parent (a daemon left to rewrite the reward after ``test.sh`` wrote it, or code under test that killed ``test.sh``
to write the reward itself), ``test.sh``'s own shell ending with a signal's status (above 128: code under test that
wrote the reward, then killed its process group at once, so that ``test.sh``'s shell reaped the runner before it
died and nothing was orphaned), and ``/tests`` not holding the task's files afterwards. Seen with the patch only,
each is tampering (unresolved); seen in the control too, the check is off for that task.

Masked only for the environment: no sandbox, a provider without the runner, the task's tests not uploadable.
Whatever happens once the patch is in (a timeout, a dead sandbox, no reward file or one that is not a finite number)
may be the patch's doing and is unresolved with the reason.

What this cannot add to an opaque ``test.sh``: it cannot tell how ``test.sh`` decides. One that trusts its test
runner's exit status (``pytest && echo 1``) or a report the runner writes is fooled by code under test that runs
inside the runner (a module pytest imports) and ends it early with status 0 (``os._exit(0)``) or makes it report
passes (``Function.runtest`` made a no-op): the runner's own process exits normally, nothing outlives anything, and
``test.sh`` itself writes 1. Only a ``test.sh`` that reads per-test results and checks them by twins and canaries
resists that: the one ``swe-gym export --format harbor`` writes (`swe_gym.tasks.harbor_export`), or the safe
harness when a SWE-bench-style task is loaded as a SWE-bench row.
"""

from __future__ import annotations

import hashlib
import io
import json
import math
import re
import shlex
import tarfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from swe_gym.errors import GradingError, SandboxError
from swe_gym.grading import changes, site_check
from swe_gym.grading.eval_run import LOG_TAIL, EvalRun, masked_report, start_sandbox
from swe_gym.grading.eval_script import restore_script
from swe_gym.grading.patch import GIT_ENV, apply_patch
from swe_gym.grading.protect import restore_set
from swe_gym.grading.report import GradeReport
from swe_gym.sandbox import AsyncSandbox, ExecResult, SandboxSpec
from swe_gym.sandbox.backend import RunnerSandbox
from swe_gym.sandbox.facade import ProviderLike
from swe_gym.sandbox.loop import offload, to_the_end
from swe_gym.sandbox.pool import SandboxPool
from swe_gym.tasks.model import SWETask

REWARD_DIR = "/logs/verifier"
REWARD_FILES = ("reward.json", "reward.txt")
_FRESH = f"rm -rf /tests {REWARD_DIR} && mkdir -p /tests {REWARD_DIR} /logs/agent /logs/artifacts"
#: test.sh's text travels in this variable (unset before its first line runs) to a ``bash -c``.
_SCRIPT_VAR = "SWE_GYM_VERIFIER_SCRIPT"
#: Every file under /tests (bytecode caches aside) with its digest, sorted: compared with the task's own.
_TESTS_DIGESTS = (
    "cd /tests && find . -name __pycache__ -prune -o ! -type d -print0 | LC_ALL=C sort -z | xargs -0 -r sha256sum --"
)
#: Where the work tree is no repository: one, with everything in it, so files can go back to base.
_BASE_COMMIT = (
    f"export {GIT_ENV}; git init -q && git add -A -f && "
    "git -c user.name=swe_gym -c user.email=swe_gym@localhost commit -q --no-verify --allow-empty -m base"
)
#: (provider, image, workdir) -> what the image's interpreters import from outside the work tree.
_ENVIRONMENTS: dict[tuple[str, str, str], site_check.BaseEnvironment] = {}
#: (task id, image, provider) -> the anomaly kinds of its control run (no patch).
_CONTROLS: dict[tuple[str, str, str], set[str]] = {}


def _tests_archive(tests: Path) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as archive:
        archive.add(tests, arcname=".", filter=_owned_by_root)
    return buffer.getvalue()


def _owned_by_root(member: tarfile.TarInfo) -> tarfile.TarInfo:
    member.uid = member.gid = 0
    member.uname = member.gname = ""
    return member


def tests_digests(tests: Path) -> str:
    """What `_TESTS_DIGESTS` prints for the task's own ``tests/``, computed on the host."""
    lines = []
    for path in sorted(tests.rglob("*"), key=lambda p: str(p.relative_to(tests)).encode()):
        relative = path.relative_to(tests)
        if "__pycache__" in relative.parts or (path.is_dir() and not path.is_symlink()):
            continue
        data = path.read_bytes() if path.is_file() and not path.is_symlink() else b""
        lines.append(f"{hashlib.sha256(data).hexdigest()}  ./{relative}")
    return "\n".join(sorted(lines, key=lambda line: line.split("  ", 1)[1].encode()))


#: The most of the agent's artifacts carried to the verifier.
MAX_ARTIFACT_BYTES = 64 << 20
_ARTIFACTS_TAR = "/tmp/.swe_gym-artifacts.tar"


async def collect_artifacts(sandbox: AsyncSandbox, paths: list[str]) -> bytes:
    """The task's artifacts in the agent's sandbox (`swe_gym.tasks.harbor.artifact_paths`), as a tar for the
    verifier's: only regular files and directories under those paths (`keep_artifacts`), whatever the sandbox's
    ``tar`` wrote."""
    relative = " ".join(shlex.quote(path.lstrip("/")) for path in paths)
    command = f"tar -C / -cf {_ARTIFACTS_TAR} --ignore-failed-read -- {relative} 2>/dev/null; true"
    await sandbox.exec(command, cwd="/", timeout=300)
    try:
        data = await sandbox.read_file(_ARTIFACTS_TAR, max_bytes=MAX_ARTIFACT_BYTES)
    except SandboxError:
        return b""  # none of them there (or too big): the verifier gets none
    return await offload(keep_artifacts, data, paths)


def keep_artifacts(data: bytes, paths: list[str]) -> bytes:
    """``data`` (a tar from the agent's sandbox) re-packed with only the regular files and directories under
    ``paths``: no links (which could aim an extraction elsewhere), no devices, no member outside them."""
    roots = [path.strip("/") for path in paths]
    out = io.BytesIO()
    try:
        source = tarfile.open(fileobj=io.BytesIO(data))
    except tarfile.TarError:
        return b""
    count = 0
    with source, tarfile.open(fileobj=out, mode="w") as kept:
        for member in source:
            name = "/".join(part for part in member.name.split("/") if part not in ("", "."))
            inside = any(name == root or name.startswith(root + "/") for root in roots)
            if not inside or ".." in name.split("/") or not (member.isfile() or member.isdir()):
                continue
            member.name = name
            kept.addfile(member, source.extractfile(member) if member.isfile() else None)
            count += 1
    return out.getvalue() if count else b""


def verifier_text(tests: Path) -> str:
    """Every file of the task's ``tests/``, as one text (to find the paths they name)."""
    files = sorted(p for p in tests.rglob("*") if p.is_file() and not p.is_symlink())
    return "\n".join(p.read_bytes().decode("utf-8", "replace") for p in files)


def reward_names(text: str) -> tuple[str, ...]:
    """The reward files the task's tests (their `verifier_text`) name; both when none names either (a helper of its
    own writes one)."""
    return tuple(name for name in REWARD_FILES if name in text) or REWARD_FILES


def parse_reward(name: str, data: bytes) -> float:
    """The reward a Harbor reward file holds; ValueError when it holds none."""
    text = data.decode("utf-8", errors="strict").strip()
    if not text:
        raise ValueError(f"{name} is empty")
    value: Any = json.loads(text) if name.endswith(".json") else float(text)
    if isinstance(value, dict):
        if "reward" in value:
            value = value["reward"]
        elif len(value) == 1:
            (value,) = value.values()
        else:
            raise ValueError(f"{name} names several rewards and none is 'reward': {sorted(value)[:5]}")
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise ValueError(f"{name} holds {value!r}, not a finite number")
    return float(value)


async def _read_reward(sandbox: AsyncSandbox, names: tuple[str, ...]) -> tuple[float | None, str]:
    """The reward of each named kind that is there; the lowest where several are (Harbor takes ``reward.json``
    first): a task whose files name both kinds but whose ``test.sh`` writes one gives code under test the other
    to write, and a second file may then only lower the reward, never raise it."""
    found: dict[str, float] = {}
    for name in names:
        try:
            data = await sandbox.read_file(f"{REWARD_DIR}/{name}", max_bytes=1 << 16)
        except SandboxError:
            continue  # not there (or not a regular file): the next kind
        try:
            found[name] = parse_reward(name, data)
        except (ValueError, UnicodeDecodeError) as exc:
            return None, f"the verifier's {name} holds no reward: {exc}"
    if not found:
        return None, f"the verifier wrote no reward file ({' or '.join(f'{REWARD_DIR}/{n}' for n in names)})"
    name = min(found, key=found.__getitem__)
    return found[name], name


@dataclass
class _Run:
    """One verifier run: the reward (None: none read, ``why``), the anomalies only code can cause, the report's
    common fields."""

    reward: float | None = None
    why: str = ""
    anomalies: dict[str, str] = field(default_factory=dict)
    common: dict[str, Any] = field(default_factory=dict)
    log: str = ""
    masked: str | None = None
    tampered: str | None = None


@dataclass
class _Base:
    """What the verifier's work tree was before the agent's files went in (`_record_base`)."""

    env: site_check.BaseEnvironment
    listed: bool  # its listing was taken (GNU find or python3 in the image)
    git: bool  # its HEAD is the base: the image's own repository, or one we made (git in the image)
    had_git: bool  # the image's work tree is a repository (else ours goes before test.sh runs)


async def grade_harbor(
    task: SWETask,
    patch: str,
    provider: ProviderLike,
    spec: SandboxSpec,
    pool: SandboxPool | None,
    sandbox: AsyncSandbox | None,
    started: float,
    artifacts: bytes | None = None,
) -> GradeReport:
    """Grade ``patch`` (and the task's ``artifacts``, from `collect_artifacts`) with the Harbor task's verifier
    (see the module docstring); never raises."""
    run = await _run_once(task, patch, provider, spec, pool, sandbox, artifacts)
    common = {"harness": "harbor", "empty_patch": not patch.strip(), **run.common}
    if run.masked is not None:
        return masked_report(task, run.masked, started, **common)
    if run.tampered is not None:
        return _report(task, started, None, f"tampering: {run.tampered}", tampering=True, **common)
    if run.anomalies and patch.strip():
        control = await _control(task, provider, spec)
        own = {kind: detail for kind, detail in run.anomalies.items() if kind not in control}
        common["control_run"] = True
        if own:
            reason = "; ".join(own.values())
            return _report(task, started, None, f"tampering: {reason}", tampering=True, **common)
        common["canary"] = f"off for this task: its control run shows the same ({', '.join(sorted(control))})"
    if run.reward is None:
        return _report(task, started, None, run.why, **common)
    return _report(task, started, run.reward, None, eval_log=run.log, **common)


async def _control(task: SWETask, provider: ProviderLike, spec: SandboxSpec) -> set[str]:
    """The anomaly kinds of the verifier run without the patch (cached per task, image and provider)."""
    key = (task.instance_id, spec.image or task.image or "", str(getattr(provider, "name", provider)))
    if key not in _CONTROLS:
        control = await _run_once(task, "", provider, spec, None, None)
        _CONTROLS[key] = set(control.anomalies)
    return _CONTROLS[key]


async def _run_once(
    task: SWETask,
    patch: str,
    provider: ProviderLike,
    spec: SandboxSpec,
    pool: SandboxPool | None,
    sandbox: AsyncSandbox | None,
    artifacts: bytes | None = None,
) -> _Run:
    run = _Run()
    record = EvalRun(empty=not patch.strip())
    sandbox = sandbox or await start_sandbox(task, provider, spec, pool, record)
    if sandbox is None:
        run.masked = record.infra or "no grading sandbox"
        return run
    try:
        await _verify(sandbox, task, task.metadata["harbor"], patch, run, artifacts)
    finally:
        await to_the_end(sandbox.close())
    return run


async def _verify(
    sandbox: AsyncSandbox, task: SWETask, meta: dict[str, Any], patch: str, run: _Run, artifacts: bytes | None
) -> None:
    if not isinstance(sandbox.backend, RunnerSandbox):
        run.masked = (
            f"the {sandbox.provider_name} provider cannot end a command's whole process tree, so a process left by "
            "the verifier's run could rewrite its reward after test.sh wrote it: grade Harbor tasks on a provider "
            "whose sandboxes run swe_gym's runner (local, docker, apptainer, opensandbox)"
        )
        return
    tests = Path(meta["tests_dir"])
    try:
        archive = await offload(_tests_archive, tests)
        text = await offload(verifier_text, tests)
        names = reward_names(text)
        expected = await offload(tests_digests, tests)
        script = (tests / "test.sh").read_bytes()
    except OSError as exc:
        run.masked = f"the task's tests/ could not be read: {exc}"
        return
    clock = time.perf_counter()
    timings: dict[str, float] = {}
    run.common["timings_s"] = timings
    base: _Base | None = None
    if patch.strip() or artifacts:
        try:
            base = await _record_base(sandbox)
        except SandboxError as exc:
            run.masked = f"the verifier's sandbox could not record its work tree: {exc}"
            return
    if patch.strip():
        method, apply_log = await apply_patch(sandbox, patch)
        if method is None:
            run.why, run.common["log_tail"] = "patch did not apply", apply_log[-LOG_TAIL:]
            return
        run.common.update(patch_applied=True, apply_method=method)
    try:
        if artifacts:
            await sandbox.upload_tar(artifacts, "/")
        if base is not None:
            await _return_to_base(sandbox, base, run, text)
            if run.tampered is not None:
                return
        fresh = await sandbox.exec(_FRESH, cwd="/", timeout=120)
        if fresh.exit_code != 0:
            raise SandboxError(f"could not make /tests and {REWARD_DIR}: {fresh.output[-500:]}")
        await sandbox.upload_tar(archive, "/tests")
        await sandbox.exec("chmod +x /tests/test.sh", cwd="/", timeout=60)
    except (SandboxError, GradingError) as exc:  # GradingError: the work tree could not be listed afterwards
        if patch.strip() or artifacts:  # after the agent's files are in, a failure may be theirs (a dead sandbox)
            run.why = f"the verifier's files could not be put in: {exc}"
        else:
            run.masked = f"the verifier's files could not be put in: {exc}"
        return
    timings["apply"] = round(time.perf_counter() - clock, 4)
    clock = time.perf_counter()
    try:
        result, orphans = await _run_test_sh(sandbox, task, meta, script)
    except SandboxError as exc:
        run.why = f"the verifier's sandbox failed during the tests: {exc}"
        return
    timings["tests"] = round(time.perf_counter() - clock, 4)
    run.log = result.output
    run.common.update(eval_exit_code=result.exit_code, log_tail=result.output[-LOG_TAIL:])
    if result.timed_out:
        run.why = f"the verifier timed out after {task.eval.timeout_s:.0f}s"
        return
    if 128 < result.exit_code <= 128 + 64:
        run.anomalies["killed"] = (
            f"test.sh's shell ended with status {result.exit_code}, as a signal ends it (killed before it finished, "
            "after code under test could have written the reward itself)"
        )
    try:
        if orphans:
            run.anomalies["orphans"] = (
                f"{orphans} process(es) of the verifier's run outlived their parent (a daemon left behind "
                "could rewrite the reward after test.sh wrote it)"
            )
        now = await sandbox.exec(_TESTS_DIGESTS, cwd="/", timeout=120)
        if now.output.strip() != expected:
            run.anomalies["tests_changed"] = "/tests did not hold the task's files after the run"
        run.reward, run.why = await _read_reward(sandbox, names)
    except SandboxError as exc:
        run.why = f"the verifier's reward could not be read: {exc}"
        return
    if run.reward is not None:
        run.common["score_source"] = f"{REWARD_DIR}/{run.why}"


async def _record_base(sandbox: AsyncSandbox) -> _Base:
    """Before any of the agent's files: what the environment imports (`site_check`'s probe, cached per image), a
    base commit where the work tree is no repository (so what goes back has a base to go back to), the listing
    that `changes` compares with afterwards."""
    key = (sandbox.provider_name, sandbox.spec.image or "", sandbox.workdir)
    if key not in _ENVIRONMENTS:
        probe = await sandbox.exec(site_check.probe_command(sandbox.workdir), timeout=300)
        _ENVIRONMENTS[key] = site_check.BaseEnvironment.parse(probe.output, "")
    had_git = (await sandbox.exec("test -e .git", timeout=60)).exit_code == 0
    git = had_git or (await sandbox.exec(_BASE_COMMIT, timeout=600)).exit_code == 0
    try:
        await changes.record(sandbox)
        listed = True
    except GradingError:  # neither GNU find nor python3: no Python test runner to steer either
        listed = False
    return _Base(_ENVIRONMENTS[key], listed, git, had_git)


def _deliverable(path: str, workdir: str, named: str) -> bool:
    """Whether the task's tests name ``path``'s top entry (by its absolute path, or a file name with a dot as a
    whole word): what the tests check for is what the task asks the agent to write (``/app/csv.py``,
    ``/app/html/``), not a shadow of the module of that name."""
    top = path.split("/", 1)[0]
    absolute = f"{workdir.rstrip('/')}/{top}"
    if re.search(rf"{re.escape(absolute)}(?![\w.-])", named):
        return True
    return "." in top and re.search(rf"(?<![\w.-]){re.escape(top)}(?![\w.-])", named) is not None


async def _return_to_base(sandbox: AsyncSandbox, base: _Base, run: _Run, named: str) -> None:
    """What the patch and artifacts changed that steers a Python test run goes back to base (`protect`'s rules:
    pytest's configuration, ``conftest.py``, bytecode, packaging metadata, a new top-level module shadowing an
    installed or standard one), as the safe harness does; the work tree's test files stay (the task's tests live
    in ``/tests``). A change in ``.git``, or one with no base to go back to (no git in the image), is tampering.
    Then a repository we made goes."""
    if base.listed:
        changed = await changes.changed_since_record(sandbox)
        machinery = changes.in_git_dir(changed)
        if machinery:
            run.tampered = f"the agent's files changed the work tree's git directory ({', '.join(machinery[:5])})"
            return
        texts = await changes.config_texts(sandbox, changed)  # with no git, no base text: any pytest section is new
        found = restore_set(changed, (), texts.__getitem__, shadowed=base.env.names, own=base.env.own, test_code=False)
        found = {path: why for path, why in found.items() if not _deliverable(path, sandbox.workdir, named)}
        stuck = sorted(path for path in found if changed[path] != "added" and not base.git)
        if stuck:
            run.tampered = f"the patch changed {stuck[0]} ({found[stuck[0]]}), which has no base to go back to here"
            return
        if found:
            run.common.update(restored_test_files=sorted(found), restore_reasons=found)
            result = await sandbox.exec(restore_script(sorted(found)), timeout=300)
            if result.exit_code != 0:
                raise SandboxError(f"could not return files to base: {result.output[-500:]}")
    if not base.had_git:  # the work tree had no .git: ours goes, as the verifier never saw one
        await sandbox.exec("rm -rf .git", timeout=60)


async def _run_test_sh(
    sandbox: AsyncSandbox, task: SWETask, meta: dict[str, Any], script: bytes
) -> tuple[ExecResult, int]:
    """``test.sh`` in the work tree, from memory where its text allows (see the module docstring), as
    ``[verifier].user`` if it names one; then (result, how many processes of its tree outlived their parent) once
    none is left: the runner kills the command's process group and every live orphan before it replies, and a
    second sweep (``true``, orphans tracked) ends any that a first one missed (forking while it killed), so the
    reward is read only after the verifier's process tree is gone."""
    env = {**meta.get("environment_env", {}), **meta.get("verifier_env", {})}
    text = script.decode("utf-8", errors="surrogateescape")
    if b"\0" not in script and len(script) < 100_000:
        env[_SCRIPT_VAR] = f"unset {_SCRIPT_VAR}\n{text}"
        command = f'bash -c "${_SCRIPT_VAR}" /tests/test.sh'
    else:
        command = "bash /tests/test.sh"
    if meta.get("verifier_user"):
        command = f"runuser -u {shlex.quote(meta['verifier_user'])} -- {command}"
    backend = sandbox.backend
    if not isinstance(backend, RunnerSandbox):  # `_verify` masks these before anything runs
        raise SandboxError(f"the {sandbox.provider_name} provider cannot track a command's orphans")
    result = await backend.exec(command, track_orphans=True, timeout=task.eval.timeout_s, env=env)
    sweep = await backend.exec("true", track_orphans=True, timeout=60)
    return result, (result.orphans or 0) + (sweep.orphans or 0)


def _report(task: SWETask, started: float, reward: float | None, reason: str | None, **common: Any) -> GradeReport:
    return GradeReport(
        instance_id=task.instance_id,
        resolved=reward is not None and reward >= 1.0,
        score=reward if reward is not None else 0.0,
        unresolved_reason=reason,
        duration_s=time.perf_counter() - started,
        **common,
    )
