"""A Harbor task's verifier (``toolkit="harbor"``): its ``tests/test.sh`` in a fresh sandbox, its reward file read.

What the verifier gets from the agent is the work tree, as the agent's patch (Harbor's separate verifier mode, and
what every swe_gym grading gives): a fresh sandbox of the task's image, the patch applied through our apply ladder
(paths outside the work tree refused), then the verifier's own files put in place anew, whatever the image or the
patch left there: ``/tests`` is the task's ``tests/`` uploaded from the host, ``/logs/verifier`` starts empty.
``bash /tests/test.sh`` runs in the work tree under the verifier's timeout and ``[verifier].env``; the reward is read
from the sandbox's file system afterwards (never from what the run printed, which the code under test controls):
``/logs/verifier/reward.json`` (``{"reward": x}``, or one number), else ``reward.txt``, as Harbor reads them. A
reward file kind that no file of the task's ``tests/`` names is not read, so code under test that writes
``reward.json`` beside a verifier that writes ``reward.txt`` gains nothing. The verdict is the reward (a fraction
where the task writes one; resolved at 1.0).

Masked only for the environment: no sandbox, the task's tests not uploadable. Whatever happens once the patch is in
(a timeout, a dead sandbox, no reward file or one that is not a finite number) may be the patch's doing and is
unresolved with the reason.
"""

from __future__ import annotations

import io
import json
import math
import shlex
import tarfile
import time
from pathlib import Path
from typing import Any

from swe_gym.errors import SandboxError
from swe_gym.grading.eval_run import LOG_TAIL, EvalRun, masked_report, start_sandbox
from swe_gym.grading.patch import apply_patch
from swe_gym.grading.report import GradeReport
from swe_gym.sandbox import AsyncSandbox, SandboxSpec
from swe_gym.sandbox.facade import ProviderLike
from swe_gym.sandbox.loop import offload, to_the_end
from swe_gym.sandbox.pool import SandboxPool
from swe_gym.tasks.model import SWETask

REWARD_DIR = "/logs/verifier"
REWARD_FILES = ("reward.json", "reward.txt")
_FRESH = f"rm -rf /tests {REWARD_DIR} && mkdir -p /tests {REWARD_DIR} /logs/agent /logs/artifacts"


def _tests_archive(tests: Path) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as archive:
        archive.add(tests, arcname=".", filter=_owned_by_root)
    return buffer.getvalue()


def _owned_by_root(member: tarfile.TarInfo) -> tarfile.TarInfo:
    member.uid = member.gid = 0
    member.uname = member.gname = ""
    return member


def reward_names(tests: Path) -> tuple[str, ...]:
    """The reward files the task's tests name (both when none names either: a helper of its own writes one)."""
    named = set()
    for path in tests.rglob("*"):
        if path.is_file() and not path.is_symlink():
            text = path.read_bytes()
            named.update(name for name in REWARD_FILES if name.encode() in text)
    return tuple(name for name in REWARD_FILES if name in named) or REWARD_FILES


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
    for name in names:
        try:
            data = await sandbox.read_file(f"{REWARD_DIR}/{name}", max_bytes=1 << 16)
        except SandboxError:
            continue  # not there (or not a file): the next kind
        try:
            return parse_reward(name, data), name
        except (ValueError, UnicodeDecodeError) as exc:
            return None, f"the verifier's {name} holds no reward: {exc}"
    return None, f"the verifier wrote no reward file ({' or '.join(f'{REWARD_DIR}/{n}' for n in names)})"


async def grade_harbor(
    task: SWETask,
    patch: str,
    provider: ProviderLike,
    spec: SandboxSpec,
    pool: SandboxPool | None,
    sandbox: AsyncSandbox | None,
    started: float,
) -> GradeReport:
    """Grade ``patch`` with the Harbor task's verifier (see the module docstring); never raises."""
    meta = task.metadata["harbor"]
    run = EvalRun(empty=not patch.strip())
    sandbox = sandbox or await start_sandbox(task, provider, spec, pool, run)
    if sandbox is None:
        return masked_report(task, run.infra or "no grading sandbox", started, harness="harbor")
    try:
        return await _verify(sandbox, task, meta, patch, run, started)
    finally:
        await to_the_end(sandbox.close())


