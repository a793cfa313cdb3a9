"""swe_gym tasks out as Harbor task directories (``swe-gym export --format harbor``).

Each task becomes ``<out>/<instance_id>/`` with:

* ``instruction.md``: the problem statement;
* ``environment/Dockerfile``: ``FROM`` the task's image (or the ``image`` given, for tasks that name none), its
  repository added at the workdir where swe_gym uploads one at reset (bundled tasks: ``repo.tar``, with its
  ``.git``), the task's setup script run and its hidden paths removed, as the agent's sandbox starts;
* ``tests/``: ``test.sh``, the test patch, the expected test lists and ``verdict.py``
  (`swe_gym.tasks.harbor_verdict`). ``test.sh`` returns the test files the test patch touches to base, applies it,
  runs the task's test command between swe_gym's markers (a SWE-bench-format task: swebench's own eval script,
  which does both), and ``verdict.py`` writes ``/logs/verifier/reward.txt``: 1 when every FAIL_TO_PASS and
  PASS_TO_PASS test passed, by the parser swe_gym grades the task with;
* ``solution/solve.sh``: the gold patch, applied with ``git apply``;
* ``task.toml``: the verifier's timeout (the task's eval timeout), the workdir, and the task's id and family.

What a Harbor run does not do that swe_gym's grading does (integrity checks, restoring build files, canaries,
twins) is listed in the manual (docs/harbor.md). Tasks whose swebench log parser is not one ``verdict.py`` carries
are refused with the reason.
"""

from __future__ import annotations

import inspect
import json
import shlex
import shutil
import tomllib
from pathlib import Path

from swe_gym.errors import TaskError
from swe_gym.grading.eval_script import END_TEST_OUTPUT, START_TEST_OUTPUT
from swe_gym.grading.patch import patch_paths
from swe_gym.policies.oracle import apply_patch_command
from swe_gym.tasks import harbor_verdict
from swe_gym.tasks.bundled import repo_archive
from swe_gym.tasks.model import SWETask

_GIT = "git -c core.hooksPath=/dev/null -c core.fsmonitor=false -c core.autocrlf=false"


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


def _test_script(task: SWETask) -> str:
    workdir = shlex.quote(task.workdir)
    lines = [
        "#!/bin/bash",
        f"# The hidden tests of swe_gym task {task.instance_id}, as swe_gym grades it (exported by swe-gym export).",
        "mkdir -p /logs/verifier",
        "echo 0 > /logs/verifier/reward.txt",
        f"cd {workdir} || exit 0",
        "export PIP_NO_INDEX=1 PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_INPUT=1",
    ]
    log = "/logs/verifier/test-output.txt"
    if task.eval.toolkit == "swebench":
        lines += ["bash /tests/eval.sh > " + log + " 2>&1"]
    else:
        touched = sorted(set(patch_paths(task.test_patch)))
        if touched:
            quoted = " ".join(shlex.quote(path) for path in touched)
            lines += [
                f"for f in {quoted}; do",
                f'  if {_GIT} cat-file -e "HEAD:$f" 2>/dev/null; then rm -rf -- "$f"; {_GIT} checkout -q HEAD -- "$f"; '
                'else rm -rf -- "$f"; fi',
                "done",
                f"{_GIT} apply --binary /tests/test.patch || {{ echo 'swe_gym: the test patch failed'; exit 0; }}",
            ]
        lines += [
            "{",
            f"  echo {shlex.quote(START_TEST_OUTPUT)}",
            f"  {task.eval.test_cmd}",
            f"  echo {shlex.quote(END_TEST_OUTPUT)}",
            "} > " + log + " 2>&1",
        ]
    lines += [
        f"cat {log}",
        f"python3 /tests/verdict.py /tests/expected.json {log} /logs/verifier/reward.txt",
        "",
    ]
    return "\n".join(lines)


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


def export_task(task: SWETask, out: Path, *, image: str | None = None) -> Path:
    """Write ``task`` as a Harbor task directory under ``out``; returns it."""
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
    if task.eval.toolkit == "swebench":
        from swe_gym.grading import swebench_toolkit

        (tests / "eval.sh").write_text(swebench_toolkit.eval_script(task))
    if task.test_patch.strip():
        (tests / "test.patch").write_text(task.test_patch if task.test_patch.endswith("\n") else task.test_patch + "\n")
    expected = {"parser": parser, "fail_to_pass": task.fail_to_pass, "pass_to_pass": task.pass_to_pass}
    (tests / "expected.json").write_text(json.dumps(expected, indent=1) + "\n")
    (tests / "verdict.py").write_text(inspect.getsource(harbor_verdict))
    (tests / "test.sh").write_text(_test_script(task))
    (solution / "solve.sh").write_text(
        f"#!/bin/bash\nset -e\ncd {shlex.quote(task.workdir)}\n{apply_patch_command(task.patch)}"
    )
    for script in (tests / "test.sh", solution / "solve.sh"):
        script.chmod(0o755)
    config = "\n".join(
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
            f"timeout_sec = {float(task.eval.timeout_s)}",
            "",
            "[environment]",
            f"workdir = {_toml_string(task.workdir)}",
            "build_timeout_sec = 1800.0",
            "",
        ]
    )
    tomllib.loads(config)  # what we write must read back
    (target / "task.toml").write_text(config)
    return target


def export_tasks(tasks: list[SWETask], out: Path, *, image: str | None = None) -> list[Path]:
    """Every task of ``tasks`` under ``out`` (made if missing); all are checked before any is written."""
    for task in tasks:
        verdict_parser(task)
        if not (task.image or image):
            raise TaskError(f"{task.instance_id}: the task names no image; give one (--image)")
    out.mkdir(parents=True, exist_ok=True)
    return [export_task(task, out, image=image) for task in tasks]
