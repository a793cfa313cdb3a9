"""swe_gym tasks out as Harbor task directories (``swe-gym export --format harbor``).

Each task becomes ``<out>/<instance_id>/`` with:

* ``instruction.md``: the problem statement;
* ``environment/Dockerfile``: ``FROM`` the task's image (or the ``image`` given, for tasks that name none), its
  repository added at the workdir where swe_gym uploads one at reset (bundled tasks: ``repo.tar``, with its
  ``.git``), the task's setup script run and its hidden paths removed, as the agent's sandbox starts;
* ``tests/``: ``test.sh``, which only runs ``verify.py`` (`VERIFY_SCRIPT`) with ``verify.json`` (the test lists,
  the command, the parser) and ``verdict.py`` (`swe_gym.tasks.harbor_verdict`, the log parsers). ``verify.py``
  writes ``/logs/verifier/reward.txt`` itself, after the test processes are gone, from per-test results it reads
  in a section sealed with a nonce drawn at run time, never from an exit status;
* ``solution/solve.sh``: the gold patch, applied with ``git apply``;
* ``task.toml``: the verifier's timeout, the workdir, and the task's id and family.

A task whose repository is on the host (the bundled tasks) gets the safe grader's checks in ``tests/plan.json``
(`pass_plans`): `PASS_PLANS` plans, each the test files of two passes in which each graded test's definition is
replaced by its twin in exactly one (`swe_gym.grading.twin_pass.plan_passes`, on `host_twin_sources`), the twins
that pass under gold (a gold run in the task's image first, `gold_twin_passes`) marked as no check; at run time
``verify.py`` draws one plan and the order of its passes, adds canary tests with fresh names to each, and runs
the test command as an unprivileged user while ``/tests`` is closed to it. Other tasks (SWE-bench-format:
swebench's own eval script in ``tests/eval.sh``) run their eval script once, sealed and contained, without twins
or canaries. What each side enforces is in the manual (docs/harbor.md). Tasks whose log parser is not one
``verdict.py`` carries are refused with the reason.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import inspect
import io
import json
import logging
import os
import posixpath
import shlex
import shutil
import subprocess
import tarfile
import tempfile
import tomllib
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from swe_gym.errors import TaskError
from swe_gym.grading import tamper
from swe_gym.grading.eval_script import END_TEST_OUTPUT, START_TEST_OUTPUT
from swe_gym.grading.patch import apply_patch, patch_paths
from swe_gym.grading.twin_pass import TwinSources, plan_passes, sections
from swe_gym.grading.twins import Choice, files_of
from swe_gym.policies.oracle import apply_patch_command
from swe_gym.sandbox import SandboxSpec
from swe_gym.sandbox.facade import ProviderLike
from swe_gym.sandbox.loop import run_sync, to_the_end
from swe_gym.tasks import harbor_verdict
from swe_gym.tasks.bundled import repo_archive
from swe_gym.tasks.model import SWETask
from swe_gym.tasks.provision import provision

log = logging.getLogger(__name__)

_GIT = "git -c core.hooksPath=/dev/null -c core.fsmonitor=false -c core.autocrlf=false"
#: How many pass plans (random splits of the graded tests' twins between two passes) an export carries; the
#: verifier draws one at run time.
PASS_PLANS = 8
#: The environment of the host's git commands here: no system, global or user configuration.
_HOST_GIT_ENV = {"GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull, "GIT_TERMINAL_PROMPT": "0", "LC_ALL": "C"}
_MODES = {"100644": 0o644, "100755": 0o755}
#: A twin's statuses that, under the gold patch, make it no check (`gold_twin_passes`).
_TWIN_PASSING = frozenset({"PASSED", "XFAIL", "XPASS"})
#: Gold validations run at once by `export_tasks`.
_VALIDATIONS_AT_ONCE = 4


def verdict_parser(task: SWETask) -> str:
    """The `harbor_verdict` parser that reads the task's test log as swe_gym's grading does."""
    if task.eval.toolkit == "swe_gym":
        name = task.eval.log_parser or "pytest"
        if name != "pytest":
            raise TaskError(f"{task.instance_id}: log parser {name!r} is not one an exported verifier carries")
        return name
    if task.eval.toolkit == "swebench":
        from swe_gym.grading import swebench_toolkit
        from swe_gym.grading.swebench_api import harness

        parsers = harness("log_parsers")
        raw = swebench_toolkit._parser(task)
        if swebench_toolkit._eval_type(task) != "pass_and_fail":
            raise TaskError(f"{task.instance_id}: a fail-only task is not exportable (its verdict rule differs)")
        for name, official in [
            ("swebench-pytest", "parse_log_pytest"),
            ("swebench-pytest-options", "parse_log_pytest_options"),
        ]:
            if raw is getattr(parsers, official, None):
                return name
        raise TaskError(
            f"{task.instance_id}: its swebench log parser ({getattr(raw, '__name__', raw)}) is not one an exported "
            "verifier carries (pytest and pytest-options are)"
        )
    raise TaskError(f"{task.instance_id}: a {task.eval.toolkit} task is exported as it is, not converted")


class HostRepository:
    """A task's repository at base on the host (its archive unpacked in a temporary directory), read through
    private indexes: what a test patch leaves at each path, without touching a work tree."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._indexes = 0

    def _git(self, *args: str, data: bytes | None = None, index: Path | None = None) -> bytes:
        env = {**_HOST_GIT_ENV, "PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(self.root)}
        if index is not None:
            env["GIT_INDEX_FILE"] = str(index)
        done = subprocess.run(
            ["git", "-c", "core.hooksPath=/dev/null", *args], cwd=self.root, env=env, input=data, capture_output=True
        )
        if done.returncode != 0:
            raise TaskError(
                f"git {args[0]} on the task's repository failed: {done.stderr.decode(errors='replace')[-500:]}"
            )
        return done.stdout

    def _entries(self, listing: bytes, paths: list[str], *, tree: bool) -> dict[str, tuple[bytes, int] | None]:
        """Each of ``paths`` in ``listing`` (``ls-tree -z``'s if ``tree``, else ``ls-files -s -z``'s), read."""
        found: dict[str, tuple[bytes, int] | None] = dict.fromkeys(paths)
        for record in filter(None, listing.split(b"\0")):
            meta, name = record.split(b"\t", 1)
            fields = meta.decode().split()
            mode, sha = fields[0], fields[2] if tree else fields[1]
            path = name.decode("utf-8", "surrogateescape")
            if path not in found:
                continue
            if mode not in _MODES:
                raise TaskError(f"{path} is not a regular file with the test patch (git mode {mode})")
            found[path] = (self._git("cat-file", "blob", sha), _MODES[mode])
        return found

    def python_files(self) -> list[str]:
        """The repository's Python files at base."""
        listing = self._git("ls-tree", "-r", "-z", "--name-only", "HEAD")
        return [name.decode("utf-8", "surrogateescape") for name in listing.split(b"\0") if name.endswith(b".py")]

    def at_base(self, paths: list[str]) -> dict[str, tuple[bytes, int] | None]:
        """(content, mode) of each of ``paths`` at base, None where there is none."""
        return self._entries(self._git("ls-tree", "-z", "HEAD", "--", *paths), paths, tree=True) if paths else {}

    def after(self, patch: str, paths: list[str]) -> dict[str, tuple[bytes, int] | None]:
        """(content, mode) of each of ``paths`` once ``patch`` is applied to base, None where it leaves none."""
        self._indexes += 1
        index = self.root / ".git" / f"swe_gym-index-{self._indexes}"
        self._git("read-tree", "HEAD", index=index)
        self._git("apply", "--cached", "--binary", "-", data=patch.encode("utf-8", "surrogateescape"), index=index)
        listing = self._git("ls-files", "-s", "-z", "--", *paths, index=index) if paths else b""
        index.unlink()
        return self._entries(listing, paths, tree=False)


@contextmanager
def host_repository(task: SWETask) -> Iterator[HostRepository]:
    """The task's repository at base (``repo_source``'s archive, with its base commit) in a temporary directory."""
    archive, _ = repo_archive(task)
    with tempfile.TemporaryDirectory(prefix="swe_gym-export-") as tmp:
        with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
            tar.extractall(tmp, filter="data")
        yield HostRepository(Path(tmp))


def host_twin_sources(task: SWETask, repo: HostRepository) -> TwinSources:
    """What `swe_gym.grading.twin_pass.read_twin_sources` reads in a sandbox at base, read from the host's copy of
    the repository: the Python files of the test patch and of the graded tests before and after the patch, and
    the patch's other sections as written."""
    by_file = sections(task.test_patch)
    others = files_of([*task.fail_to_pass, *task.pass_to_pass], repo.python_files())
    paths = sorted({*(p for p in by_file if p.endswith(".py")), *(p for p in others if p not in by_file)})
    after, before = repo.after(task.test_patch, paths), repo.at_base(paths)
    post = {p: entry[0].decode("utf-8", "surrogateescape") for p, entry in after.items() if entry is not None}
    base: dict[str, str | None] = {}
    for path in post:
        entry = before.get(path)
        base[path] = None if entry is None else entry[0].decode("utf-8", "surrogateescape")
    verbatim = "".join(text for path, text in sorted(by_file.items()) if path not in post)
    return TwinSources(base, post, verbatim)


def has_twins(task: SWETask) -> bool:
    """Whether an export of ``task`` carries twins: its repository is on the host and it runs one test command."""
    return task.eval.toolkit == "swe_gym" and task.repo_source is not None and bool(task.eval.test_cmd)


@dataclass(frozen=True)
class GoldCheck:
    """What the gold run found (`gold_twin_passes`): the graded tests whose twin passes under gold (no check), for
    the perturbations every plan of the export then uses."""

    unchecked: frozenset[str] = frozenset()
    choices: dict[str, Choice] | None = None


def pass_plans(
    task: SWETask, repo: HostRepository, count: int = PASS_PLANS, gold: GoldCheck = GoldCheck()
) -> tuple[dict[str, Any], str]:
    """``plan.json``'s content (the test files of each pass of ``count`` plans, by content digest, the graded ids
    whose twin runs in each pass and the id it runs under, and the ``unchecked`` ones whose twin passes under
    gold) and what the twins are (or why there are none: then one pass runs the test patch as written). Every plan
    perturbs as the gold run did; they differ in which pass twins which test."""
    unchecked = gold.unchecked
    blobs: dict[str, str] = {}

    def files(found: dict[str, tuple[bytes, int] | None]) -> dict[str, list[Any] | None]:
        out: dict[str, list[Any] | None] = {}
        for path, entry in found.items():
            if entry is None:
                out[path] = None
                continue
            digest = hashlib.sha256(entry[0]).hexdigest()
            blobs[digest] = base64.b64encode(entry[0]).decode()
            out[path] = [digest, entry[1]]
        return out

    touched = sorted(set(patch_paths(task.test_patch)))
    plans: list[dict[str, Any]] = []
    why = ""
    try:
        sources = host_twin_sources(task, repo)
        for _ in range(count):
            plan = plan_passes(task, sources, choices=gold.choices)
            if isinstance(plan, str):
                why = f"none: {plan}"
                break
            paths = sorted({*touched, *patch_paths(plan.patches[0]), *patch_paths(plan.patches[1])})
            passes = [files(repo.after(patch, paths)) for patch in plan.patches]
            twinned = [{test: plan.renamed.get(test, test) for test in sorted(ids)} for ids in plan.twinned]
            plans.append({"files": passes, "twinned": twinned})
            why = f"{sum(map(len, plan.twinned))} graded tests twinned in 2 passes, {count} plans"
            if unchecked:
                why += f"; {len(unchecked)} pass under gold too (no check for them)"
    except Exception as exc:  # a test file the twin maker cannot handle: no twins, said so (as the grader does)
        log.warning("no twins for %s: %s: %s", task.instance_id, type(exc).__name__, exc)
        plans, why = [], f"none: twins could not be made ({type(exc).__name__}: {exc})"
    if not plans:
        blobs.clear()
        plans = [{"files": [files(repo.after(task.test_patch, touched))], "twinned": [{}]}]
    return {"blobs": blobs, "plans": plans, "unchecked": sorted(unchecked)}, why


async def gold_twin_passes(task: SWETask, provider: ProviderLike, image: str | None) -> GoldCheck:
    """The graded tests whose twin passes under the gold patch, which the safe grader finds with a gold run too
    (a twin whose assertions no fix reaches is no check): the task's sandbox at base, the gold patch applied
    through the grader's apply ladder, every twin written in, the test command run once, read by the parser the
    exported verifier uses."""
    with host_repository(task) as repo:
        sources = host_twin_sources(task, repo)
        plan = plan_passes(task, sources, every=True)
        if isinstance(plan, str):
            return GoldCheck()
        paths = sorted({*patch_paths(task.test_patch), *patch_paths(plan.patches[0])})
        files = repo.after(plan.patches[0], paths)
    archive = io.BytesIO()
    with tarfile.open(fileobj=archive, mode="w") as tar:
        for path, entry in files.items():
            if entry is not None:
                member = tarfile.TarInfo(path)
                member.size, member.mode = len(entry[0]), entry[1]
                tar.addfile(member, io.BytesIO(entry[0]))
    gone = " ".join(shlex.quote(path) for path in files)
    sandbox = await provision(task, provider, SandboxSpec(image=task.image or image))
    try:
        method, applied = await apply_patch(sandbox, task.patch)
        if method is None:
            raise TaskError(f"{task.instance_id}: the gold patch does not apply: {applied[-300:]}")
        await sandbox.exec(f"rm -rf -- {gone}", timeout=120)
        await sandbox.upload_tar(archive.getvalue(), sandbox.workdir)
        result = await sandbox.exec(task.eval.test_cmd or "true", timeout=task.eval.timeout_s)
    finally:
        await to_the_end(sandbox.close())
    status = harbor_verdict.parse_pytest(result.output)
    passing = {test for test in plan.twinned[0] if status.get(plan.renamed.get(test, test)) in _TWIN_PASSING}
    return GoldCheck(frozenset(passing), plan.choices)


async def _gold_checks(tasks: list[SWETask], provider: ProviderLike, image: str | None) -> list[GoldCheck]:
    gate = asyncio.Semaphore(_VALIDATIONS_AT_ONCE)

    async def one(task: SWETask) -> GoldCheck:
        async with gate:
            try:
                return await gold_twin_passes(task, provider, image)
            except TaskError:
                raise
            except Exception as exc:  # no sandbox: say what to do
                raise TaskError(
                    f"{task.instance_id}: the gold run that validates its twins failed ({type(exc).__name__}: {exc}); "
                    "give a provider that runs the task's image (--provider), or export without twins (--no-twins)"
                ) from exc

    return list(await asyncio.gather(*(one(task) for task in tasks)))


def canary_dir(test_cmd: str) -> str | None:
    """Where the safe grader would put its canary file for ``test_cmd`` (beside the first test file a lone pytest
    command names: `swe_gym.grading.tamper.add_canary`), or None where it adds none."""
    nonce = "export"
    script = f"echo {shlex.quote(START_TEST_OUTPUT)}\n{test_cmd}\necho {shlex.quote(END_TEST_OUTPUT)}\n"
    _, canary = tamper.add_canary(tamper.seal_markers(script, nonce), nonce)
    return None if canary is None else posixpath.dirname(canary.path)


def _eval_script(task: SWETask) -> str:
    """The eval script of a task graded in one pass: swebench's own, or (a swe_gym task whose repository is only in
    its image) the test files the test patch touches returned to base, the patch applied, the command between
    the markers."""
    if task.eval.toolkit == "swebench":
        from swe_gym.grading import swebench_toolkit

        return swebench_toolkit.eval_script(task)
    lines = ["#!/bin/bash", f"cd {shlex.quote(task.workdir)} || exit 1"]
    touched = sorted(set(patch_paths(task.test_patch)))
    if touched:
        quoted = " ".join(shlex.quote(path) for path in touched)
        lines += [
            f"for f in {quoted}; do",
            f'  if {_GIT} cat-file -e "HEAD:$f" 2>/dev/null; then rm -rf -- "$f"; {_GIT} checkout -q HEAD -- "$f"; '
            'else rm -rf -- "$f"; fi',
            "done",
            f"{_GIT} apply --binary /tests/test.patch || {{ echo 'swe_gym: the test patch failed'; exit 1; }}",
        ]
    lines += [
        f"echo {shlex.quote(START_TEST_OUTPUT)}",
        task.eval.test_cmd or "true",
        f"echo {shlex.quote(END_TEST_OUTPUT)}",
    ]
    return "\n".join(lines) + "\n"


def _test_script(task: SWETask) -> str:
    return "\n".join(
        [
            "#!/bin/bash",
            f"# The hidden tests of swe_gym task {task.instance_id}, as swe_gym grades it (swe-gym export): verify.py",
            "# runs them and writes the reward itself once they are gone (docs/harbor.md).",
            "mkdir -p /logs/verifier",
            "echo 0 > /logs/verifier/reward.txt",
            "export PIP_NO_INDEX=1 PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_INPUT=1",
            "exec python3 -I /tests/verify.py",
            "",
        ]
    )


def _dockerfile(task: SWETask, image: str) -> str:
    lines = [f"FROM {image}"]
    workdir = task.workdir
    if task.repo_source is not None:
        lines += [f"ADD repo.tar {workdir}"]
    lines += [f"WORKDIR {workdir}"]
    if task.setup_script:
        lines += [
            "COPY setup.sh /tmp/swe_gym_setup.sh",
            "RUN bash /tmp/swe_gym_setup.sh && rm -f /tmp/swe_gym_setup.sh",
        ]
    if task.hidden_paths:
        lines += ["RUN rm -rf -- " + " ".join(shlex.quote(path) for path in task.hidden_paths)]
    return "\n".join(lines) + "\n"


def _toml_string(text: str) -> str:
    return json.dumps(text)  # a TOML basic string is JSON's string syntax for these


def export_task(
    task: SWETask,
    out: Path,
    *,
    image: str | None = None,
    provider: ProviderLike = "docker",
    twins: bool = True,
    gold: GoldCheck | None = None,
) -> Path:
    """Write ``task`` as a Harbor task directory under ``out``; returns it. A task with twins (`has_twins`) has
    them validated by a gold run on ``provider`` first (`gold_twin_passes`), unless ``gold`` gives its
    result; ``twins=False`` exports it without (its canary, sealed section and contained run remain)."""
    base = task.image or image
    if not base:
        raise TaskError(f"{task.instance_id}: the task names no image; give one (--image)")
    if not task.patch.strip():
        raise TaskError(f"{task.instance_id}: the task has no gold patch for solution/solve.sh")
    parser = verdict_parser(task)
    target = out / task.instance_id.replace("/", "__")
    if target.exists():
        shutil.rmtree(target)
    environment, tests, solution = target / "environment", target / "tests", target / "solution"
    for directory in (environment, tests, solution):
        directory.mkdir(parents=True)
    (target / "instruction.md").write_text(task.problem_statement.rstrip() + "\n")
    if task.repo_source is not None:
        archive, _ = repo_archive(task)
        (environment / "repo.tar").write_bytes(archive)
    if task.setup_script:
        (environment / "setup.sh").write_text(f"set -e\ncd {shlex.quote(task.workdir)}\n{task.setup_script}\n")
    (environment / "Dockerfile").write_text(_dockerfile(task, base))
    config: dict[str, Any] = {
        "parser": parser,
        "workdir": task.workdir,
        "timeout_s": float(task.eval.timeout_s),
        "fail_to_pass": task.fail_to_pass,
        "pass_to_pass": task.pass_to_pass,
    }
    passes = 1
    if has_twins(task):
        if twins and gold is None:
            (gold,) = run_sync(_gold_checks([task], provider, image))
        with host_repository(task) as repo:
            plan, what = pass_plans(task, repo, PASS_PLANS if twins else 0, gold or GoldCheck())
        passes = len(plan["plans"][0]["files"])
        config.update(mode="passes", test_cmd=task.eval.test_cmd, canary_dir=canary_dir(task.eval.test_cmd))
        config["twins"] = what if twins else "off (--no-twins)"
        (tests / "plan.json").write_text(json.dumps(plan, separators=(",", ":")) + "\n")
    else:
        config.update(mode="script", twins="none: the task's repository is not on the host")
        if task.eval.toolkit != "swebench" and task.test_patch.strip():
            patch = task.test_patch if task.test_patch.endswith("\n") else task.test_patch + "\n"
            (tests / "test.patch").write_text(patch)
        (tests / "eval.sh").write_text(_eval_script(task))
    (tests / "verify.json").write_text(json.dumps(config, indent=1) + "\n")
    (tests / "verify.py").write_text(VERIFY_SCRIPT)
    (tests / "verdict.py").write_text(inspect.getsource(harbor_verdict))
    (tests / "test.sh").write_text(_test_script(task))
    (solution / "solve.sh").write_text(
        f"#!/bin/bash\nset -e\ncd {shlex.quote(task.workdir)}\n{apply_patch_command(task.patch)}"
    )
    for script in (tests / "test.sh", solution / "solve.sh"):
        script.chmod(0o755)
    settings = "\n".join(
        [
            'schema_version = "1.1"',
            "",
            "[task]",
            f"name = {_toml_string('swe-gym/' + task.instance_id.replace('/', '__'))}",
            f"description = {_toml_string(f'swe_gym task {task.instance_id} ({task.family}, {task.repo})')}",
            "",
            "[metadata]",
            f"swe_gym_instance_id = {_toml_string(task.instance_id)}",
            f"swe_gym_family = {_toml_string(task.family)}",
            f"repo = {_toml_string(task.repo)}",
            "",
            "[verifier]",
            f"timeout_sec = {float(passes * task.eval.timeout_s + 120)}",
            "",
            "[environment]",
            f"workdir = {_toml_string(task.workdir)}",
            "build_timeout_sec = 1800.0",
            "",
        ]
    )
    tomllib.loads(settings)  # what we write must read back
    (target / "task.toml").write_text(settings)
    return target


def export_tasks(
    tasks: list[SWETask],
    out: Path,
    *,
    image: str | None = None,
    provider: ProviderLike = "docker",
    twins: bool = True,
) -> list[Path]:
    """Every task of ``tasks`` under ``out`` (made if missing); all are checked, and the twins of those that have
    them validated by gold runs on ``provider`` (a few at once), before any is written."""
    for task in tasks:
        verdict_parser(task)
        if not (task.image or image):
            raise TaskError(f"{task.instance_id}: the task names no image; give one (--image)")
    twinned = [task for task in tasks if twins and has_twins(task)]
    found = dict(zip((t.instance_id for t in twinned), run_sync(_gold_checks(twinned, provider, image)), strict=True))
    out.mkdir(parents=True, exist_ok=True)
    return [
        export_task(task, out, image=image, provider=provider, twins=twins, gold=found.get(task.instance_id))
        for task in tasks
    ]


#: ``tests/verify.py`` of every exported task: the verifier ``test.sh`` runs (standard library only, Python 3.6
#: on; see its docstring). Tested as a module in tests/tasks/test_harbor_export.py.
VERIFY_SCRIPT = r'''"""The verifier of a task exported by ``swe-gym export --format harbor``, run by ``tests/test.sh``.

Standard library only (any ``python3`` from 3.6 on), run as ``python3 -I /tests/verify.py``. It reads everything
it needs from ``/tests`` first (``verify.json``, ``plan.json``, ``verdict.py``), then runs the task's tests and
writes ``/logs/verifier/reward.txt`` itself, once, after every process of the test run is gone:

* ``"passes"`` (tasks whose test files are known at export): one of the exported pass plans, drawn at random
  here, each pass the test files written into the work tree (each graded test's definition replaced by its twin
  in exactly one pass), a canary file with fresh random names added to the test command, the command run as an
  unprivileged user (uid 65534) in a session of its own, its output read through a pipe between markers with a
  fresh nonce. ``/tests`` is closed to that user while the tests run.
* ``"script"`` (SWE-bench-format tasks): their eval script, its markers sealed with a fresh nonce, in a session
  of its own (as root: such a script installs and checks files out).

A pass counts only when its sealed section is whole: each marker once, pytest's final summary in it and no
result after it, the runner's exit status the one the canary implies, the canary right. The reward is 1 when
every FAIL_TO_PASS and PASS_TO_PASS test passed in the pass that ran its original and no twin passed where its
original did; anything else (a missing or early-ended section, a timeout, a process that would not end) is 0.
"""

import base64
import json
import os
import random
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

TESTS = "/tests"
REWARD_DIR = "/logs/verifier"
TEST_UID = 65534
START = ">>>>> Start Test Output"
END = ">>>>> End Test Output"
OK = ("PASSED", "XFAIL")
TWIN_PASSING = ("PASSED", "XFAIL", "XPASS")
MAX_OUTPUT = 64 << 20
_PR_SET_DUMPABLE = 4
_PR_SET_CHILD_SUBREAPER = 36
_PR_SET_NO_NEW_PRIVS = 38
#: pytest's last line: ``==== 2 failed, 9 passed in 0.12s ====`` (``-q``: without the rules; pytest < 5: seconds).
_SUMMARY = re.compile(
    r"^=*\s*(?:\d+ [a-z]+|no tests ran)(?:, \d+ [a-z]+)*(?: in [\d.]+ ?s(?:econds)?)(?: \([^)]*\))?\s*=*$",
    re.MULTILINE,
)
_MARKER_LINE = re.compile(
    r"^(?P<lead>\s*(?::|echo)\s+)(?P<q>['\"]?)(?P<marker>" + re.escape(START) + "|" + re.escape(END) + r")(?P=q)",
    re.MULTILINE,
)
_WORDS = ("parse", "render", "format", "merge", "split", "encode", "decode", "resolve", "update", "lookup")
_NOUNS = ("value", "token", "entry", "record", "option", "buffer", "header", "config", "result", "range")

try:
    import ctypes

    _LIBC = ctypes.CDLL(None, use_errno=True)
except (ImportError, OSError):  # no ctypes: no prctl (best effort)
    _LIBC = None


def _prctl(option, value):
    if _LIBC is not None:
        try:
            _LIBC.prctl(option, value, 0, 0, 0)
        except Exception:
            pass


def _read(path, binary=False):
    with open(path, "rb" if binary else "r") as handle:
        return handle.read()


def _remove(path):
    """Whatever is at ``path`` (a link is removed, never followed)."""
    try:
        if os.path.isdir(path) and not os.path.islink(path):
            shutil.rmtree(path)
        else:
            os.unlink(path)
    except FileNotFoundError:
        pass


# --- the test processes: started alone, ended to the last one -------------------------------------------------


def _drop_privileges():
    """In the test command's child (after its setsid): the unprivileged user, no way back (no setuid binaries)."""
    os.setgroups([])
    os.setgid(TEST_UID)
    os.setuid(TEST_UID)
    _prctl(_PR_SET_NO_NEW_PRIVS, 1)


def _processes():
    """{pid: (ppid, uids, state)} of every process we can see."""
    found = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            status = _read(f"/proc/{name}/status")
        except OSError:
            continue
        fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
        try:
            ppid = int(fields["PPid"])
            uids = [int(u) for u in fields["Uid"].split()]
            state = fields["State"].split()[0]
        except (KeyError, ValueError, IndexError):
            continue
        found[int(name)] = (ppid, uids, state)
    return found


def _leftovers(isolated):
    """The live processes of the test run: our descendants, and (isolated) every process of the test user."""
    table = _processes()
    me = os.getpid()
    children = {}
    for pid, (ppid, _, _) in table.items():
        children.setdefault(ppid, []).append(pid)
    ours, todo = set(), [me]
    while todo:
        for child in children.get(todo.pop(), []):
            if child not in ours:
                ours.add(child)
                todo.append(child)
    if isolated:
        ours.update(pid for pid, (_, uids, _) in table.items() if TEST_UID in uids)
    ours.discard(me)
    return sorted(pid for pid in ours if table.get(pid, (0, [], "Z"))[2] not in ("Z", "X"))


def _reap():
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def _kill_as_test_user():
    """kill(-1, SIGKILL) from the test user: every process of it, wherever it went (a new session, a daemon)."""
    pid = os.fork()
    if pid == 0:
        try:
            os.setgid(TEST_UID)
            os.setuid(TEST_UID)
            os.kill(-1, signal.SIGKILL)
        finally:
            os._exit(0)
    try:
        os.waitpid(pid, 0)
    except ChildProcessError:
        pass


def can_drop_privileges():
    """Whether this process may start the tests as the test user (root, with the capabilities to change user)."""
    if os.geteuid() != 0:
        return False
    pid = os.fork()
    if pid == 0:
        try:
            _drop_privileges()
        except Exception:
            os._exit(1)
        os._exit(0)
    _, status = os.waitpid(pid, 0)
    return os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0


def end_test_processes(session, isolated):
    """Stop and kill the test run's processes until none is left; False when some would not go."""
    for _ in range(500):
        if session:
            try:
                os.killpg(session, signal.SIGKILL)
            except OSError:
                pass
        if isolated:
            _kill_as_test_user()
        _reap()
        alive = _leftovers(isolated)
        if not alive:
            return True
        for sig in (signal.SIGSTOP, signal.SIGKILL):
            for pid in alive:
                try:
                    os.kill(pid, sig)
                except OSError:
                    pass
        time.sleep(0.005)
        _reap()
    return not _leftovers(isolated)


def _clean_shared(uid):
    """Between passes: what the test user left in the world-writable directories goes."""
    for folder in ("/tmp", "/var/tmp", "/dev/shm"):
        try:
            names = os.listdir(folder)
        except OSError:
            continue
        for name in names:
            path = os.path.join(folder, name)
            try:
                if os.lstat(path).st_uid == uid:
                    _remove(path)
            except OSError:
                pass


def run_contained(command, cwd, timeout, isolated):
    """``bash -c command`` in a session of its own (as the test user where ``isolated``), its output read through
    a pipe: (output, exit status, timed out, truncated, every process ended)."""
    home = tempfile.mkdtemp(prefix="swe_gym-home-")
    env = dict(os.environ, HOME=home)
    if isolated:
        os.chown(home, TEST_UID, TEST_UID)
        env.update(USER="nobody", LOGNAME="nobody")
    proc = subprocess.Popen(
        ["bash", "-c", command],
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
        preexec_fn=_drop_privileges if isolated else None,
        close_fds=True,
    )
    chunks, size, truncated = [], [0], [False]

    def read():
        while True:
            chunk = proc.stdout.read1(1 << 16) if hasattr(proc.stdout, "read1") else proc.stdout.read(1 << 16)
            if not chunk:
                return
            if size[0] + len(chunk) > MAX_OUTPUT:
                truncated[0] = True
                continue
            size[0] += len(chunk)
            chunks.append(chunk)

    reader = threading.Thread(target=read)
    reader.daemon = True
    reader.start()
    timed_out = False
    try:
        status = proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        timed_out = True
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except OSError:
            pass
        status = proc.wait()
    ended = end_test_processes(proc.pid, isolated)
    reader.join(10)
    if reader.is_alive():  # someone still holds the pipe: the section is not whole
        ended = False
    shutil.rmtree(home, ignore_errors=True)
    text = b"".join(chunks).decode("utf-8", "replace")
    return text, status, timed_out, truncated[0], ended


# --- one reading of each pass's output -------------------------------------------------------------------------


def sealed_section(log, nonce):
    """(the text between the markers sealed with ``nonce``, or None; what is wrong with them, or None)."""
    start, end = START + " " + nonce, END + " " + nonce
    if log.count(start) != 1 or log.count(end) != 1:
        return None, "the sealed markers do not appear exactly once each"
    begin = log.find("\n", log.find(start))
    finish = log.find(end, begin)
    if begin < 0 or finish < 0:
        return None, "the sealed section is not whole"
    text = log[begin + 1 : finish]
    return text[: text.rfind("\n") + 1] if "\n" in text else "", None


def normalize(text):
    """Lines split wherever Python sees a line end, joined by LF: the parser and every check read this text."""
    return "".join(line + "\n" for line in text.splitlines())


def _names(test, function):
    return re.search(r"(^|[:.\s])" + re.escape(function) + r"($|[\s(\[])", test) is not None


def make_canary(rng, directory):
    """A file of two tests with fresh random names: ``passing`` must pass, ``failing`` must fail."""

    def name():
        return f"test_{rng.choice(_WORDS)}_{rng.choice(_NOUNS)}_{rng.getrandbits(24):06x}"

    passing, failing = name(), name()
    while failing == passing:
        failing = name()
    a, b = rng.randint(10, 999), rng.randint(10, 999)
    wrong = a * b + rng.randint(1, 9)
    source = (
        f"def {passing}():\n    assert {a} + {b} == {a + b}\n\n\ndef {failing}():\n    assert {a} * {b} == {wrong}\n"
    )
    name = f"test_{rng.choice(_NOUNS)}_{rng.getrandbits(32):08x}.py"
    path = directory.strip("/") + "/" + name if directory.strip("/") else name
    return {"path": path, "source": source, "passing": passing, "failing": failing}


def judge_pass(output, exit_status, nonce, parse, canary):
    """(each test's status, what is wrong with this pass or None) from the output of one pass; ``exit_status``
    None: not the test runner's own (an eval script's), not checked."""
    section, wrong = sealed_section(output, nonce)
    if wrong:
        return {}, wrong
    section = normalize(section)
    summaries = list(_SUMMARY.finditer(section))
    if not summaries:
        return {}, "the test run ended before pytest's final summary"
    if summaries:
        late = parse(section[summaries[-1].end() :])
        if late:
            return {}, f"test results printed after pytest's final summary: {min(late)[:120]!r}"
    status = parse(section)
    if canary is not None:
        if exit_status != 1:
            return {}, f"pytest exited {exit_status}, where its failing canary makes it exit 1"
        seen = {}
        for key in ("passing", "failing"):
            seen[key] = [s for t, s in status.items() if _names(t, canary[key])]
        if not seen["passing"] or not seen["failing"]:
            return {}, "the canary tests are missing from the test output"
        if any(s not in OK for s in seen["passing"]) or any(s in OK for s in seen["failing"]):
            return {}, "a canary test got the wrong result (the test machinery reports what it did not see)"
        status = {t: s for t, s in status.items() if not (_names(t, canary["passing"]) or _names(t, canary["failing"]))}
    elif exit_status is not None and exit_status not in (0, 1):
        return {}, f"pytest exited {exit_status} (not a finished run)"
    return status, None


def decide(graded, passes, unchecked=()):
    """(reward, why) from each pass's (status, problem, {graded id whose twin ran in it: the id the twin ran
    under}); the twins of ``unchecked`` (they pass under gold) are no check."""
    for _, problem, _ in passes:
        if problem:
            return 0, problem
    status, twin = {}, {}
    for run_status, _, twinned in passes:
        shown = set(twinned.values())
        for test, value in run_status.items():
            if test in twinned or test in shown:
                continue
            if test not in status or (status[test] in OK and value not in OK):
                status[test] = value
        for test, seen in twinned.items():
            if seen in run_status:
                twin[test] = run_status[seen]
    caught = [t for t in graded if t not in unchecked and twin.get(t) in TWIN_PASSING and status.get(t) in OK]
    if caught:
        more = f", and {len(caught) - 1} more" if len(caught) > 1 else ""
        return 0, f"tampering: the twin of {caught[0]!r} passed beside its original{more}"
    failed = [t for t in graded if status.get(t) not in OK]
    if failed:
        return 0, "not resolved: " + ", ".join(failed[:10])
    return 1, "resolved"


# --- files ------------------------------------------------------------------------------------------------------


def install_files(workdir, files, blobs):
    """Each test file of the pass written (or removed) at its path in the work tree, no link followed: a link or
    file where a directory belongs is replaced by the directory."""
    for path, entry in sorted(files.items()):
        parts = [p for p in path.split("/") if p not in ("", ".")]
        if not parts or ".." in parts:
            raise ValueError(f"bad path in the plan: {path!r}")
        here = workdir
        for part in parts[:-1]:
            here = os.path.join(here, part)
            if os.path.islink(here) or (os.path.lexists(here) and not os.path.isdir(here)):
                _remove(here)
            if not os.path.lexists(here):
                os.mkdir(here, 0o755)
        target = os.path.join(here, parts[-1])
        _remove(target)
        if entry is not None:
            sha, mode = entry
            fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), mode)
            with os.fdopen(fd, "wb") as handle:
                handle.write(base64.b64decode(blobs[sha]))
            os.chmod(target, mode)


def write_reward(value):
    """The reward, written once by this process: whatever is at either reward path goes first."""
    os.makedirs(REWARD_DIR, exist_ok=True)
    for name in ("reward.json", "reward.txt"):
        _remove(os.path.join(REWARD_DIR, name))
    temporary = os.path.join(REWARD_DIR, f".reward.{os.getpid()}")
    _remove(temporary)
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o644)
    with os.fdopen(fd, "w") as handle:
        handle.write(f"{value}\n")
    os.rename(temporary, os.path.join(REWARD_DIR, "reward.txt"))


def seal(script, nonce):
    """``script`` with each marker line's marker followed by ``nonce`` (as swe_gym's grader seals its own)."""
    return _MARKER_LINE.sub(
        lambda m: m.group("lead") + m.group("q") + m.group("marker") + " " + nonce + m.group("q"), script
    )


# --- the run ----------------------------------------------------------------------------------------------------


def run_passes(config, plan, parse, rng, isolated, logs):
    workdir = config["workdir"]
    chosen = plan["plans"][rng.randrange(len(plan["plans"]))]
    passes = list(zip(chosen["files"], chosen["twinned"]))
    rng.shuffle(passes)
    results = []
    for number, (files, twinned) in enumerate(passes):
        if isolated:
            _clean_shared(TEST_UID)
        install_files(workdir, files, plan["blobs"])
        command, canary = config["test_cmd"], None
        if config.get("canary_dir") is not None:
            canary = make_canary(rng, config["canary_dir"])
            blob = base64.b64encode(canary["source"].encode()).decode()
            install_files(workdir, {canary["path"]: ["canary", 0o644]}, {"canary": blob})
            command += " " + shlex.quote(canary["path"])
        nonce = f"{rng.getrandbits(128):032x}"
        text, status, timed_out, truncated, ended = run_contained(command, workdir, config["timeout_s"], isolated)
        if canary is not None:
            _remove(os.path.join(workdir, canary["path"]))
        body = text if text.endswith("\n") or not text else text + "\n"
        log = f"{START} {nonce}\n{body}{END} {nonce}\n"
        logs.append(f"swe_gym pass {number + 1} ({len(twinned)} twins), exit {status}:\n{log}")
        results.append((*judged(log, status, nonce, parse, canary, timed_out, truncated, ended, config), twinned))
    return results


def judged(log, status, nonce, parse, canary, timed_out, truncated, ended, config):
    """(status, problem) of one pass."""
    if not ended:
        return {}, "processes of the test run could not be ended"
    if timed_out:
        return {}, f"the tests timed out after {config['timeout_s']}s"
    if truncated:
        return {}, f"the test output passed {MAX_OUTPUT} bytes"
    return judge_pass(log, status, nonce, parse, canary)


def run_script(config, script, parse, rng, logs):
    nonce = f"{rng.getrandbits(128):032x}"
    command = seal(script, nonce)
    text, status, timed_out, truncated, ended = run_contained(command, config["workdir"], config["timeout_s"], False)
    logs.append(f"swe_gym eval script, exit {status}:\n{text}")
    return [(*judged(text, None, nonce, parse, None, timed_out, truncated, ended, config), {})]


def main():
    _prctl(_PR_SET_DUMPABLE, 0)  # our memory (the plan) is not the test user's to read
    _prctl(_PR_SET_CHILD_SUBREAPER, 1)  # whatever the tests leave running is re-parented to us
    config = json.loads(_read(os.path.join(TESTS, "verify.json")))
    plan = json.loads(_read(os.path.join(TESTS, "plan.json"))) if config["mode"] == "passes" else None
    script = _read(os.path.join(TESTS, "eval.sh")) if config["mode"] == "script" else None
    verdict = {"__name__": "swe_gym_verdict"}
    exec(compile(_read(os.path.join(TESTS, "verdict.py")), os.path.join(TESTS, "verdict.py"), "exec"), verdict)
    parse = verdict["PARSERS"][config["parser"]]
    rng = random.SystemRandom()
    write_reward(0)
    isolated = config["mode"] == "passes" and can_drop_privileges()
    tests_mode = os.stat(TESTS).st_mode & 0o7777
    logs = []
    try:
        if isolated:
            os.chmod(TESTS, 0o700)  # the plan (which definition is a twin in which pass) is ours alone
        if config["mode"] == "passes":
            results = run_passes(config, plan, parse, rng, isolated, logs)
        else:
            results = run_script(config, script, parse, rng, logs)
        unchecked = set(plan.get("unchecked", ())) if plan else set()
        reward, why = decide(config["fail_to_pass"] + config["pass_to_pass"], results, unchecked)
    except Exception as exc:  # a failure of ours (or of a file the tests broke): no reward
        reward, why = 0, f"the verifier failed: {type(exc).__name__}: {exc}"
    if not end_test_processes(None, isolated):
        reward, why = 0, "processes of the test run could not be ended"
    try:
        os.chmod(TESTS, tests_mode)
    except OSError:
        pass
    output = os.path.join(REWARD_DIR, "test-output.txt")
    _remove(output)
    with open(output, "w") as handle:
        handle.write("\n".join(logs))
    write_reward(reward)
    print("\n".join(logs))
    print(f"swe_gym verdict: reward {reward} ({why})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
'''
