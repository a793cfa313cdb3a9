"""SWE-smith and R2E-Gym rows, in their published schemas, as swe_gym tasks.

The SWE-smith flow also runs for real on a local git repository laid out as SWE-smith's
images are (a task branch with a "Bug Patch" and a "Remove F2P Tests" commit), with real
pytest: task setup, the gold patch, the hidden tests brought back, the log parsed, graded.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import types
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from swe_gym.errors import TaskError
from swe_gym.grading import eval_script
from swe_gym.grading.parsers import get_parser
from swe_gym.grading.report import classify
from swe_gym.tasks.families import convert, detect
from swe_gym.tasks.families import swesmith as swesmith_family
from swe_gym.tasks.families.r2egym import LINK_TESTS, RUN_TESTS, SETUP_SCRIPT
from swe_gym.tasks.families.swesmith import PYTHON_TEST_CMD, reverse_patch
from tests.conftest import IN_CI
from tests.grading.swebench_lines import LINE, NESTED, run_under_other_line, swesmith_problem

IID = "oauthlib__oauthlib.1fd52536.combine_file__09vlzwgc"
BUG_PATCH = """\
diff --git a/oauthlib/common.py b/oauthlib/common.py
index 0c5f9ab..2b1e4d1 100644
--- a/oauthlib/common.py
+++ b/oauthlib/common.py
@@ -10,7 +10,7 @@ import logging
\x20
 def add_params_to_qs(query, params):
     \"\"\"Extend a query with a list of two-tuples.\"\"\"
-    queryparams = urlencoded(query)
+    queryparams = urlencoded(query[::-1])
     queryparams.extend(params)
     return urlencode(queryparams)
\x20
"""


#: Under swebench 5.x the swesmith package cannot import (it needs 4.x names): its tests run under 4.x there.
SWESMITH_PROBLEM = swesmith_problem() if LINE == "5.x" and not os.environ.get(NESTED) else None


@pytest.fixture
def swesmith_registry() -> Any:
    """The real swesmith package's profile registry (the dev extra installs it: CI never skips)."""
    if SWESMITH_PROBLEM is not None:
        pytest.skip(f"swesmith cannot import under swebench 5.x ({SWESMITH_PROBLEM}); the 4.x run covers it")
    if IN_CI:
        from swesmith.profiles import registry
    else:
        registry = pytest.importorskip("swesmith.profiles", reason="pip install 'swe_gym[swesmith]'").registry
    assert swesmith_family._swesmith_registry() is registry
    return registry


