"""R2E-Gym (``R2E-Gym/R2E-Gym-Lite``, ``R2E-Gym/R2E-Gym-Subset``, ``R2E-Gym/R2E-Gym-V1``): real commits as tasks.

A row, as the datasets publish it (no instance id, no FAIL_TO_PASS/PASS_TO_PASS)::

    repo_name            "pandas" (one of R2E-Gym's repositories)
    docker_image         "namanjain12/pandas_final:<commit_hash>"
    commit_hash          the commit that fixed the issue; the image holds its parent
    parsed_commit_content   JSON of the commit's parsed diff (old/new commit, file diffs)
    execution_result_content JSON of the hidden tests' runs on the old and new commits
    expected_output_json  JSON {test name: status} after the fix (what R2E-Gym grades against)
    problem_statement     the issue, between [ISSUE] and [/ISSUE]
    modified_files, modified_entity_summaries, relevant_files, num_non_test_files,
    num_non_test_func_methods, num_non_test_lines, prompt

In the image the repository is at ``/testbed`` (with its ``.venv``), the test runner at
``/testbed/run_tests.sh`` (``.venv/bin/python -W ignore -m pytest -rA r2e_tests``) and
the hidden tests at ``/r2e_tests``. R2E-Gym's runtime moves both to ``/root`` before the
agent starts (``setup_script``), and grades by running ``/root/run_tests.sh`` with
``r2e_tests`` linked into the repository (here linked only at grading, in ``test_cmd``).

Grading: R2E-Gym's reward is 1 when the parsed log equals ``expected_output_json``. Here
tests expected PASSED must pass: those that fail on the old commit (per
``execution_result_content``) are FAIL_TO_PASS, the others PASS_TO_PASS (all of them
FAIL_TO_PASS when the old run is not in the row). Tests expected to fail are not checked,
a difference from R2E-Gym's exact match. Raw fields stay in ``metadata``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from swe_gym.errors import TaskError
from swe_gym.tasks.families import register_family
from swe_gym.tasks.families.swebench import _optional_text, _test_list, _text
from swe_gym.tasks.families.swesmith import OVERRIDES, TASK_FIELDS
from swe_gym.tasks.model import EvalRecipe, SWETask

WORKDIR = "/testbed"
#: Where R2E-Gym's runtime keeps the runner and the hidden tests, away from the agent.
HIDDEN_DIR = "/root"
DOCKER_ORG = "namanjain12"
EVAL_TIMEOUT_S = 1800.0
RUN_TESTS = f"bash {HIDDEN_DIR}/run_tests.sh"

SETUP_SCRIPT = f"""\
# R2E-Gym: the runner and the hidden tests leave the repository, as R2E-Gym's runtime moves them
if [ -f run_tests.sh ]; then mv -f run_tests.sh {HIDDEN_DIR}/run_tests.sh; fi
if [ -d /r2e_tests ] && [ ! -e {HIDDEN_DIR}/r2e_tests ]; then mv /r2e_tests {HIDDEN_DIR}/r2e_tests; fi
find {HIDDEN_DIR}/r2e_tests -name __pycache__ -prune -exec rm -rf {{}} + 2>/dev/null
find . -path ./.venv -prune -o -name '*.pyc' -delete 2>/dev/null
# its virtualenv on the agent's PATH, as R2E-Gym links it
if [ -d .venv ]; then
  ln -sfn "$PWD/.venv" {HIDDEN_DIR}/.venv && mkdir -p {HIDDEN_DIR}/.local/bin
  find "$PWD/.venv/bin" -type f -executable -exec ln -sf {{}} {HIDDEN_DIR}/.local/bin/ \\;
