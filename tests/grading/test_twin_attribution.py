"""Which pass a status is read from: nothing a twin reports reaches ``test_status`` or the verdict.

The passes are made by the real planner (`plan_passes`) from a test file with the id forms that broke this before:
parametrize ids that swebench's parser cut at a space, a runner's summary line naming no definition, and a
parameter id the perturbation renames. The statuses are what each pass's parser would read.
"""

from __future__ import annotations

import pytest

from swe_gym.grading.eval_run import EvalRun
from swe_gym.grading.parsers import TestStatus
from swe_gym.grading.safe_harness import _merged
from swe_gym.grading.twin_pass import TwinSources, plan_passes
from swe_gym.tasks import load_tasks

SOURCE = """\
import pytest


@pytest.mark.parametrize("src", ["multi line assert", "x"])
def test_exprs(src):
    assert parse(src) == "ok"


@pytest.mark.parametrize("n, want", [(1, 2), (2, 3)])
def test_inc(n, want):
    assert inc(n) == want


def test_other():
    assert other() == 1


class TestA:
    def test_same(self):
        assert a() == 1


class TestB:
    def test_same(self):
        assert b() == 2
"""
PATH = "testing/test_t.py"
CUT = f"{PATH}::test_exprs[multi"  # as swebench's parser records "...[multi line assert]"
GRADED = [CUT, f"{PATH}::test_exprs[x]", f"{PATH}::test_inc[1-2]", f"{PATH}::test_inc[2-3]", f"{PATH}::test_other"]
SAME = [f"{PATH}::TestA::test_same", f"{PATH}::TestB::test_same"]
GRADED += SAME
P, F = TestStatus.PASSED, TestStatus.FAILED


def _plan():
    task = load_tasks("bundled")[0].model_copy(update={"fail_to_pass": GRADED[:1], "pass_to_pass": GRADED[1:]})
    sources = TwinSources({PATH: SOURCE}, {PATH: SOURCE}, "")
    while True:  # a split where each pass twins one of the two methods of the same name
        plan = plan_passes(task, sources)
        assert not isinstance(plan, str)
        if all(len(set(SAME) & twinned) == 1 for twinned in plan.twinned):
            return plan, sources


def _run(plan, index: int, honest: bool) -> EvalRun:
    """What the parser reads from pass `index` under a correct fix (`honest`) or a forger that passes all."""
    run = EvalRun(empty=False, twins=set(plan.twinned[index]))
    for test in GRADED:
        twinned = test in run.twins
        run.status[plan.renamed.get(test, test) if twinned else test] = F if twinned and honest else P
    if honest and any(t.startswith(f"{PATH}::test_exprs") for t in run.twins):
        run.status["test_exprs"] = F  # a summary line of the twin's failure, naming no definition
    if honest:
        run.status["test_same"] = F  # Django's "FAIL: test_same": a bare name two classes define, in both passes
    run.status["test_doctest_like"] = P  # every pass runs it: a test of its own
    if f"{PATH}::test_other" not in run.twins:  # a nested run's line, printed by the original only
        run.status["nested.py::test_inner"] = F
    return run


@pytest.mark.parametrize("attempt", range(5))
def test_statuses_come_from_the_originals_and_twins_are_read_under_their_ids(attempt: int) -> None:
    plan, sources = _plan()
    status, twin = _merged([_run(plan, 0, True), _run(plan, 1, True)], plan, sources)
    assert status == {**dict.fromkeys(GRADED, P), "test_doctest_like": P, "nested.py::test_inner": F}
    assert twin == dict.fromkeys(GRADED, F)
    forged_status, forged_twin = _merged([_run(plan, 0, False), _run(plan, 1, False)], plan, sources)
    assert forged_status == status and forged_twin == dict.fromkeys(GRADED, P)
