"""Loading task records: files, lists, the bundled set, and clear errors for bad records."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from swe_gym.errors import TaskError
from swe_gym.tasks import SWETask, load_tasks, repo_archive

ROW = {
    "instance_id": "acme__widget-1",
    "repo": "acme/widget",
    "problem_statement": "It breaks.",
    "base_commit": "abc123",
    "image": "acme/widget:1",
    "test_cmd": "pytest -rA",
    "FAIL_TO_PASS": '["tests/test_a.py::test_x"]',
    "PASS_TO_PASS": ["tests/test_a.py::test_y"],
    "patch": "diff --git a/x b/x\n",
    "version": "1.2",
}


def test_rows_from_jsonl_json_and_lists(tmp_path: Path) -> None:
    jsonl = tmp_path / "tasks.jsonl"
    jsonl.write_text(json.dumps(ROW) + "\n\n" + json.dumps({**ROW, "instance_id": "acme__widget-2"}) + "\n")
    as_json = tmp_path / "tasks.json"
    as_json.write_text(json.dumps({"tasks": [ROW]}))
    for source in (jsonl, str(as_json), [ROW]):
        task = load_tasks(source)[0]
        assert task.fail_to_pass == ["tests/test_a.py::test_x"] and task.eval.test_cmd == "pytest -rA"
        assert task.metadata["version"] == "1.2"  # unknown fields are kept, not lost
    assert [t.instance_id for t in load_tasks(jsonl, instance_ids=["acme__widget-2"])] == ["acme__widget-2"]


def test_missing_field_names_the_field_and_the_line(tmp_path: Path) -> None:
    path = tmp_path / "bad.jsonl"
    row = {k: v for k, v in ROW.items() if k != "problem_statement"}
    path.write_text(json.dumps(ROW) + "\n" + json.dumps(row) + "\n")
    with pytest.raises(TaskError, match=r"bad\.jsonl:2: invalid task record \(problem_statement: Field required"):
        load_tasks(path)


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("{not json", "not valid JSON"),
        ('[{"instance_id": "x"}]', "repo: Field required"),
        ("[1]", "must be an object"),
        ("[]", "no tasks"),
    ],
)
def test_malformed_files(tmp_path: Path, content: str, message: str) -> None:
    path = tmp_path / "t.json"
    path.write_text(content)
    with pytest.raises(TaskError, match=message):
        load_tasks(path)


def test_other_source_errors(tmp_path: Path) -> None:
    with pytest.raises(TaskError, match="does not exist"):
        load_tasks(tmp_path / "missing.jsonl")
    with pytest.raises(TaskError, match="duplicate instance_id"):
        load_tasks([ROW, ROW])
    with pytest.raises(TaskError, match="unknown instance ids: nope"):
        load_tasks([ROW], instance_ids=["nope"])
    with pytest.raises(TaskError, match=r"eval: Field required \(give test_cmd or eval_script\)"):
        load_tasks([{k: v for k, v in ROW.items() if k != "test_cmd"}])


def test_bundled_tasks_build_a_deterministic_base_commit() -> None:
    task = load_tasks("bundled")[0]
    archive, commit = repo_archive(task)
    assert len(commit) == 40 and repo_archive(task) == (archive, commit)
    assert isinstance(task, SWETask) and "patch" not in repr(task).split("problem_statement")[0]