fi
true"""
LINK_TESTS = f"rm -rf r2e_tests && ln -s {HIDDEN_DIR}/r2e_tests r2e_tests"
#: Gone from the agent's sandbox (R2E-Gym itself leaves them readable in /root); the grader's keeps them.
HIDDEN_PATHS = [f"{HIDDEN_DIR}/r2e_tests", f"{HIDDEN_DIR}/run_tests.sh", "/r2e_tests"]

_CONSUMED = {*TASK_FIELDS, *OVERRIDES}
_ISSUE = re.compile(r"\[ISSUE\](.*)\[/ISSUE\]", re.DOTALL)
_TEST_FILE_DIRS = {"tests", "Tests", "test", "Test"}
_ANSI = re.compile(r"\x1b\[[0-9;]*m|\r")
_STATUSES = ("PASSED", "FAILED", "ERROR")


def r2e_gym_image(repo_name: str, commit_hash: str) -> str:
    """R2E-Gym's image naming, used only when a row lacks its ``docker_image``.

    >>> r2e_gym_image("pandas", "606e0fe5834b82d94a17ed2614008270ecb93171")
    'namanjain12/pandas_final:606e0fe5834b82d94a17ed2614008270ecb93171'
    """
    return f"{DOCKER_ORG}/{repo_name}_final:{commit_hash}"


def issue_text(problem_statement: str) -> str:
    """What R2E-Gym shows the agent: the text between [ISSUE] and [/ISSUE], else all of it."""
    match = _ISSUE.search(problem_statement)
    return (match.group(1) if match else problem_statement).strip()


def expected_statuses(value: Any, where: str = "row") -> dict[str, str]:
    """``expected_output_json`` as {test: status}, keys cleaned as R2E-Gym compares them."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except json.JSONDecodeError:
            raise TaskError(f"{where}: field 'expected_output_json' is not JSON ({value!r:.60})") from None
    if not isinstance(value, dict) or not value or not all(isinstance(v, str) for v in value.values()):
        raise TaskError(f"{where}: field 'expected_output_json' must map test names to statuses, got {value!r:.60}")
    return {_clean(k): v for k, v in value.items()}


def _clean(name: str) -> str:
    return re.sub(r"\x1b\[\d+m", "", name).split(" - ")[0]


def parse_r2e_log(log: str) -> dict[str, str]:
    """Ours, following R2E-Gym's ``parse_log_pytest`` (r2egym/repo_analysis/execution_log_parser.py).

    R2E-Gym runs ``pytest -rA r2e_tests`` and reads only the lines after ``short test summary info``:
    a line containing PASSED, else FAILED, else ERROR gives the test that status, named by what
    follows the file (``r2e_tests/test_1.py::TestA::test_b`` is ``TestA.test_b``) and cut at `` - ``.
    As its runtime does, colour codes and carriage returns are removed first; lines naming no
    test are skipped. The names are those of ``expected_output_json``.
    """
    log = _ANSI.sub("", log)
    if "short test summary info" not in log:
        return {}
    status: dict[str, str] = {}
    for line in log.split("short test summary info", 1)[1].strip().splitlines():
        word = next((w for w in _STATUSES if w in line), None)
        name = ".".join(line.split("::")[1:]).split(" - ")[0].strip()
        if word and name:
            status[name] = word
    return status


def split_tests(expected: dict[str, str], execution_result: Any) -> tuple[list[str], list[str]]:
    """(FAIL_TO_PASS, PASS_TO_PASS) of the tests expected to pass, by their status on the old commit."""
    passing = [name for name, status in expected.items() if status == "PASSED"]
    old_log = None
    if isinstance(execution_result, str):
        try:
            execution_result = json.loads(execution_result)
        except json.JSONDecodeError:
            execution_result = None
    if isinstance(execution_result, dict):
        old_log = execution_result.get("old_commit_res_stdout")
    if not isinstance(old_log, str):
        return passing, []
    old = parse_r2e_log(old_log)
    return [t for t in passing if old.get(t) != "PASSED"], [t for t in passing if old.get(t) == "PASSED"]


def parsed_commit(row: Mapping[str, Any], where: str = "row") -> tuple[str | None, str | None]:
    """(old commit, gold patch) from ``parsed_commit_content``; (None, None) when the row has none.

    The gold patch is the fix's non-test Python files, rebuilt as R2E-Gym's ``ParsedCommit.get_patch``
    writes them.
    """
    value = row.get("parsed_commit_content")
    if value is None:
        return None, None
    try:
        commit = json.loads(value) if isinstance(value, str) else value
        patch = "".join(_file_patch(d) for d in commit["file_diffs"] if _is_gold_file(d["header"]["file"]["path"]))
        return commit.get("old_commit_hash"), patch
    except (json.JSONDecodeError, KeyError, TypeError, AttributeError) as exc:
        raise TaskError(f"{where}: field 'parsed_commit_content' is not a parsed commit ({exc!r:.80})") from None


def _is_gold_file(path: str) -> bool:
    parts = path.split("/")
    is_test = path.endswith("_test.py") or parts[-1].startswith("test_") or any(p in _TEST_FILE_DIRS for p in parts)
    return path.endswith(".py") and not is_test


