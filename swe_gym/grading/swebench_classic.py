"""A classic SWE-bench row's eval script where the installed swebench cannot derive one (5.x).

swebench 5.x grades rows that carry their own ``eval_script``, ``log_parser`` and ``eval_type``; it dropped the
per-repo spec tables from which 4.x derived a classic row's script (repo, version, test patch). For a classic
row under 5.x this module writes the script itself, in the shape SWE-bench images expect (conda env ``testbed``
at ``/opt/miniconda3``, the repository at the workdir), from what the row says and one fact about each
repository: how its own tests run. Django and sympy ship their own runners (``tests/runtests.py``,
``bin/test``); every other repository runs pytest, whose ``-rA`` summary swebench's pytest parser reads.

The reinstall is ``python -m pip install -e .`` (SWE-bench's images install the project editable), which the
grader skips when no build input changed (`swe_gym.grading.eval_plan`). What it does not know, and 4.x's tables
did: per-version details (an older Django's runner flags, a version's environment exports, a repository's own
build flags such as scikit-learn's ``--no-build-isolation``). For scores identical to the leaderboard, grade rows
that carry their script (SWE-bench's 5.x datasets) or use swebench 4.x. A row with SWE-rebench's
``install_config`` gives its own test command, environment commands and reinstall line, used as 4.x uses them.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from typing import Any

from swe_gym.errors import TaskError
from swe_gym.grading.patch import patch_paths
from swe_gym.tasks.model import SWETask

#: The conda env SWE-bench images are built with.
ENV_NAME = "testbed"
#: The reinstall of a classic row: SWE-bench's images hold the project installed editable.
REINSTALL = "python -m pip install -e ."
#: Test-patch paths that are data, not tests to run (swebench leaves the same suffixes out of its directives).
_DATA_SUFFIXES = (".json", ".png", "csv", ".txt", ".md", ".jpg", ".jpeg", ".pkl", ".yml", ".yaml", ".toml")
_HEREDOC = "EOF_swe_gym_test_patch"


@dataclass(frozen=True)
class Runner:
    """How a repository runs its tests: the command, how test files become its arguments, swebench's parser."""

    command: str
    log_parser: str
    modules: bool = False  # Django's runner takes test modules (``admin_views.tests``), not paths
    exports: tuple[str, ...] = ()


PYTEST = Runner("pytest -rA", "parse_log_pytest")
RUNNERS = {
    "django/django": Runner(
        "./tests/runtests.py --verbosity 2 --settings=test_sqlite --parallel 1",
        "parse_log_django",
        modules=True,
        exports=("export LANG=C.UTF-8", "export LC_ALL=C.UTF-8", "export PYTHONIOENCODING=utf8"),
    ),
    "sympy/sympy": Runner(
        "bin/test -C --verbose",
        "parse_log_sympy",
        exports=("export PYTHONWARNINGS='ignore::UserWarning,ignore::SyntaxWarning'",),
    ),
}


def row_spec(task: SWETask) -> dict[str, Any] | None:
    """SWE-rebench's ``install_config`` (swebench's spec format), when the row carries one with a test command."""
    config = task.metadata.get("install_config")
    return config if isinstance(config, dict) and config.get("test_cmd") else None


def runner(task: SWETask) -> Runner:
    return RUNNERS.get(task.repo, PYTEST)


def log_parser(task: SWETask) -> str:
    """The parser's name for a classic row: the row's ``install_config``'s, else its repository runner's."""
    spec = row_spec(task)
    return str(spec["log_parser"]) if spec and spec.get("log_parser") else runner(task).log_parser


def _arguments(test_files: list[str], modules: bool) -> list[str]:
    tests = [path for path in test_files if not path.endswith(_DATA_SUFFIXES)]
    if not modules:
        return tests
    return [path.removesuffix(".py").removeprefix("tests/").replace("/", ".") for path in tests]


def eval_script(task: SWETask) -> str:
    """The eval script: print the tree's state, reset the test files, apply the test patch, run the tests between
    swebench's markers (printed by ``set -x``, so stdout and stderr must be merged), reset the test files."""
    if not task.base_commit or not task.test_patch.strip():
        raise TaskError(f"{task.instance_id}: deriving a classic row's eval script needs base_commit and test_patch")
    spec = row_spec(task)
    run = runner(task)
    if spec:
        run = Runner(str(spec["test_cmd"]), log_parser(task), exports=tuple(map(str, spec.get("eval_commands", []))))
    install = install_command(task)
    files = patch_paths(task.test_patch)
    reset = f"git checkout {task.base_commit} {' '.join(shlex.quote(f) for f in files)}"
    workdir = shlex.quote(task.workdir)
    activate = ["source /opt/miniconda3/bin/activate", f"conda activate {ENV_NAME}"]
    lines = [
        "#!/bin/bash",
        "set -uxo pipefail",
        *activate,
        f"cd {workdir}",
        *run.exports,
        f"git config --global --add safe.directory {workdir}",
        "git status",
        "git show",
        f"git -c core.fileMode=false diff {task.base_commit}",
        *([install] if install else []),
        reset,
        f"git apply -v - <<'{_HEREDOC}'\n{task.test_patch.rstrip(chr(10))}\n{_HEREDOC}",
        ": '>>>>> Start Test Output'",
        " ".join([run.command, *(shlex.quote(a) for a in _arguments(files, run.modules))]),
        ": '>>>>> End Test Output'",
        reset,
    ]
    return "\n".join(lines) + "\n"


def install_command(task: SWETask) -> str | None:
    """The reinstall line the script runs: a row's own ``install_config``'s (if it names one), else `REINSTALL`."""
    spec = row_spec(task)
    if spec is not None:
        return str(spec["install"]) if spec.get("install") else None
    return REINSTALL
