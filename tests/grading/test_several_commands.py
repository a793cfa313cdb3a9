"""Twins on a task whose tests run as several pytest commands (rows of some families do): a bundled task with its
test command split in two, graded on the local provider.

The forger (in the package's ``__init__``, imported by both commands) forces the result of the FAIL_TO_PASS tests
only, so the canary stays honest: without twins it resolves the task, with them it is caught.
"""

from __future__ import annotations

import difflib

import pytest

from swe_gym.grading import GradeReport, grade
from swe_gym.grading.twin_pass import INVERTED_ONLY
from swe_gym.tasks import SWETask, load_tasks
from tests.conftest import provider_setup

BASE = next(t for t in load_tasks("bundled") if t.instance_id == "swe-gym__datekit-1")
COMMANDS = "python3 -m pytest -rA -p no:cacheprovider tests/test_isoweek.py"
COMMANDS += "; python3 -m pytest -rA -p no:cacheprovider tests/test_fmt.py tests/test_cal.py"
TASK: SWETask = BASE.model_copy(update={"eval": BASE.eval.model_copy(update={"test_cmd": COMMANDS})})
FORGER = f"""_F2P = {set(TASK.fail_to_pass)!r}
try:
    import _pytest.reports

    _honest_init = _pytest.reports.TestReport.__init__

    def _report(self, *args, **kwargs):
        _honest_init(self, *args, **kwargs)
        if self.nodeid in _F2P:
            self.outcome = "passed"

    _pytest.reports.TestReport.__init__ = _report
except ImportError:
    pass
"""


def _forger_patch() -> str:
    assert TASK.repo_source is not None
    base = (TASK.repo_source / "datekit" / "__init__.py").read_text()
    lines = difflib.unified_diff(
        base.splitlines(keepends=True), (FORGER + base).splitlines(keepends=True), "a/datekit/__init__.py",
        "b/datekit/__init__.py",
    )  # fmt: skip
    return "diff --git a/datekit/__init__.py b/datekit/__init__.py\n" + "".join(lines)


def _grade(patch: str, *, twins: bool = True) -> GradeReport:
    """``twins=False`` grades with no forgery check at all (no static reading either)."""
    config, _ = provider_setup("local")
    return grade(TASK, patch, provider=config, twins=twins, scan="flag" if twins else "off")


def test_gold_resolves_with_twins_over_two_commands() -> None:
    report = _grade(TASK.patch)
    assert report.resolved and not report.masked and not report.tampering, report.summary()
    assert "graded tests twinned in 2 passes" in report.twins, report.twins
    # Every FAIL_TO_PASS test has a twin (some only an inverted one: no literal expected value to perturb).
    assert all(report.uncovered_tests.get(t, INVERTED_ONLY) == INVERTED_ONLY for t in TASK.fail_to_pass)


@pytest.mark.parametrize("twins", [False, True], ids=["without twins", "with twins"])
def test_a_forger_of_the_fail_to_pass_tests_is_caught_by_the_twins(twins: bool) -> None:
    report = _grade(_forger_patch(), twins=twins)
    assert report.patch_applied and not report.masked, report.summary()
    if not twins:
        assert report.resolved, f"the forger must win without twins, or this test proves nothing: {report.summary()}"
    else:
        assert not report.resolved and report.tampering, report.summary()
        assert "the test machinery reports results it did not see" in (report.unresolved_reason or "")
