"""The official-swebench adapter against the real swebench code, offline.

Logs are hand-written in the exact format each tool prints, wrapped in the ``set -x``
traces of swebench's markers as a merged stdout+stderr capture shows them.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from typing import Any

import pytest

from swe_gym.errors import GradingError, TaskError
from swe_gym.grading import swebench_toolkit
from swe_gym.grading.parsers import TestStatus
from swe_gym.tasks.model import SWETask
from tests.conftest import IN_CI
from tests.grading.swebench_lines import LINE, NESTED, run_under_other_line

if not IN_CI:  # the dev extra installs swebench; CI must never skip these
    pytest.importorskip("swebench")

from swebench.harness.constants import FAIL_TO_PASS, PASS_TO_PASS, EvalType
from swebench.harness.grading import get_eval_tests_report

from swe_gym.grading import swebench_api

#: 4.x derives classic rows' scripts from its spec tables; 5.x has none (`swe_gym.grading.swebench_classic`).
TABLES = swebench_api.spec_tables()
#: The other line runs this file too (`test_the_other_swebench_line_passes_this_file`); a test for one line only
#: skips in the other's run, never in both.
only_4x = pytest.mark.skipif(TABLES is None, reason="swebench 4.x only (its spec tables); the 4.x run covers it")
only_5x = pytest.mark.skipif(TABLES is not None, reason="swebench 5.x only; the 5.x run covers it")

P, F, E, S = TestStatus.PASSED, TestStatus.FAILED, TestStatus.ERROR, TestStatus.SKIPPED


def task(repo: str, *, version: str | None = "1.0", test_patch: str = "", **fields: Any) -> SWETask:
    row: dict[str, Any] = {
        "instance_id": f"{repo.replace('/', '__')}-1234",
        "repo": repo,
        "problem_statement": "an issue",
        "base_commit": "0123456789abcdef0123456789abcdef01234567",
        "test_patch": test_patch,
        "toolkit": "swebench",
        **fields,
    }
    if version is not None:
        row["version"] = version
    return SWETask.model_validate(row)


def traced(output: str) -> str:
    """Test output as the official eval script's run prints it (``set -x`` traces included)."""
    return (
        "+ git apply -v -\nChecking patch tests/x.py...\nApplied patch tests/x.py cleanly.\n"
        f"+ : '>>>>> Start Test Output'\n+ run the tests\n{output}+ : '>>>>> End Test Output'\n"
        "+ git checkout 0123456789abcdef0123456789abcdef01234567 tests/x.py\nUpdated 1 path from 1a2b3c4\n"
    )


# --- log parsing -------------------------------------------------------------------------------------------------

PYTEST_REQUESTS = """\
============================= test session starts ==============================
platform linux -- Python 3.9.20, pytest-8.3.3, pluggy-1.5.0
rootdir: /testbed
collected 4 items

test_requests.py ..F.                                                    [100%]

=================================== FAILURES ===================================
__________________ RequestsTestCase.test_prepared_request_hook __________________
E       AssertionError: assert 'hook' in {}
==================================== PASSES ====================================
=========================== short test summary info ============================
PASSED test_requests.py::RequestsTestCase::test_basic_building
PASSED test_requests.py::test_data_argument_accepts_tuples[data0]
PASSED test_requests.py::test_unicode_path[/tmp/pytest-of-root/pytest-0/test0/a.txt]
FAILED test_requests.py::RequestsTestCase::test_prepared_request_hook - AssertionError: assert 'hook' in {}
========================= 1 failed, 3 passed in 0.31s ==========================
"""

PYTEST_ASTROPY = """\
============================= test session starts ==============================
platform linux -- Python 3.9.20, pytest-7.4.0, pluggy-1.3.0
collected 3 items

astropy/io/fits/tests/test_header.py .Fs                                 [100%]

=========================== short test summary info ============================
\x1b[32mPASSED\x1b[0m astropy/io/fits/tests/test_header.py::TestHeaderFunctions::test_rename_keyword
\x1b[31mFAILED\x1b[0m astropy/io/fits/tests/test_header.py::TestHeaderFunctions::test_card_str - ValueError: bad
SKIPPED [1] astropy/io/fits/tests/test_header.py:120: requires scipy
astropy/io/fits/tests/test_header.py::test_shallow_copy PASSED
==================== 1 failed, 2 passed, 1 skipped in 1.02s ====================
"""

