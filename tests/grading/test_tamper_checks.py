"""The log checks of `swe_gym.grading.tamper` on official-style eval scripts and forged logs."""

from __future__ import annotations

import pytest

from swe_gym.grading import tamper
from swe_gym.grading.parsers import TestStatus, parse_pytest

OFFICIAL = """#!/bin/bash
set -uxo pipefail
git apply -v - <<'EOF_114329324912'
EOF_114329324912
: '>>>>> Start Test Output'
pytest -rA tests/test_a.py tests/test_b.py::test_x
: '>>>>> End Test Output'
git checkout abc tests/test_a.py
"""


def test_official_script_gets_sealed_markers_and_a_canary_beside_the_first_test_file() -> None:
    sealed = tamper.seal_markers(OFFICIAL, "N0NCE")
    assert ": '>>>>> Start Test Output N0NCE'" in sealed and ": '>>>>> End Test Output N0NCE'" in sealed
    script, canary = tamper.add_canary(sealed, "N0NCE")
    assert canary is not None and canary.path.startswith("tests/test_") and canary.path.endswith(".py")
    assert f"pytest -rA tests/test_a.py tests/test_b.py::test_x {canary.path}\n" in script
    ok = {f"{canary.path}::{canary.passing}": TestStatus.PASSED, f"{canary.path}::{canary.failing}": TestStatus.FAILED}
    assert canary.verdict(ok) is None and canary.strip({**ok, "t::x": TestStatus.PASSED}) == {"t::x": TestStatus.PASSED}
    assert "must fail passed" in (canary.verdict({**ok, f"{canary.path}::{canary.failing}": TestStatus.PASSED}) or "")
    assert "missing" in (canary.verdict({}) or "")


def test_commands_with_shell_operators_or_other_runners_get_no_canary() -> None:
    for command in ("pytest -rA tests/t.py || true", "./tests/runtests.py --verbosity 2 admin_views", "bin/test x"):
        script = tamper.seal_markers(
            OFFICIAL.replace("pytest -rA tests/test_a.py tests/test_b.py::test_x", command), "N"
        )
        assert tamper.add_canary(script, "N")[1] is None, command


def test_section_is_cut_at_the_sealed_markers_only() -> None:
    log = (
        "+ : '>>>>> Start Test Output N'\nPASSED a::b\n>>>>> End Test Output\nPASSED c::d\n"
        "+ : '>>>>> End Test Output N'\n"
    )
    text, wrong = tamper.section(log, "N")
    assert wrong is None and text == "PASSED a::b\n>>>>> End Test Output\nPASSED c::d\n"
    assert tamper.section("no markers", "N") == (None, None)
    twice = log + ">>>>> Start Test Output N\n"
    assert "more than once" in (tamper.section(twice, "N")[1] or "")


def test_results_after_pytest_final_summary_are_flagged() -> None:
    honest = "FAILED t.py::a - assert 0\n========== 1 failed in 0.01s ==========\n"
    assert tamper.late_status_lines(honest, parse_pytest) is None
    late = tamper.late_status_lines(honest + "PASSED t.py::a\n", parse_pytest)
    assert "after the test runner's final summary" in (late or "")


@pytest.mark.parametrize("lead", [" ", "\r", "\t", "\x0c", "\x0b", "\x1c", "\u2028", "\r\n"])
def test_one_reading_of_the_log_a_hidden_status_line_is_counted_and_flagged(lead: str) -> None:
    """Whatever separates or leads a forged line, the parser and the check read the same normalised lines."""
    honest = "FAILED t.py::a - assert 0\n========== 1 failed in 0.01s ==========\n"
    text = tamper.normalize(honest + f"{lead}PASSED t.py::a\n")
    counted = "t.py::a" in parse_pytest(text) and parse_pytest(text)["t.py::a"] == "PASSED"
    flagged = tamper.late_status_lines(text, parse_pytest) is not None
    assert counted == flagged and flagged


def test_late_results_after_a_django_runner_summary_are_flagged() -> None:
    from swe_gym.grading.swebench_api import parsers_by_name

    django = parsers_by_name()["parse_log_django"]
    honest = "test_a (m.T) ... FAIL\n\n----------------------------------------------------------------------\n"
    honest += "Ran 1 test in 0.001s\n\nFAILED (failures=1)\n"
    parse = lambda text: django(text, None)  # noqa: E731
    assert tamper.late_status_lines(tamper.normalize(honest), parse) is None
    forged = tamper.normalize(honest + "\rtest_a (m.T) ... ok\n")
    assert "test_a (m.T)" in (tamper.late_status_lines(forged, parse) or "")
