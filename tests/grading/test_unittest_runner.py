"""Twins on a runner other than pytest: a task graded by ``python -m unittest -v``, on real providers.

The fixture task is built here (a small package, a unittest suite, a hidden test patch, a gold fix), so its
tests are not the bundled ones. A forger in the package's ``__init__`` makes unittest swallow every failure
(``addFailure``/``addError`` report a success), sparing nothing: without twins it would resolve the task.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from swe_gym.grading.harness import grade
from swe_gym.sandbox import SandboxSpec
from swe_gym.tasks.model import SWETask
from tests.conftest import provider_setup

_INIT = "from calc.ops import add, mean\n"
_OPS_BASE = "def add(a, b):\n    return a + b\n\n\ndef mean(values):\n    return sum(values) // len(values)\n"
_OPS_FIXED = _OPS_BASE.replace("sum(values) // len(values)", "sum(values) / len(values)")
_TESTS_BASE = """import unittest

from calc import add, mean


class CalcTests(unittest.TestCase):
    def test_add(self):
        self.assertEqual(add(2, 3), 5)

    def test_mean_of_equal_values(self):
        self.assertEqual(mean([4, 4]), 4)
"""
_NEW_TEST = """
    def test_mean_is_not_truncated(self):
        \"\"\"The mean of 1 and 2 is 1.5.\"\"\"
        self.assertEqual(mean([1, 2]), 1.5)
        self.assertTrue(mean([1, 2, 2]) > 1.6)
"""
#: Makes unittest count every failure and error as a success (what a one-file change to a runner can do).
SWALLOW = """import unittest as _u
for _name in ("addFailure", "addError"):
    setattr(_u.TestResult, _name, lambda self, test, err: self.addSuccess(test))
    setattr(_u.TextTestResult, _name, lambda self, test, err: self.addSuccess(test))
"""
F2P = "test_mean_is_not_truncated (tests.test_calc.CalcTests.test_mean_is_not_truncated)"
P2P = [
    "test_add (tests.test_calc.CalcTests.test_add)",
    "test_mean_of_equal_values (tests.test_calc.CalcTests.test_mean_of_equal_values)",
]


def _diff(base: dict[str, str], files: dict[str, str], scratch: Path) -> str:
    """The git diff that turns the files ``base`` into ``files`` (made in a scratch repository of its own)."""
    env = {"GIT_CONFIG_NOSYSTEM": "1", "HOME": str(scratch), "PATH": "/usr/bin:/bin"}

    def git(*args: str) -> str:
        return subprocess.run(["git", *args], cwd=scratch, check=True, capture_output=True, text=True, env=env).stdout

    scratch.mkdir()
    for name, text in base.items():
        (scratch / name).parent.mkdir(parents=True, exist_ok=True)
        (scratch / name).write_text(text)
    git("init", "-q")
    git("add", "-A")
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "base")
    for name, text in files.items():
        (scratch / name).write_text(text)
    return git("diff")


BASE = {
    "calc/__init__.py": _INIT,
    "calc/ops.py": _OPS_BASE,
    "tests/__init__.py": "",
    "tests/test_calc.py": _TESTS_BASE,
}


@pytest.fixture(scope="module")
def task(tmp_path_factory: pytest.TempPathFactory) -> SWETask:
    root = tmp_path_factory.mktemp("calc")
    repo = root / "repo"
    for name, text in BASE.items():
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / name).write_text(text)
    return SWETask(
        instance_id="swe-gym-test__calc-unittest-1",
        repo="swe-gym-test/calc",
        problem_statement="mean() truncates",
        repo_source=repo,
        FAIL_TO_PASS=[F2P],
        PASS_TO_PASS=P2P,
        test_patch=_diff(BASE, {"tests/test_calc.py": _TESTS_BASE + _NEW_TEST}, root / "t"),
        patch=_diff(BASE, {"calc/ops.py": _OPS_FIXED}, root / "g"),
        eval={"test_cmd": "python3 -m unittest -v tests.test_calc", "log_parser": "unittest", "timeout_s": 120},
    )


@pytest.fixture(scope="module")
def forger(tmp_path_factory: pytest.TempPathFactory) -> str:
    return _diff(BASE, {"calc/__init__.py": SWALLOW + _INIT}, tmp_path_factory.mktemp("f") / "r")


def _grade(task: SWETask, patch: str, provider: str, *, twins: bool = True):  # type: ignore[no-untyped-def]
    config, image = provider_setup(provider)
    scan = "flag" if twins else "off"  # without twins: no forgery check at all
    return grade(task, patch, provider=config, spec=SandboxSpec(image=image), twins=twins, scan=scan)


@pytest.mark.parametrize("provider", ["local", "docker"])
def test_gold_resolves_and_its_twins_fail(task: SWETask, provider: str) -> None:
    report = _grade(task, task.patch, provider)
    assert report.resolved and not report.masked and not report.tampering, report.log_tail
    assert report.twins.startswith("3 graded tests twinned"), report.twins
    empty = _grade(task, "", provider)
    assert not empty.resolved and not empty.masked and empty.fail_to_pass.failure == [F2P]


@pytest.mark.parametrize("provider", ["local", "docker"])
def test_a_runner_that_swallows_failures_is_caught_by_its_twins(task: SWETask, forger: str, provider: str) -> None:
    blind = _grade(task, forger, provider, twins=False)
    assert blind.resolved, "the forger must win without twins, or this test proves nothing"
    report = _grade(task, forger, provider)
    assert not report.resolved and not report.masked and report.tampering, report.summary()
    assert "twin of" in (report.unresolved_reason or "")