def _file_patch(diff: Mapping[str, Any]) -> str:
    path = diff["header"]["file"]["path"]
    text = f"diff --git a/{path} b/{path}\n"
    if diff["header"].get("misc_line"):
        text += diff["header"]["misc_line"] + "\n"
    if index := diff.get("index_line"):
        text += f"index {index['old_commit_hash']}..{index['new_commit_hash']}"
        text += f" {index['mode']}\n" if index.get("mode") else "\n"
    if diff.get("is_binary_file"):
        text += f"{diff.get('binary_line') or ''}\n"
    if diff.get("minus_file") and diff.get("plus_file"):
        text += f"--- {diff['minus_file']['path']}\n+++ {diff['plus_file']['path']}\n"
    for hunk in diff.get("hunks") or []:
        head = hunk["descriptor"]
        text += f"@@ -{_range(head['old_range'])} +{_range(head['new_range'])} @@"
        text += f" {head['section']}\n" if head.get("section") else "\n"
        for line in hunk["line_group"]["all_lines"]:
            text += {"context": " ", "added": "+", "deleted": "-", "note": "\\ "}[line["type"]] + line["content"] + "\n"
    return text


def _range(value: Mapping[str, Any]) -> str:
    return f"{value['start']}" if value.get("length") is None else f"{value['start']},{value['length']}"


@dataclass(frozen=True)
class R2EGymFamily:
    name: str = "r2e-gym"
    priority: int = 20

    def matches(self, row: Mapping[str, Any], dataset: str | None) -> bool:
        if "eval" in row:  # a swe_gym record
            return False
        image = row.get("docker_image")
        if isinstance(image, str) and "swebench" in image.lower():
            return False  # R2E-Gym's SWE-bench rows are SWE-bench tasks
        if dataset and "r2e" in dataset.lower() and "repo_name" in row:
            return True
        return "expected_output_json" in row and ("docker_image" in row or "repo_name" in row)

    def to_task(self, row: Mapping[str, Any]) -> SWETask:
        repo_name = _text(row, "repo_name", None)
        commit_hash = _text(row, "commit_hash", None)
        instance_id = _optional_text(row, "instance_id", None) or f"{repo_name}__{commit_hash}"
        where = f"r2e-gym row {instance_id!r}"
        expected = expected_statuses(row.get("expected_output_json"), where)
        f2p, p2p = split_tests(expected, row.get("execution_result_content"))
        if "FAIL_TO_PASS" in row:  # a derived dataset that lists them itself
            f2p, p2p = _test_list(row, "FAIL_TO_PASS", instance_id), _test_list(row, "PASS_TO_PASS", instance_id)
        if not f2p and not p2p:
            raise TaskError(f"{where}: field 'expected_output_json' expects no test to pass: nothing would grade it")
        statement = _text(row, "problem_statement", instance_id)
        base_commit, patch = parsed_commit(row, where)
        patch = _optional_text(row, "patch", instance_id) or patch
        image = _optional_text(row, "image", instance_id) or _optional_text(row, "docker_image", instance_id)
        test_cmd = _optional_text(row, "test_cmd", instance_id) or RUN_TESTS
        return SWETask(
            instance_id=instance_id,
            family=self.name,
            repo=repo_name,
            problem_statement=issue_text(statement) or statement,
            base_commit=base_commit,
            image=image or r2e_gym_image(repo_name, commit_hash),
            workdir=_optional_text(row, "workdir", instance_id) or WORKDIR,
            setup_script=_optional_text(row, "setup_script", instance_id) or SETUP_SCRIPT,
            hidden_paths=HIDDEN_PATHS,
            eval=EvalRecipe(
                toolkit="swe_gym",
                test_cmd=f"{LINK_TESTS}\n{test_cmd}",
                log_parser=_optional_text(row, "log_parser", instance_id) or "r2e-gym",
                timeout_s=EVAL_TIMEOUT_S,
            ),
            FAIL_TO_PASS=f2p,
            PASS_TO_PASS=p2p,
            patch=patch or "",
            metadata={
                **{k: v for k, v in row.items() if k not in _CONSUMED},
                **({"problem_statement_raw": statement} if issue_text(statement) != statement else {}),
            },
        )


register_family(R2EGymFamily())