DJANGO = """\
Testing against Django installed in '/testbed/django' with up to 1 processes
Importing application admin_views
Creating test database for alias 'default'...
System check identified no issues (1 silenced).
test_get_absolute_url (admin_views.tests.AdminViewBasicTest) ... ok
test_change_view (admin_views.tests.AdminViewBasicTest) ... FAIL
test_json_field (admin_views.tests.JSONTests) ... skipped "Database doesn't support feature(s): supports_json_field"
test_broken (admin_views.tests.AdminViewBasicTest) ... ERROR

======================================================================
ERROR: test_broken (admin_views.tests.AdminViewBasicTest)
----------------------------------------------------------------------
Traceback (most recent call last):
  File "/testbed/tests/admin_views/tests.py", line 40, in test_broken
    raise RuntimeError("boom")
RuntimeError: boom

======================================================================
FAIL: test_change_view (admin_views.tests.AdminViewBasicTest)
----------------------------------------------------------------------
Traceback (most recent call last):
  File "/testbed/tests/admin_views/tests.py", line 30, in test_change_view
    self.assertEqual(response.status_code, 200)
AssertionError: 302 != 200

----------------------------------------------------------------------
Ran 4 tests in 0.215s

FAILED (failures=1, errors=1, skipped=1)
Destroying test database for alias 'default'...
"""

SYMPY = """\
============================= test process starts ==============================
executable:         /opt/miniconda3/envs/testbed/bin/python  (3.9.19-final-0) [CPython]
architecture:       64-bit
cache:              no
ground types:       python
numpy:              None
random seed:        52413296
hash randomization: on (PYTHONHASHSEED=2380112823)

sympy/core/tests/test_basic.py[3]
test__aresame ok
test_structure F
test_equality E                                                             [FAIL]


________________________________________________________________________________
______________ sympy/core/tests/test_basic.py:test_structure ___________________
Traceback (most recent call last):
  File "/testbed/sympy/core/tests/test_basic.py", line 30, in test_structure
    assert b21.args == (b2, b1)
AssertionError

=========== tests finished: 1 passed, 1 failed, 1 exceptions, in 0.05 seconds ===========
DO *NOT* COMMIT!
"""

MATPLOTLIB = """\
============================= test session starts ==============================
collected 3 items

lib/matplotlib/tests/test_widgets.py ..x                                 [100%]

=========================== short test summary info ============================
PASSED lib/matplotlib/tests/test_widgets.py::test_span_selector_press[MouseButton.LEFT]
PASSED lib/matplotlib/tests/test_widgets.py::test_span_selector_press[MouseButton.RIGHT]
XFAIL lib/matplotlib/tests/test_widgets.py::test_rectangle_rotate - reason: flaky
========================= 2 passed, 1 xfailed in 2.10s =========================
"""

GO_GIN = """\
=== RUN   TestContextReset
--- PASS: TestContextReset (0.00s)
=== RUN   TestContextHandlers
--- FAIL: TestContextHandlers (0.01s)
    context_test.go:120: expected 2 handlers, got 1
=== RUN   TestRenderHTML
--- SKIP: TestRenderHTML (0.00s)
    render_test.go:44: needs templates
FAIL
FAIL\tgithub.com/gin-gonic/gin\t0.015s
"""

#: Each repository's parser in swebench 4.x's ``MAP_REPO_TO_PARSER``, by name.
PARSERS = {
    "psf/requests": "parse_log_pytest_options",
    "astropy/astropy": "parse_log_pytest_v2",
    "django/django": "parse_log_django",
    "sympy/sympy": "parse_log_sympy",
    "matplotlib/matplotlib": "parse_log_matplotlib",
    "gin-gonic/gin": "parse_log_gotest",
}

