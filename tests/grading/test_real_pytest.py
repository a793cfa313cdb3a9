"""The safe grader's verdicts are the official harness's on a real pytest row: SWE-bench's pytest-dev__pytest-11143.

``benchmarks/pytest_image.py`` rebuilds the row from PyPI (pytest 7.4.0's sdist at the row's base state, the fix
and the test as in the real row; PASS_TO_PASS found by running, the same 114 ids as the real row's). Its graded
file's parametrized ids carry spaces, commas and an escaped newline
(``test_get_assertion_exprs[multi line assert with list continuation]``), which swebench's pytest parser cuts at
the first space: the row lists ``test_get_assertion_exprs[multi``, and two ids share ``[assertion``. Its inner
pytester runs print their own summary lines (``FAILED test_hook_call.py::test_fails``) into the log too.

Whatever the ids look like, the default grader (``harness="safe"``, twins on) must reach the official harness's
verdict from the same tests: for the gold patch, the empty patch and a wrong patch (the fix, plus a slip in
``_get_assertion_exprs`` that fails a spaced id of PASS_TO_PASS), the same ``resolved``, the same ``test_status``
(every key and value) and the same FAIL_TO_PASS / PASS_TO_PASS groups; and the gold patch resolves in five safe
gradings in a row (the twins' perturbations are a random draw). The gradings run concurrently (``grade_async``).

The row comes from ``$SWE_GYM_PYTEST_ROW`` (default ``/var/tmp/swe_gym_bench/pytest-dev__pytest-11143.json``,
written by ``.ci/build_pytest_image.sh``). Without Docker, the image or the row these tests skip; under CI that is
a failure.
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest

from swe_gym.grading import GradeReport, grade_async
from swe_gym.tasks import SWETask
from tests.grading.test_real_django import load_row, real_diff, replace_once

#: Ten gradings in the first test's set-up: about a minute on an idle 2-core machine, minutes on a busy one.
pytestmark = [pytest.mark.docker, pytest.mark.timeout(600)]

ROW = Path(os.environ.get("SWE_GYM_PYTEST_ROW", "/var/tmp/swe_gym_bench/pytest-dev__pytest-11143.json"))
REWRITE = "src/_pytest/assertion/rewrite.py"
TESTS = "testing/test_assertrewrite.py"
GOLD_RUNS = 5
#: Gradings at once: each runs one test file (seconds; the safe grader twice, for its twins) on two cores.
CONCURRENCY = 2
PATCHES = ("gold", "empty", "wrong")
#: Ids of the graded file as swebench's parser records them (cut at the first space), as the real row lists them.
CUT_IDS = [
    f"{TESTS}::test_get_assertion_exprs[{cut}"
    for cut in (
        "assert",
        "multiple",
        "latin1",
        "utf-8",
        "multi-line",
        "multi",
        "backslash",
        "assertion",
        "escaped",
        "no",
    )
]


@pytest.fixture(scope="module")
def task() -> SWETask:
    return load_row(ROW, ".ci/build_pytest_image.sh")


def half_fixed(base: str | None) -> str:
    """rewrite.py with the gold fix, and with the trailing backslash no longer cut from a continued assertion's text
    (``_get_assertion_exprs``): FAIL_TO_PASS passes, ``test_get_assertion_exprs[escaped newlines plus message]``
    fails (swebench's key: ``test_get_assertion_exprs[escaped``)."""
    assert base is not None
    check = "                and isinstance(item.value, ast.Constant)\n"
    text = replace_once(base, check, check + "                and isinstance(item.value.value, str)\n")
    cut = '        ret[assert_lineno] = "".join(lines).rstrip().rstrip("\\\\")\n'
    return replace_once(text, cut, '        ret[assert_lineno] = "".join(lines).rstrip()\n')


@pytest.fixture(scope="module")
def reports(task: SWETask) -> dict[tuple[str, str], list[GradeReport]]:
    """(harness, patch name) -> its reports: each patch once per harness, the gold patch ``GOLD_RUNS`` times safe.

    The first safe grading runs beside the official ones only: it fills the grader's per-task caches (the base
    environment's probe, the twins' sources), which the other safe gradings then share instead of each making them.
    """
    patches = {"gold": task.patch, "empty": "", "wrong": real_diff(task, {REWRITE: half_fixed})}
    first = [("safe", "gold"), *(("official", name) for name in PATCHES)]
    then = [("safe", "empty"), ("safe", "wrong"), *[("safe", "gold")] * (GOLD_RUNS - 1)]

    async def grade_all() -> list[GradeReport]:
        limit = asyncio.Semaphore(CONCURRENCY)

        async def one(harness: str, name: str) -> GradeReport:
            async with limit:
                return await grade_async(task, patches[name], provider="docker", harness=harness)  # type: ignore[arg-type]

        done = await asyncio.gather(*(one(*job) for job in first))
        return [*done, *await asyncio.gather(*(one(*job) for job in then))]

    found: dict[tuple[str, str], list[GradeReport]] = {}
    for job, report in zip([*first, *then], asyncio.run(grade_all()), strict=True):
        found.setdefault(job, []).append(report)
    return found


def test_the_row_lists_the_spaced_ids_cut_as_swebench_records_them(task: SWETask) -> None:
    assert task.fail_to_pass == [f"{TESTS}::TestIssue11140::test_constant_not_picked_as_module_docstring"]
    missing = [test for test in CUT_IDS if test not in task.pass_to_pass]
    assert not missing, missing
    odd = [t for t in task.pass_to_pass if "test_get_cache_dir[" in t]  # drive letters, slashes, colons
    assert len(odd) == 4 and sum("c:/tmp/pycs" in t for t in odd) == 1, odd


def test_gold_resolves_in_five_safe_gradings_in_a_row(
    task: SWETask, reports: dict[tuple[str, str], list[GradeReport]]
) -> None:
    official = reports["official", "gold"][0]
    assert official.resolved and not official.masked, official.summary()
    runs = reports["safe", "gold"]
    assert len(runs) == GOLD_RUNS
    failed = [f"run {i + 1}: {report.summary()}" for i, report in enumerate(runs) if not report.resolved]
    assert not failed, "\n".join(failed)
    assert all(not r.masked and not r.tampering and r.harness == "safe" for r in runs)


def status_diff(safe: GradeReport, official: GradeReport) -> dict[str, tuple[str | None, str | None]]:
    """Every test whose status differs: test -> (safe's, official's); None where the report has no such key."""
    keys = sorted(set(safe.test_status) | set(official.test_status))
    pairs = {k: (safe.test_status.get(k), official.test_status.get(k)) for k in keys}
    return {k: (s and str(s), o and str(o)) for k, (s, o) in pairs.items() if s != o}


@pytest.mark.parametrize("name", PATCHES)
def test_the_safe_verdict_is_the_official_one(
    task: SWETask, reports: dict[tuple[str, str], list[GradeReport]], name: str
) -> None:
    (official,) = reports["official", name]
    assert not official.masked, official.summary()
    assert official.resolved == (name == "gold"), official.summary()
    if name == "wrong":  # wrong where this row is odd: the crash is gone, a spaced id fails
        assert official.fail_to_pass.success == task.fail_to_pass, official.summary()
        failing = official.pass_to_pass.failure
        assert failing == [f"{TESTS}::test_get_assertion_exprs[escaped"], f"{official.summary()}: {failing}"
    assert set(CUT_IDS) <= set(official.test_status), "the official log lacks the cut ids: is the image right?"
    for i, safe in enumerate(reports["safe", name]):
        which = f"{name} patch, safe grading {i + 1}: {safe.summary()}"
        differ = status_diff(safe, official)
        assert not differ, f"{which}\n{len(differ)} test statuses differ (test: (safe, official)): {differ}"
        assert safe.resolved == official.resolved, which
        assert safe.fail_to_pass == official.fail_to_pass, which
        assert safe.pass_to_pass == official.pass_to_pass, which