@pytest.fixture
def without_swesmith_package(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The real lookup, with the optional package's import made to fail (as where it is not installed)."""
    swesmith_family._swesmith_registry.cache_clear()
    monkeypatch.setitem(sys.modules, "swesmith", types.ModuleType("swesmith"))
    monkeypatch.setitem(sys.modules, "swesmith.profiles", None)
    yield
    monkeypatch.undo()
    swesmith_family._swesmith_registry.cache_clear()


def swesmith_row(**changes: Any) -> dict[str, Any]:
    """A row of SWE-bench/SWE-smith with every published field (and an older export's two more)."""
    row = {
        "instance_id": IID,
        "repo": "swesmith/oauthlib__oauthlib.1fd52536",
        "patch": BUG_PATCH,
        "FAIL_TO_PASS": ["tests/test_common.py::ParametersTest::test_add_params_to_qs"],
        "PASS_TO_PASS": [
            "tests/test_common.py::ParametersTest::test_extract_params",
            "tests/oauth2/rfc6749/test_utils.py::UtilsTests::test_escape",
        ],
        "image_name": "jyangballin/swesmith.x86_64.oauthlib_1776_oauthlib.1fd52536",
        "problem_statement": "add_params_to_qs reverses the existing query string",
        "created_at": "2025-03-21T08:23:31.701599",
        "base_commit": "d1c5199b6a9d7ae9382d26ee2859b837107165e7",
    }
    row.update(changes)
    return {k: v for k, v in row.items() if v is not None}


def test_a_swesmith_row_becomes_a_task_without_losing_fields(swesmith_registry: Any) -> None:
    row = swesmith_row()
    assert detect(row, "SWE-bench/SWE-smith").name == "swe-smith"
    task = convert(row, "SWE-bench/SWE-smith")
    assert (task.family, task.instance_id, task.repo) == ("swe-smith", IID, row["repo"])
    assert task.image == row["image_name"] and task.workdir == "/testbed"
    assert task.base_commit == row["base_commit"] and task.problem_statement == row["problem_statement"]
    assert task.setup_script.startswith(f"git checkout -q {IID} ")
    assert task.eval.toolkit == "swe_gym" and task.eval.log_parser == "swesmith:oauthlib__oauthlib.1fd52536"
    assert task.eval.test_cmd.endswith("\n" + PYTHON_TEST_CMD) and "'Remove F2P Tests'" in task.eval.test_cmd
    assert "for f in tests/oauth2/rfc6749/test_utils.py tests/test_common.py; do" in task.eval.test_cmd
    assert task.fail_to_pass == row["FAIL_TO_PASS"] and task.pass_to_pass == row["PASS_TO_PASS"]
    assert task.patch == reverse_patch(BUG_PATCH) and "+    queryparams = urlencoded(query)\n" in task.patch
    assert task.test_patch == ""
    assert task.metadata == {"image_name": row["image_name"], "created_at": row["created_at"], "bug_patch": BUG_PATCH}
    for script in (task.setup_script, task.eval.test_cmd):
        subprocess.run(["bash", "-n"], input=script, text=True, check=True)


def test_swesmith_rows_are_recognised_by_their_fields() -> None:
    assert detect(swesmith_row()).name == "swe-smith"
    assert detect(swesmith_row(image_name=None)).name == "swe-smith"  # repo "swesmith/..."
    assert detect(swesmith_row(repo=None)).name == "swe-smith"  # image "...swesmith.x86_64..."
    assert detect(swesmith_row(repo=None, image_name=None), "SWE-bench/SWE-smith-py").name == "swe-smith"
    assert detect(swesmith_row(repo=None, image_name=None)) is None
    record = convert(swesmith_row()).model_dump()
    assert "eval" in record and detect(record) is None  # a swe_gym record is validated as such


def test_swesmith_image_naming() -> None:
    derived = convert(swesmith_row(image_name=None))
    assert derived.image == "jyangballin/swesmith.x86_64.oauthlib_1776_oauthlib.1fd52536"
    local = convert(swesmith_row(image_name="swesmith.x86_64.pandas-dev__pandas.95280573"))
    assert local.image == "jyangballin/swesmith.x86_64.pandas-dev_1776_pandas.95280573"
    assert local.metadata["image_name"] == "swesmith.x86_64.pandas-dev__pandas.95280573"
    assert convert(swesmith_row(image="registry.local/swesmith:oauthlib")).image == "registry.local/swesmith:oauthlib"
    from_id = convert(swesmith_row(repo=None, image_name=None), "SWE-bench/SWE-smith")
    assert from_id.image == derived.image and from_id.repo == "swesmith/oauthlib__oauthlib.1fd52536"


def test_swesmith_fields_can_be_overridden_per_task() -> None:
    task = convert(
        swesmith_row(
            test_cmd="pytest -x tests", log_parser="pytest", setup_script="git checkout -q main", workdir="/src"
        )
    )
    assert task.eval.test_cmd.endswith("\npytest -x tests") and "swesmith_bug=" in task.eval.test_cmd
    assert (task.eval.log_parser, task.setup_script, task.workdir) == ("pytest", "git checkout -q main", "/src")


GO_ROW = {
    "instance_id": "gin-gonic__gin.3c12d2a8.lm_rewrite__4pb48n1g",
    "repo": "swesmith/gin-gonic__gin.3c12d2a8",
    "patch": "",
    "FAIL_TO_PASS": ["TestRouteStaticNoListing"],
    "PASS_TO_PASS": ["TestBasicAuth"],
    "image_name": "jyangballin/swesmith.x86_64.gin-gonic_1776_gin.3c12d2a8",
    "problem_statement": "Static routes list directories",
}


def test_other_languages_need_the_swesmith_package_or_the_rows_own_commands(without_swesmith_package: None) -> None:
    with pytest.raises(TaskError, match="pip install swesmith"):
        convert(GO_ROW)
    task = convert({**GO_ROW, "test_cmd": "go test -v ./...", "log_parser": "swesmith:go"})
    assert task.eval.test_cmd.endswith("\ngo test -v ./...") and task.eval.log_parser == "swesmith:go"


def test_the_swesmith_package_profile_gives_command_and_parser(swesmith_registry: Any) -> None:
    """The real package's Go profile: its command, and its own log parser by name."""
    task = convert(GO_ROW)
    assert task.eval.test_cmd.endswith("\n" + swesmith_registry.get("gin-gonic__gin.3c12d2a8").test_cmd)
    assert task.eval.test_cmd.endswith("\ngo test -v ./...")
    assert task.eval.log_parser == "swesmith:gin-gonic__gin.3c12d2a8"
    log = "=== RUN   TestBasicAuth\n--- PASS: TestBasicAuth (0.00s)\n--- FAIL: TestRouteStaticNoListing (0.01s)\n"
    status = get_parser(task.eval.log_parser)(log)
    assert classify(task.fail_to_pass, status).failure == ["TestRouteStaticNoListing"]
    assert classify(task.pass_to_pass, status).failure == []


def test_a_min_testing_python_profile_runs_only_the_tasks_test_files(swesmith_registry: Any) -> None:
    """The real sympy profile runs only the files of FAIL_TO_PASS and PASS_TO_PASS, as swesmith does."""
    f2p, p2p = ["sympy/core/tests/test_basic.py::test_x"], ["sympy/sets/tests/test_sets.py::test_y"]
    task = convert(
        swesmith_row(
            instance_id="sympy__sympy.2ab64612.func_basic__abc",
            repo="swesmith/sympy__sympy.2ab64612",
            image_name=None,
            FAIL_TO_PASS=f2p,
            PASS_TO_PASS=p2p,
        )
    )
    assert swesmith_registry.get("sympy__sympy.2ab64612").min_testing
    assert task.eval.test_cmd.endswith(
        f"{PYTHON_TEST_CMD} sympy/core/tests/test_basic.py sympy/sets/tests/test_sets.py"
    )
    assert task.eval.log_parser == "swesmith:sympy__sympy.2ab64612"


def test_the_python_defaults_are_the_packages(swesmith_registry: Any) -> None:
    """What swe_gym uses without the package is what the package's Python profile says."""
    from swesmith.profiles.python import PythonProfile

    assert PythonProfile.__dataclass_fields__["test_cmd"].default == PYTHON_TEST_CMD
    log = "tests/test_a.py::test_x PASSED    [ 50%]\ntests/test_a.py::test_y FAILED    [100%]\n"
    profile = swesmith_registry.get("oauthlib__oauthlib.1fd52536")
    assert get_parser("swesmith:python")(log) == get_parser("swesmith:oauthlib__oauthlib.1fd52536")(log)
    assert set(profile.log_parser(log)) == {"tests/test_a.py::test_x", "tests/test_a.py::test_y"}


def test_a_repository_without_a_profile_uses_the_python_defaults(swesmith_registry: Any) -> None:
    task = convert(swesmith_row(repo="swesmith/calc__calc.0123abcd", image_name=None))
    assert task.eval.log_parser == "swesmith:python" and task.eval.test_cmd.endswith("\n" + PYTHON_TEST_CMD)


@pytest.mark.parametrize(
    ("changes", "field"),
    [
        ({"instance_id": None}, "instance_id"),
        ({"instance_id": 7}, "instance_id"),
        ({"problem_statement": ""}, "problem_statement"),
        ({"FAIL_TO_PASS": None}, "FAIL_TO_PASS"),
        ({"FAIL_TO_PASS": "[not json"}, "FAIL_TO_PASS"),
        ({"FAIL_TO_PASS": [1, 2]}, "FAIL_TO_PASS"),
        ({"PASS_TO_PASS": {"a": 1}}, "PASS_TO_PASS"),
        ({"repo": "oauthlib/oauthlib", "image_name": None}, "repo"),
        ({"repo": ["swesmith/x"]}, "repo"),
        ({"image_name": 3}, "image_name"),
        ({"patch": b"diff"}, "patch"),
    ],
)
def test_malformed_swesmith_rows_name_the_field(changes: dict[str, Any], field: str) -> None:
    row = {**swesmith_row(), **changes}
    row = {k: v for k, v in row.items() if v is not None}
    with pytest.raises(TaskError, match=field):
        convert(row, "SWE-bench/SWE-smith")


def test_json_string_lists_are_accepted() -> None:
    task = convert(swesmith_row(FAIL_TO_PASS='["tests/test_a.py::test_x"]', PASS_TO_PASS="[]"))
    assert (task.fail_to_pass, task.pass_to_pass) == (["tests/test_a.py::test_x"], [])


def git(repo: Path, *args: str, stdin: str | None = None) -> str:
    run = subprocess.run(["git", *args], cwd=repo, input=stdin, capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    return run.stdout


def new_repo(path: Path) -> Path:
    path.mkdir()
    git(path, "init", "-q", "-b", "main")
    git(path, "config", "user.email", "t@example.com")
    git(path, "config", "user.name", "t")
    return path


def test_reverse_patch_undoes_real_git_diffs(tmp_path: Path) -> None:
    repo = new_repo(tmp_path / "repo")
    (repo / "keep.py").write_text("a\nb\nc\nd\n")
    (repo / "gone.py").write_text("x\n")
    (repo / "tail.txt").write_text("no newline")
    (repo / "old_name.py").write_text("".join(f"line {i}\n" for i in range(20)))
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "before")
    (repo / "keep.py").write_text("a\n--- b\nc\n+++ d\n")  # content that looks like headers
    (repo / "gone.py").unlink()
    (repo / "new.py").write_text("\nnew\n")
    (repo / "tail.txt").write_text("no newline\nnow\n")
    (repo / "old_name.py").rename(repo / "new_name.py")
    (repo / "new_name.py").write_text("".join(f"line {i}\n" for i in range(19)) + "changed\n")
    git(repo, "add", "-A")
    forward = git(repo, "diff", "--cached", "-M", "HEAD")
    assert "rename from" in forward
    git(repo, "commit", "-qm", "after")
    backward = reverse_patch(forward)
    assert reverse_patch(backward) == forward
    git(repo, "apply", "--index", "-", stdin=backward)
    assert git(repo, "diff", "--cached", "HEAD~1") == ""  # back to "before", exactly


def test_a_swesmith_task_runs_graded_on_a_real_repository(tmp_path: Path) -> None:
    """The image's layout, the task's setup, the gold patch, the hidden tests restored, real pytest."""
    repo = new_repo(tmp_path / "testbed")
    (repo / "calc.py").write_text("def add(a, b):\n    return a + b\n\n\ndef sub(a, b):\n    return a - b\n")
    (repo / "tests").mkdir()
    (repo / "tests" / "test_add.py").write_text("from calc import add\n\ndef test_add():\n    assert add(2, 2) == 4\n")
    (repo / "tests" / "test_sub.py").write_text("from calc import sub\n\ndef test_sub():\n    assert sub(3, 1) == 2\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "Initial commit")
    iid = "calc__calc.0123abcd.func_pm_op_swap__abc"
    git(repo, "checkout", "-qb", iid)
    (repo / "calc.py").write_text("def add(a, b):\n    return a - b\n\n\ndef sub(a, b):\n    return a - b\n")
    bug = git(repo, "diff")
    git(repo, "commit", "-qam", "Bug Patch")
    git(repo, "rm", "-q", "tests/test_add.py")
    git(repo, "commit", "-qm", "Remove F2P Tests")
    git(repo, "checkout", "-q", "main")
    test_cmd = f"{sys.executable} -m pytest -p no:cacheprovider --disable-warnings --color=no --tb=no --verbose"
    task = convert(
        {
            "instance_id": iid,
            "repo": "swesmith/calc__calc.0123abcd",
            "patch": bug,
            "FAIL_TO_PASS": ["tests/test_add.py::test_add"],
            "PASS_TO_PASS": ["tests/test_sub.py::test_sub"],
            "image_name": "jyangballin/swesmith.x86_64.calc_1776_calc.0123abcd",
            "problem_statement": "add subtracts",
            "workdir": str(repo),
            "test_cmd": test_cmd,
        }
    )

    def grade(patch: str) -> tuple[list[str], list[str]]:
        git(repo, "checkout", "-qf", "main")
        git(repo, "clean", "-qfdx")
        subprocess.run(["bash", "-c", task.setup_script], cwd=repo, check=True)
        assert not (repo / "tests" / "test_add.py").exists()  # hidden from the agent
        assert "a - b" in (repo / "calc.py").read_text().split("def sub")[0]  # the bug is there
        if patch:
            git(repo, "apply", "-", stdin=patch)
        script = eval_script.build_eval_script(task, restore=["tests/test_add.py"])  # as if the agent had recreated it
        run = subprocess.run(["bash", "-c", script], cwd=tmp_path, capture_output=True, text=True)
        status = get_parser(task.eval.log_parser)(eval_script.test_section(run.stdout) or "")
        f2p, p2p = classify(task.fail_to_pass, status), classify(task.pass_to_pass, status)
        return f2p.failure, p2p.failure

    assert grade(task.patch) == ([], [])
    assert grade("") == (["tests/test_add.py::test_add"], [])


def r2e_parsed_commit() -> dict[str, Any]:
    """parsed_commit_content as R2E-Gym publishes it (its ParsedCommit model, JSON)."""

    def hunk(old: tuple[int, int | None], new: tuple[int, int | None], section: str, lines: list[tuple[str, str]]):
        return {
            "descriptor": {
                "old_range": {"start": old[0], "length": old[1]},
                "new_range": {"start": new[0], "length": new[1]},
                "section": section,
            },
            "line_group": {"all_lines": [{"type": t, "content": c} for t, c in lines]},
            "modified_entities": [],
            "added_entities": [],
            "deleted_entities": [],
        }

    return {
        "file_diffs": [
            {
                "old_file_content": "",
                "new_file_content": "",
                "header": {"file": {"path": "pandas/core/calc.py"}, "misc_line": None},
                "index_line": {"old_commit_hash": "8be8bf0", "new_commit_hash": "75ebe41", "mode": "100644"},
                "is_binary_file": False,
                "binary_line": None,
                "minus_file": {"path": "a/pandas/core/calc.py"},
                "plus_file": {"path": "b/pandas/core/calc.py"},
                "hunks": [
                    hunk(
                        (1, 3),
                        (1, 3),
                        "",
                        [
                            ("context", "def add(a, b):"),
                            ("deleted", "    return a - b"),
                            ("added", "    return a + b"),
                            ("context", ""),
                        ],
                    ),
                    hunk((4, None), (4, 2), "def add(a, b):", [("context", "x = 1"), ("added", "y = 2")]),
                ],
            },
            {
                "old_file_content": "",
                "new_file_content": "",
                "header": {"file": {"path": "pandas/tests/test_calc.py"}, "misc_line": None},
                "index_line": {"old_commit_hash": "1111111", "new_commit_hash": "2222222", "mode": "100644"},
                "minus_file": {"path": "a/pandas/tests/test_calc.py"},
                "plus_file": {"path": "b/pandas/tests/test_calc.py"},
                "hunks": [hunk((1, None), (1, 2), "", [("context", "import x"), ("added", "import y")])],
            },
            {"old_file_content": "", "new_file_content": "", "header": {"file": {"path": "doc/whatsnew.rst"}}},
        ],
        "old_commit_hash": "3ec5fd7c3074844c62d3a9ff2c95179449a66129",
        "new_commit_hash": "606e0fe5834b82d94a17ed2614008270ecb93171",
        "commit_message": "BUG: add() subtracted",
        "commit_date": "2021-03-02T10:00:00",
        "metadata": {},
    }


GOLD = (
    "diff --git a/pandas/core/calc.py b/pandas/core/calc.py\n"
    "index 8be8bf0..75ebe41 100644\n"
    "--- a/pandas/core/calc.py\n"
    "+++ b/pandas/core/calc.py\n"
    "@@ -1,3 +1,3 @@\n"
    " def add(a, b):\n"
    "-    return a - b\n"
    "+    return a + b\n"
    " \n"
    "@@ -4 +4,2 @@ def add(a, b):\n"
    " x = 1\n"
    "+y = 2\n"
)
OLD_RUN = """\
============================= test session starts ==============================
collected 3 items

r2e_tests/test_1.py F.F                                                  [100%]

=========================== short test summary info ============================
FAILED r2e_tests/test_1.py::TestCalc::test_add - assert -1 == 3
PASSED r2e_tests/test_1.py::TestCalc::test_sub
FAILED r2e_tests/test_1.py::test_known_failure - NotImplementedError
========================= 2 failed, 1 passed in 0.12s ==========================
"""
EXPECTED = {"TestCalc.test_add": "PASSED", "TestCalc.test_sub": "PASSED", "test_known_failure": "FAILED"}
COMMIT = "606e0fe5834b82d94a17ed2614008270ecb93171"


def r2e_row(**changes: Any) -> dict[str, Any]:
    """A row of R2E-Gym/R2E-Gym-Lite with every published field."""
    row = {
        "repo_name": "pandas",
        "docker_image": f"namanjain12/pandas_final:{COMMIT}",
        "commit_hash": COMMIT,
        "parsed_commit_content": json.dumps(r2e_parsed_commit()),
        "execution_result_content": json.dumps(
            {
                "repo_name": "pandas",
                "new_commit_hash": COMMIT,
                "test_file_codes": ["class TestCalc: ..."],
                "test_file_names": ["test_1.py"],
                "setup_res_code": 0,
                "setup_res_stdout": "",
                "setup_res_stderr": "",
                "new_commit_res_code": 1,
                "new_commit_res_stdout": OLD_RUN.replace("FAILED r2e_tests/test_1.py::TestCalc::test_add", "PASSED"),
                "new_commit_res_stderr": "",
                "old_commit_res_code": 1,
                "old_commit_res_stdout": OLD_RUN,
                "old_commit_res_stderr": "",
            }
        ),
        "modified_files": ["pandas/core/calc.py", "pandas/tests/test_calc.py"],
        "modified_entity_summaries": [
            {
                "ast_type_str": "FunctionDef",
                "end_lineno": 2,
                "file_name": "pandas/core/calc.py",
                "name": "add",
                "start_lineno": 1,
                "type": "function",
            }
        ],
        "relevant_files": ["pandas/core/calc.py"],
        "num_non_test_files": 1,
        "num_non_test_func_methods": 1,
        "num_non_test_lines": 2,
        "prompt": "Write a GitHub issue for this commit ...",
        "problem_statement": "[ISSUE]\n**Title:** add() subtracts\n\n**Description:** 1 + 2 gives -1\n[/ISSUE]",
        "expected_output_json": json.dumps(EXPECTED),
    }
    row.update(changes)
    return {k: v for k, v in row.items() if v is not None}


def test_an_r2e_gym_row_becomes_a_task_without_losing_fields() -> None:
    row = r2e_row()
    assert detect(row, "R2E-Gym/R2E-Gym-Lite").name == "r2e-gym"
    task = convert(row, "R2E-Gym/R2E-Gym-Lite")
    assert (task.family, task.instance_id, task.repo) == ("r2e-gym", f"pandas__{COMMIT}", "pandas")
    assert task.image == row["docker_image"] and task.workdir == "/testbed"
    assert task.base_commit == "3ec5fd7c3074844c62d3a9ff2c95179449a66129"
    assert task.problem_statement == "**Title:** add() subtracts\n\n**Description:** 1 + 2 gives -1"
    assert task.setup_script == SETUP_SCRIPT and "mv /r2e_tests /root/r2e_tests" in SETUP_SCRIPT
    assert task.eval.toolkit == "swe_gym" and task.eval.log_parser == "r2e-gym"
    assert task.eval.test_cmd == f"{LINK_TESTS}\n{RUN_TESTS}" and RUN_TESTS == "bash /root/run_tests.sh"
    assert task.fail_to_pass == ["TestCalc.test_add"] and task.pass_to_pass == ["TestCalc.test_sub"]
    assert task.patch == GOLD
    consumed = {"problem_statement"}
    assert task.metadata == {
        **{k: v for k, v in row.items() if k not in consumed},
        "problem_statement_raw": row["problem_statement"],
    }
    for script in (task.setup_script, task.eval.test_cmd):
        subprocess.run(["bash", "-n"], input=script, text=True, check=True)


def test_the_rebuilt_gold_patch_applies(tmp_path: Path) -> None:
    repo = new_repo(tmp_path / "repo")
    (repo / "pandas" / "core").mkdir(parents=True)
    (repo / "pandas" / "core" / "calc.py").write_text("def add(a, b):\n    return a - b\n\nx = 1\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "old")
    git(repo, "apply", "-", stdin=convert(r2e_row()).patch)
    assert (repo / "pandas" / "core" / "calc.py").read_text() == "def add(a, b):\n    return a + b\n\nx = 1\ny = 2\n"


def test_r2e_gym_without_the_old_run_counts_every_passing_test_as_fail_to_pass() -> None:
    task = convert(r2e_row(execution_result_content=None))
    assert task.fail_to_pass == ["TestCalc.test_add", "TestCalc.test_sub"] and task.pass_to_pass == []
    listed = convert(r2e_row(FAIL_TO_PASS=["TestCalc.test_add"], PASS_TO_PASS=[], patch="diff --git a/x b/x\n"))
    assert listed.fail_to_pass == ["TestCalc.test_add"] and listed.patch == "diff --git a/x b/x\n"
    assert "patch" not in listed.metadata and "FAIL_TO_PASS" not in listed.metadata


def test_r2e_gym_recognition_and_image_naming() -> None:
    assert detect(r2e_row()).name == "r2e-gym"
    assert detect(r2e_row(expected_output_json=None), "R2E-Gym/R2E-Gym-Subset").name == "r2e-gym"
    swebench_style = {"instance_id": "astropy__astropy-12907", "docker_image": "slimshetty/swebench-verified:sweb."}
    family = detect({**swebench_style, "expected_output_json": "{}"}, "R2E-Gym/SWE-Bench-Verified")
    assert family is None or family.name != "r2e-gym"  # R2E-Gym's SWE-bench rows are SWE-bench tasks
    assert convert(r2e_row(docker_image=None)).image == f"namanjain12/pandas_final:{COMMIT}"
    assert convert(r2e_row(image="mirror.local/pandas:1")).image == "mirror.local/pandas:1"
    assert convert(r2e_row(instance_id="pandas-1")).instance_id == "pandas-1"
    plain = convert(r2e_row(problem_statement="no tags here"))
    assert plain.problem_statement == "no tags here" and "problem_statement_raw" not in plain.metadata


@pytest.mark.parametrize(
    ("changes", "field"),
    [
        ({"repo_name": None}, "repo_name"),
        ({"commit_hash": ""}, "commit_hash"),
        ({"problem_statement": None}, "problem_statement"),
        ({"expected_output_json": "{not json"}, "expected_output_json"),
        ({"expected_output_json": "[]"}, "expected_output_json"),
        ({"expected_output_json": json.dumps({"t": "FAILED"})}, "expected_output_json"),
        ({"parsed_commit_content": "{}"}, "parsed_commit_content"),
        ({"parsed_commit_content": "nope"}, "parsed_commit_content"),
        ({"docker_image": 5}, "docker_image"),
    ],
)
def test_malformed_r2e_gym_rows_name_the_field(changes: dict[str, Any], field: str) -> None:
    row = {**r2e_row(), **changes}
    row = {k: v for k, v in row.items() if v is not None}
    with pytest.raises(TaskError, match=field):
        convert(row, "R2E-Gym/R2E-Gym-Lite")


def test_without_the_swesmith_package_python_tasks_use_the_python_defaults(without_swesmith_package: None) -> None:
    task = convert(swesmith_row())
    assert task.eval.log_parser == "swesmith:python" and task.eval.test_cmd.endswith("\n" + PYTHON_TEST_CMD)


@pytest.mark.skipif(SWESMITH_PROBLEM is None, reason="the swesmith package imports here: its tests ran in place")
def test_the_swesmith_package_tests_pass_under_swebench_4x() -> None:
    """swesmith 0.0.9 needs swebench 4.x: with 5.x installed, this file runs again with the 4.x line."""
    assert SWESMITH_PROBLEM is not None and "swebench" in SWESMITH_PROBLEM, SWESMITH_PROBLEM
    run_under_other_line(__file__)