CASES = {
    "psf/requests": (
        PYTEST_REQUESTS,
        {
            "test_requests.py::RequestsTestCase::test_basic_building": P,
            "test_requests.py::test_data_argument_accepts_tuples[data0]": P,
            "test_requests.py::test_unicode_path[/a.txt]": P,  # pytest_options keeps a path option's basename
            "test_requests.py::RequestsTestCase::test_prepared_request_hook": F,
        },
    ),
    "astropy/astropy": (
        PYTEST_ASTROPY,
        {
            "astropy/io/fits/tests/test_header.py::TestHeaderFunctions::test_rename_keyword": P,
            "astropy/io/fits/tests/test_header.py::TestHeaderFunctions::test_card_str": F,
            "[1]": S,  # pytest_v2 reads "SKIPPED [1] file:line: reason" literally
            "astropy/io/fits/tests/test_header.py::test_shallow_copy": P,
        },
    ),
    "django/django": (
        DJANGO,
        {
            "test_get_absolute_url (admin_views.tests.AdminViewBasicTest)": P,
            "test_change_view (admin_views.tests.AdminViewBasicTest)": F,
            "test_json_field (admin_views.tests.JSONTests)": S,
            "test_broken (admin_views.tests.AdminViewBasicTest)": E,
            # the "ERROR: name (class)" / "FAIL: name (class)" headers add the bare method names
            "test_broken": E,
            "test_change_view": F,
        },
    ),
    "sympy/sympy": (
        SYMPY,
        {
            "test__aresame": P,
            "test_structure": F,
            "sympy/core/tests/test_basic.py:test_structure": F,
        },
    ),
    "matplotlib/matplotlib": (
        MATPLOTLIB,
        {
            "lib/matplotlib/tests/test_widgets.py::test_span_selector_press[1]": P,
            "lib/matplotlib/tests/test_widgets.py::test_span_selector_press[3]": P,
            "lib/matplotlib/tests/test_widgets.py::test_rectangle_rotate": TestStatus.XFAIL,
        },
    ),
    "gin-gonic/gin": (
        GO_GIN,
        {"TestContextReset": P, "TestContextHandlers": F, "TestRenderHTML": S},
    ),
}


@pytest.mark.parametrize("repo", list(CASES))
def test_parse_log_is_swebenchs_parser_the_row_names(repo: str) -> None:
    output, expected = CASES[repo]
    if LINE == "5.x" and repo == "astropy/astropy":  # 5.x's pytest_v2 no longer takes "SKIPPED [1] f:l" for a test
        expected = {test: status for test, status in expected.items() if test != "[1]"}
    t = task(repo, log_parser=PARSERS[repo])
    got = swebench_toolkit.parse_log(t, traced(output))
    assert got == expected
    assert got == swebench_api.parsers_by_name()[PARSERS[repo]](output, swebench_toolkit.test_spec(t))


@only_4x
@pytest.mark.parametrize("repo", list(CASES))
def test_a_classic_row_gets_the_repos_parser_under_4x(repo: str) -> None:
    from swebench.harness.log_parsers import MAP_REPO_TO_PARSER

    output, expected = CASES[repo]
    assert MAP_REPO_TO_PARSER[repo].__name__ == PARSERS[repo]
    assert swebench_toolkit.parse_log(task(repo), traced(output)) == expected


@only_5x
@pytest.mark.parametrize(("repo", "parser"), [("django/django", "django"), ("sympy/sympy", "sympy"), ("x/y", "pytest")])
def test_a_classic_row_gets_its_runners_parser_under_5x(repo: str, parser: str) -> None:
    """5.x has no repo -> parser map: Django's and sympy's runners have their parsers, the rest run pytest."""
    output = {"django": DJANGO, "sympy": SYMPY, "pytest": MATPLOTLIB}[parser]
    expected = swebench_api.parsers_by_name()[f"parse_log_{parser}"](output, None)
    assert expected and swebench_toolkit.parse_log(task(repo), traced(output)) == expected


@pytest.mark.parametrize("name", ["parse_log_pytest_options", "pytest_options", "parse_log_requests", "requests"])
def test_parse_log_by_name_for_prebuilt_rows(name: str) -> None:
    """Pre-built rows name a parser by its swebench function name (SWE-bench 5.x, SWE-rebench) or the bare tool."""
    t = task("someorg/unknown-lib", version=None, log_parser=name, eval_script="#!/bin/bash\npytest -rA\n")
    assert swebench_toolkit.parse_log(t, traced(PYTEST_REQUESTS)) == CASES["psf/requests"][1]


