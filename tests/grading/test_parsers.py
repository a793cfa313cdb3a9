"""The pytest log parser on a log that real pytest wrote."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from swe_gym.grading import TestStatus, eval_script, parse_pytest

TESTS = """
import pytest

def test_ok():
    assert True

def test_bad():
    assert 1 == 2, "with - a dash"

@pytest.mark.skip(reason="no")
def test_skipped():
    pass

@pytest.mark.xfail
def test_expected_failure():
    assert False

@pytest.mark.parametrize("value", ["a b", "2020-02-29", "x::y"])
def test_param(value):
    assert value != "x::y"

@pytest.fixture
def broken():
    raise RuntimeError("fixture")

def test_error(broken):
    pass
"""


def test_parses_every_status_from_a_real_pytest_run(tmp_path: Path) -> None:
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_sample.py").write_text(TESTS)
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-rA", "-p", "no:cacheprovider", "tests/test_sample.py"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    status = parse_pytest(run.stdout)
    assert status["tests/test_sample.py::test_ok"] is TestStatus.PASSED
    assert status["tests/test_sample.py::test_bad"] is TestStatus.FAILED
    assert status["tests/test_sample.py::test_expected_failure"] is TestStatus.XFAIL
    assert status["tests/test_sample.py::test_param[2020-02-29]"] is TestStatus.PASSED
    assert status["tests/test_sample.py::test_param[x::y]"] is TestStatus.FAILED
    assert status["tests/test_sample.py::test_error"] is TestStatus.ERROR
    assert TestStatus.XFAIL.ok and not TestStatus.ERROR.ok


def test_section_between_markers() -> None:
    log = "noise\n>>>>> Start Test Output\nPASSED a::b\n>>>>> End Test Output\nPASSED c::d\n"
    assert parse_pytest(eval_script.test_section(log) or "") == {"a::b": TestStatus.PASSED}
    assert eval_script.test_section("no markers") is None