async def _verify(
    sandbox: AsyncSandbox, task: SWETask, meta: dict[str, Any], patch: str, run: EvalRun, started: float
) -> GradeReport:
    common: dict[str, Any] = {"harness": "harbor", "empty_patch": run.empty}
    tests = Path(meta["tests_dir"])
    try:
        archive = await offload(_tests_archive, tests)
        names = await offload(reward_names, tests)
    except OSError as exc:
        return masked_report(task, f"the task's tests/ could not be read: {exc}", started, **common)
    clock = time.perf_counter()
    if not run.empty:
        had_git = (await sandbox.exec("test -e .git", timeout=60)).exit_code == 0
        method, apply_log = await apply_patch(sandbox, patch)
        if method is None:
            return _unresolved(task, started, "patch did not apply", apply_log[-LOG_TAIL:], **common)
        common.update(patch_applied=True, apply_method=method)
        if not had_git:  # the work tree had no .git: the apply's scratch files go, as the verifier never saw them
            await sandbox.exec("rm -rf .git", timeout=60)
    try:
        fresh = await sandbox.exec(_FRESH, cwd="/", timeout=120)
        if fresh.exit_code != 0:
            raise SandboxError(f"could not make /tests and {REWARD_DIR}: {fresh.output[-500:]}")
        await sandbox.upload_tar(archive, "/tests")
        await sandbox.exec("chmod +x /tests/test.sh", cwd="/", timeout=60)
    except SandboxError as exc:
        if not run.empty:  # after the patch's files are in, a failure here may be theirs (a dead sandbox)
            return _unresolved(task, started, f"the verifier's files could not be put in: {exc}", "", **common)
        return masked_report(task, f"the verifier's files could not be put in: {exc}", started, **common)
    timings = {"apply": round(time.perf_counter() - clock, 4)}
    clock = time.perf_counter()
    env = {**meta.get("environment_env", {}), **meta.get("verifier_env", {})}
    command = "bash /tests/test.sh"
    if meta.get("verifier_user"):
        command = f"runuser -u {shlex.quote(meta['verifier_user'])} -- {command}"
    try:
        result = await sandbox.exec(command, timeout=task.eval.timeout_s, env=env)
    except SandboxError as exc:
        return _unresolved(task, started, f"the verifier's sandbox failed during the tests: {exc}", "", **common)
    timings["tests"] = round(time.perf_counter() - clock, 4)
    common.update(eval_exit_code=result.exit_code, timings_s=timings, log_tail=result.output[-LOG_TAIL:])
    if result.timed_out:
        return _unresolved(task, started, f"the verifier timed out after {task.eval.timeout_s:.0f}s", **common)
    try:
        reward, source = await _read_reward(sandbox, names)
    except SandboxError as exc:
        return _unresolved(task, started, f"the verifier's reward could not be read: {exc}", **common)
    if reward is None:
        return _unresolved(task, started, source, **common)
    return GradeReport(
        instance_id=task.instance_id,
        resolved=reward >= 1.0,
        score=reward,
        score_source=f"{REWARD_DIR}/{source}",
        duration_s=time.perf_counter() - started,
        eval_log=result.output,
        **common,
    )


def _unresolved(task: SWETask, started: float, reason: str, log_tail: str | None = None, **common: Any) -> GradeReport:
    if log_tail is not None:
        common["log_tail"] = log_tail
    return GradeReport(
        instance_id=task.instance_id, unresolved_reason=reason, score=0.0, duration_s=time.perf_counter() - started,
        **common,
    )  # fmt: skip