def test_swe_rebench_rows_name_their_parser_in_install_config() -> None:
    config = {"log_parser": "parse_log_pytest_options", "test_cmd": "pytest -rA"}
    t = task("someorg/unknown-lib", version="0.1", install_config=config)
    assert swebench_toolkit.parse_log(t, traced(PYTEST_REQUESTS)) == CASES["psf/requests"][1]


def test_a_rows_own_spec_drives_its_script_and_never_stays_in_swebenchs_tables() -> None:
    """The row's install_config drives its eval script (both lines), and 4.x's module tables are as shipped after."""
    before = repr(TABLES)
    config = {"test_cmd": "pytest -rA --rebench-row", "install": "pip install -e .", "eval_commands": ["export X=1"]}
    patch = "diff --git a/tests/test_x.py b/tests/test_x.py\n--- a/tests/test_x.py\n+++ b/tests/test_x.py\n"
    patch += "@@ -0,0 +1 @@\n+x\n"
    t = task("someorg/unknown-lib", version="0.1", install_config=config, test_patch=patch)
    script = swebench_toolkit.eval_script(t)
    assert "pytest -rA --rebench-row tests/test_x.py" in script and "export X=1\n" in script
    assert "\npip install -e .\n" in script and swebench_toolkit.install_command(t) == "pip install -e ."
    assert repr(TABLES) == before


def test_a_row_parser_overrides_the_repos() -> None:
    t = task("psf/requests", log_parser="parse_log_pytest")
    assert (
        "test_requests.py::test_unicode_path[/tmp/pytest-of-root/pytest-0/test0/a.txt]"
        in swebench_toolkit.parse_log(t, traced(PYTEST_REQUESTS))
    )


def test_parse_log_without_markers_is_empty_and_falls_back_to_the_whole_log() -> None:
    t = task("psf/requests", log_parser=PARSERS["psf/requests"])
    assert swebench_toolkit.parse_log(t, PYTEST_REQUESTS) == {}  # the tests never ran: swebench reads nothing
    # results printed outside the markers (stdout/stderr interleaving) are still found, as swebench does
    moved = f"{PYTEST_REQUESTS}+ : '>>>>> Start Test Output'\n+ : '>>>>> End Test Output'\n"
    assert swebench_toolkit.parse_log(t, moved) == CASES["psf/requests"][1]


def test_unknown_parser_names_are_the_rows_fault() -> None:
    with pytest.raises(TaskError, match="parse_log_nonesuch"):
        swebench_toolkit.parse_log(task("x/y", log_parser="parse_log_nonesuch"), traced(""))


@only_4x
def test_a_repo_without_a_parser_is_the_rows_fault_under_4x() -> None:
    with pytest.raises(TaskError, match="no log parser for repo 'x/y'"):
        swebench_toolkit.parse_log(task("x/y"), traced(""))


# --- eval scripts ------------------------------------------------------------------------------------------------


def patch_for(path: str) -> str:
    return (
        f"diff --git a/{path} b/{path}\n--- a/{path}\n+++ b/{path}\n@@ -1,2 +1,3 @@\n"
        " import os\n+import sys\n def test_x():\n"
    )


@pytest.fixture
def no_network(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: object, **kwargs: object) -> None:
        raise OSError("network is blocked in this test")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "getaddrinfo", refuse)


#: (repo, version, test file, the test command 4.x's spec derives, the one 5.x's classic derivation runs).
CLASSIC = [
    (
        "django/django",
        "4.0",
        "tests/admin_views/tests.py",
        "./tests/runtests.py --verbosity 2 --settings=test_sqlite --parallel 1 admin_views.tests",
        "./tests/runtests.py --verbosity 2 --settings=test_sqlite --parallel 1 admin_views.tests",
    ),
    (
        "sympy/sympy",
        "1.11",
        "sympy/core/tests/test_basic.py",
        "PYTHONWARNINGS='ignore::UserWarning,ignore::SyntaxWarning' bin/test -C --verbose "
        "sympy/core/tests/test_basic.py",
        "bin/test -C --verbose sympy/core/tests/test_basic.py",
    ),
    ("psf/requests", "2.0", "test_requests.py", "pytest -rA test_requests.py", "pytest -rA test_requests.py"),
    (
        "astropy/astropy",
        "5.0",
        "astropy/io/fits/tests/test_header.py",
        "pytest -rA astropy/io/fits/tests/test_header.py",
        "pytest -rA astropy/io/fits/tests/test_header.py",
    ),
    (
        "matplotlib/matplotlib",
        "3.5",
        "lib/matplotlib/tests/test_axes.py",
        "pytest -rA lib/matplotlib/tests/test_axes.py",
        "pytest -rA lib/matplotlib/tests/test_axes.py",
    ),
]


@pytest.mark.parametrize(("repo", "version", "path", "command4", "command5"), CLASSIC)
@pytest.mark.usefixtures("no_network")
def test_classic_rows_derive_an_eval_script_offline(
    repo: str, version: str, path: str, command4: str, command5: str
) -> None:
    t = task(repo, version=version, test_patch=patch_for(path))
    script = swebench_toolkit.eval_script(t)
    assert script.startswith("#!/bin/bash\nset -uxo pipefail\n")  # -x prints the markers
    assert "source /opt/miniconda3/bin/activate\nconda activate testbed\ncd /testbed\n" in script
    assert f"git checkout {t.base_commit} {path}\n" in script
    assert "git apply -v - <<'" in script and f"\n{t.test_patch}" in script
    command = command4 if TABLES is not None else command5
    assert f": '>>>>> Start Test Output'\n{command}\n: '>>>>> End Test Output'\n" in script


@only_5x
def test_5x_classic_rows_of_any_repo_run_pytest_after_an_editable_reinstall() -> None:
    t = task("someorg/unknown-lib", test_patch=patch_for("tests/test_x.py") + patch_for("tests/data.json"))
    script = swebench_toolkit.eval_script(t)
    assert "\npytest -rA tests/test_x.py\n" in script and f"{t.base_commit} tests/test_x.py tests/data.json\n" in script
    assert swebench_toolkit.install_command(t) == "python -m pip install -e ."
    assert "\npython -m pip install -e .\ngit checkout " in script


@only_4x
@pytest.mark.usefixtures("no_network")
def test_every_repo_that_swebench_can_test_derives_offline() -> None:
    derived = 0
    for repo, versions in (TABLES or {}).items():
        for version, specs in versions.items():
            if "test_cmd" not in specs:
                continue  # dbt-labs/dbt-core: swebench has no test command
            assert ">>>>> End Test Output" in swebench_toolkit.eval_script(
                task(repo, version=version, test_patch=patch_for("tests/test_x.py"))
            )
            derived += 1
    assert derived > 600


def test_a_prebuilt_rows_eval_script_is_returned_as_is() -> None:
    script = "#!/bin/bash\nset -uxo pipefail\ncd /testbed\n: '>>>>> Start Test Output'\npytest\n"
    assert swebench_toolkit.eval_script(task("someorg/unknown-lib", version=None, eval_script=script)) == script


@only_4x
@pytest.mark.parametrize(
    ("repo", "version"),
    [("someorg/unknown-lib", "1.0"), ("django/django", "0.1"), ("dbt-labs/dbt-core", "1.0"), ("django/django", None)],
)
def test_unknown_repo_or_version_says_a_prebuilt_row_serves(repo: str, version: str | None) -> None:
    with pytest.raises(TaskError, match=rf"repo '{repo}' version {version!r}.*pre-built row"):
        swebench_toolkit.eval_script(task(repo, version=version, test_patch=patch_for("tests/test_x.py")))


def test_deriving_needs_the_test_patch() -> None:
    with pytest.raises(TaskError, match="test_patch"):
        swebench_toolkit.eval_script(task("psf/requests", version="2.0"))


# --- the verdict -------------------------------------------------------------------------------------------------


def official_report(t: SWETask, status: dict[str, TestStatus], eval_type: EvalType) -> dict[str, Any]:
    gold = {FAIL_TO_PASS: t.fail_to_pass, PASS_TO_PASS: t.pass_to_pass}
    return get_eval_tests_report({k: v.value for k, v in status.items()}, gold, eval_type=eval_type)


def test_resolved_when_every_fail_to_pass_passes_and_pass_to_pass_holds() -> None:
    t = task("psf/requests", FAIL_TO_PASS='["t::a", "t::b"]', PASS_TO_PASS=["t::c"])
    resolved, f2p, p2p = swebench_toolkit.judge(t, {"t::a": P, "t::b": TestStatus.XFAIL, "t::c": P})
    assert resolved
    assert (f2p.success, f2p.failure, p2p.success, p2p.failure) == (["t::a", "t::b"], [], ["t::c"], [])


@pytest.mark.parametrize(
    "status",
    [
        {"t::a": P, "t::b": P, "t::c": F},  # a PASS_TO_PASS test broke
        {"t::a": P, "t::b": E, "t::c": P},  # partial resolution is not resolution
        {"t::a": P, "t::c": P},  # a test missing from the log counts as failed
    ],
)
def test_not_resolved(status: dict[str, TestStatus]) -> None:
    t = task("psf/requests", FAIL_TO_PASS=["t::a", "t::b"], PASS_TO_PASS=["t::c"])
    resolved, f2p, p2p = swebench_toolkit.judge(t, status)
    assert not resolved
    report = official_report(t, status, EvalType.PASS_AND_FAIL)
    assert f2p.model_dump() == report[FAIL_TO_PASS] and p2p.model_dump() == report[PASS_TO_PASS]


@pytest.mark.parametrize(
    ("repo", "fields"), [("chartjs/Chart.js", {}), ("someorg/unknown-js", {"eval_type": "fail_only"})]
)
def test_fail_only_repos_fail_a_test_only_when_the_log_says_failed(repo: str, fields: dict[str, str]) -> None:
    t = task(repo, FAIL_TO_PASS=["a", "b"], PASS_TO_PASS=["c", "d"], **fields)
    status = {"a": P, "c": E, "d": S}  # b absent; under fail-only only FAILED fails
    resolved, f2p, p2p = swebench_toolkit.judge(t, status)
    assert resolved
    assert (f2p.success, p2p.success) == (["a", "b"], ["c", "d"])
    assert official_report(t, status, EvalType.FAIL_ONLY)[FAIL_TO_PASS] == f2p.model_dump()
    resolved, f2p, _ = swebench_toolkit.judge(t, {**status, "b": F})
    assert not resolved and f2p.failure == ["b"]
    # the same log in a pass-and-fail repo is not resolved (b missing, c errored)
    assert not swebench_toolkit.judge(task("psf/requests", FAIL_TO_PASS=["a", "b"], PASS_TO_PASS=["c", "d"]), status)[0]


# --- installation ------------------------------------------------------------------------------------------------


def test_missing_swebench_is_a_clear_grading_error(monkeypatch: pytest.MonkeyPatch) -> None:
    real = swebench_api.importlib.util.find_spec
    monkeypatch.setattr(swebench_api.harness, "cache_clear", swebench_api.harness.cache_clear)
    swebench_api.harness.cache_clear()
    monkeypatch.setattr(
        swebench_api.importlib.util, "find_spec", lambda name, *a: None if name == "swebench" else real(name, *a)
    )
    try:
        with pytest.raises(GradingError, match=r"pip install 'swe_gym\[swebench\]'"):
            swebench_toolkit.judge(task("psf/requests"), {})
        # a pre-built row's own script needs no swebench
        assert swebench_toolkit.eval_script(task("x/y", eval_script="true")) == "true"
    finally:
        swebench_api.harness.cache_clear()


def test_importing_swe_gym_does_not_import_swebench() -> None:
    code = (
        "import sys, swe_gym, swe_gym.grading, swe_gym.grading.swebench_toolkit\n"
        "assert not [m for m in sys.modules if m.split('.')[0] == 'swebench'], 'swebench imported'"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


@pytest.mark.skipif(bool(os.environ.get(NESTED)), reason="this is the other line's run of this file")
def test_the_other_swebench_line_passes_this_file() -> None:
    """swe_gym[swebench] takes 4.x and 5.x: this file runs again with the other line ahead on the path."""
    run_under_other_line(__file__)
