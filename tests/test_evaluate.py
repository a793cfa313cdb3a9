"""``swe-gym evaluate``: a predictions file full of bad rows, graded to the end on the real local provider."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from swe_gym.errors import ConfigError
from swe_gym.grading.evaluation import read_predictions, reject_patch
from swe_gym.tasks import load_tasks
from tests.conftest import leftover_sandboxes, provider_setup
from tests.fake_exploding_provider import FakeExplodingProvider
from tests.test_cli import swe_gym

TASKS = load_tasks("bundled")
MODEL = "acme/agent-7b"

#: Added at the repository root, this makes every test report "passed" — unless the grader removes it.
CHEAT_CONFTEST = """\
import pytest


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    report.outcome = "passed"
    report.longrepr = None
"""


def added_file_patch(path: str, text: str) -> str:
    lines = text.splitlines()
    body = "".join(f"+{line}\n" for line in lines)
    return (
        f"diff --git a/{path} b/{path}\nnew file mode 100644\n--- /dev/null\n+++ b/{path}\n"
        f"@@ -0,0 +1,{len(lines)} @@\n{body}"
    )


def row(instance_id: str, patch: object) -> str:
    return json.dumps({"instance_id": instance_id, "model_name_or_path": MODEL, "model_patch": patch})


def run_evaluate(tmp_path: Path, *args: str) -> tuple[dict, str]:
    provider_setup("local")
    run_id = f"ev{uuid.uuid4().hex[:8]}"
    runs = str(tmp_path / "runs")
    result = swe_gym("evaluate", "--dataset", "bundled", "--run-dir", runs, "--run-id", run_id, *args, run_id=run_id)
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr
    assert not any(leftover_sandboxes(run_id).values()), "the evaluation left sandboxes behind"
    model = "gold" if "--gold" in args else MODEL.replace("/", "__")
    summary = json.loads((tmp_path / "runs" / run_id / f"{model}.{run_id}.json").read_text())
    return summary, result.stdout


def test_bad_predictions_are_each_categorised_and_the_run_finishes(tmp_path: Path) -> None:
    (gold, missing, empty, stale, prose, huge, binary, cheat, mistyped, *no_prediction) = TASKS
    rng = random.Random(0)
    garbage = bytes(rng.randrange(256) for _ in range(4096)).decode("latin-1") + "\x00"
    stale_patch = (
        "diff --git a/ledger/money.py b/ledger/money.py\n--- a/ledger/money.py\n+++ b/ledger/money.py\n"
        "@@ -1,3 +1,3 @@\n this line is not in the file\n-nor is this one\n+so the patch cannot apply\n context\n"
    )
    lines = [
        row(gold.instance_id, ""),  # superseded by the later row: the last one counts
        '{"instance_id": "swe-gym__broken-1", "model_patch": ',  # malformed JSON
        json.dumps({"instance_id": missing.instance_id, "model_name_or_path": MODEL}),  # no model_patch
        row("nobody__nothing-1", gold.patch),  # not in the dataset
        row(empty.instance_id, "  \n"),
        row(stale.instance_id, stale_patch),
        row(prose.instance_id, "I fixed the bug by handling the negative number in the parser."),
        row(huge.instance_id, "diff --git a/big.txt b/big.txt\n" + "+" * (10 << 20)),
        row(binary.instance_id, garbage),
        row(cheat.instance_id, added_file_patch("conftest.py", CHEAT_CONFTEST)),
        row(mistyped.instance_id, 42),
        "",
        row(gold.instance_id, gold.patch),
    ]
    predictions = tmp_path / "preds.jsonl"
    predictions.write_text("\n".join(lines) + "\n")

    summary, stdout = run_evaluate(tmp_path, "--predictions", str(predictions), "--workers", "3")
    ids = lambda *tasks: sorted(t.instance_id for t in tasks)  # noqa: E731

    assert summary["schema_version"] == 2
    assert summary["total_instances"] == len(TASKS)
    assert summary["resolved_ids"] == ids(gold)
    assert summary["unresolved_ids"] == ids(stale, prose, huge, binary, cheat)
    assert summary["completed_ids"] == ids(gold, stale, prose, huge, binary, cheat)
    assert summary["empty_patch_ids"] == ids(empty)
    assert summary["error_ids"] == ids(missing, mistyped)
    assert summary["incomplete_ids"] == ids(*no_prediction)
    submitted = [*ids(gold, missing, empty, stale, prose, huge, binary, cheat, mistyped), "nobody__nothing-1"]
    assert summary["submitted_ids"] == sorted(submitted)
    counts = {k: summary[f"{k}_instances"] for k in ("submitted", "completed", "resolved", "unresolved", "error")}
    assert counts == {"submitted": 10, "completed": 6, "resolved": 1, "unresolved": 5, "error": 2}
    assert summary["empty_patch_instances"] == 1

    ours = summary["swe_gym"]
    assert ours["unknown_instance_ids"] == ["nobody__nothing-1"]
    assert ours["duplicate_predictions"] == {gold.instance_id: [f"{predictions}:1", f"{predictions}:13"]}
    assert ours["masked"] == {}
    assert "model_patch: field required" in ours["errors"][missing.instance_id]
    assert f"{predictions}:3" in ours["errors"][missing.instance_id]
    assert "model_patch: input should be a valid string" in ours["errors"][mistyped.instance_id]
    invalid = {e["where"]: e for e in ours["invalid_predictions"]}
    assert set(invalid) == {f"{predictions}:{n}" for n in (2, 3, 11)}
    assert (
        "not valid JSON" in invalid[f"{predictions}:2"]["error"] and invalid[f"{predictions}:2"]["instance_id"] is None
    )
    reasons = ours["unresolved_reasons"]
    assert reasons[stale.instance_id] == "patch did not apply: not resolved"
    assert "not a unified diff" in reasons[prose.instance_id]
    assert "over the limit" in reasons[huge.instance_id]
    assert "NUL bytes" in reasons[binary.instance_id]
    assert reasons[cheat.instance_id].startswith("not resolved: FAIL_TO_PASS 0/")
    assert set(ours["durations_s"]) == set(summary["completed_ids"] + summary["empty_patch_ids"] + summary["error_ids"])

    # per-instance outputs: the patch, the GradeReport and the whole eval log
    instance = Path(ours["log_dir"]) / MODEL.replace("/", "__") / gold.instance_id
    assert (instance / "patch.diff").read_text() == gold.patch
    assert json.loads((instance / "report.json").read_text())["resolved"] is True
    assert "PASSED" in (instance / "eval.log").read_text()
    cheat_report = json.loads(
        (Path(ours["log_dir"]) / MODEL.replace("/", "__") / cheat.instance_id / "report.json").read_text()
    )
    assert cheat_report["patch_applied"] and "conftest.py" in cheat_report["restored_test_files"]

    assert "resolved       1 (10.0% of submitted)" in stdout
    assert f"invalid row    {predictions}:2: not valid JSON" in stdout


def test_gold_resolves_every_instance(tmp_path: Path) -> None:
    chosen = [t.instance_id for t in TASKS[:3]]
    summary, stdout = run_evaluate(tmp_path, "--gold", "--instance-id", *chosen, "--workers", "3")
    assert summary["resolved_ids"] == sorted(chosen)
    assert summary["total_instances"] == summary["submitted_instances"] == summary["completed_instances"] == 3
    assert summary["error_ids"] == summary["unresolved_ids"] == summary["incomplete_ids"] == []
    assert "resolved       3 (100.0% of submitted)" in stdout
    by_id = {t.instance_id: t for t in TASKS}  # what a report reads for its per-repository and per-family views
    assert summary["swe_gym"]["families"] == {iid: by_id[iid].family for iid in chosen}
    assert summary["swe_gym"]["repos"] == {iid: by_id[iid].repo for iid in chosen}


def test_ctrl_c_closes_the_sandboxes_of_gradings_in_flight(tmp_path: Path) -> None:
    provider_setup("local")
    run_id = f"ev{uuid.uuid4().hex[:8]}"
    command = [sys.executable, "-m", "swe_gym.cli.main", "evaluate", "--dataset", "bundled", "--gold"]
    command += ["--workers", "2", "--run-dir", str(tmp_path), "--run-id", run_id]
    env = {**os.environ, "SWE_GYM_RUN_ID": run_id}
    # A job started in the background by a non-interactive shell (as CI may be) inherits SIGINT
    # ignored, and Python then never turns it into KeyboardInterrupt: give the child the default.
    reset = lambda: signal.signal(signal.SIGINT, signal.SIG_DFL)  # noqa: E731
    pipes = {"stderr": subprocess.PIPE, "stdout": subprocess.PIPE, "text": True}
    with subprocess.Popen(command, env=env, preexec_fn=reset, **pipes) as process:
        assert process.stderr is not None
        for line in process.stderr:  # the first result: the others are being graded now
            if line.startswith("[1/"):
                break
        process.send_signal(signal.SIGINT)
        stdout, stderr = process.communicate(timeout=120)
    assert process.returncode == 130, stderr
    assert "interrupted: gradings cancelled" in stderr and "Traceback" not in stderr
    assert not any(leftover_sandboxes(run_id).values())


def test_usage_errors_are_one_line(tmp_path: Path) -> None:
    result = swe_gym("evaluate", "--dataset", "bundled", "--predictions", str(tmp_path / "none.jsonl"))
    assert result.returncode == 2 and result.stderr.strip().splitlines()[-1].startswith("error: predictions file")
    result = swe_gym("evaluate", "--dataset", "bundled", "--gold", "--workers", "0")
    assert result.returncode == 2 and "error: --workers must be >= 1" in result.stderr
    result = swe_gym("evaluate", "--dataset", "bundled")  # neither --predictions nor --gold: argparse's usage error
    assert result.returncode == 2 and "one of the arguments --predictions --gold is required" in result.stderr


def test_json_predictions_as_a_list_or_keyed_by_instance_id(tmp_path: Path) -> None:
    rows = [
        {"instance_id": "a", "model_name_or_path": "m", "model_patch": "diff --git a/x b/x\n", "full_output": "..."},
        {"instance_id": "b", "model_name_or_path": "m", "model_patch": None},
        "not an object",
    ]
    listed = tmp_path / "list.json"
    listed.write_text(json.dumps(rows))
    predictions, errors = read_predictions(listed)
    assert [p.instance_id for p in predictions] == ["a", "b"] and predictions[1].model_patch is None
    assert [(e.where, e.error) for e in errors] == [(f"{listed}[2]", "a prediction must be a JSON object, got str")]

    keyed = tmp_path / "keyed.json"
    keyed.write_text(json.dumps({"a": {"model_name_or_path": "m", "model_patch": "p"}, "b": {"model_patch": "p"}}))
    predictions, errors = read_predictions(keyed)
    assert [p.instance_id for p in predictions] == ["a"]
    assert errors[0].instance_id == "b" and "model_name_or_path: field required" in errors[0].error

    for name, text in [("bad.json", "{"), ("preds.txt", "[]")]:
        (tmp_path / name).write_text(text)
        with pytest.raises(ConfigError):
            read_predictions(tmp_path / name)


def test_jsonl_lines_that_are_not_utf8_are_reported_by_line(tmp_path: Path) -> None:
    path = tmp_path / "preds.jsonl"
    path.write_bytes(b'\xff\xfe{"x": 1}\n' + row("a", "diff --git a/x b/x\n").encode() + b"\n")
    predictions, errors = read_predictions(path)
    assert [p.instance_id for p in predictions] == ["a"]
    assert errors[0].where == f"{path}:1" and "not UTF-8" in errors[0].error


@pytest.mark.parametrize(
    ("patch", "verdict"),
    [
        ("--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b\n", None),  # plain unified diff, no git header
        ("diff --git a/x b/x\nold mode 100644\nnew mode 100755\n", None),
        ("\ud800", "lone UTF-16 surrogates"),
        ("+++ b/x\n", "not a unified diff"),
    ],
)
def test_reject_patch(patch: str, verdict: str | None) -> None:
    reason = reject_patch(patch)
    assert reason is None if verdict is None else verdict in (reason or "")


def test_default_workers_are_bounded() -> None:
    from swe_gym.cli.main import build_parser

    args = build_parser().parse_args(["evaluate", "--dataset", "bundled", "--gold"])
    assert args.workers == min(4, os.cpu_count() or 1)


def test_a_provider_that_raises_masks_only_the_instances_it_touches(tmp_path: Path) -> None:
    """A sandbox that cannot start, whatever the provider raised, is the environment's failure: masked."""
    from swe_gym.grading.evaluation import evaluate, gold_predictions

    tasks = TASKS[:3]
    seen: list[tuple[str, int, int]] = []
    report = evaluate(
        tasks,
        gold_predictions(tasks),
        provider=FakeExplodingProvider(),
        workers=2,
        run_dir=tmp_path,
        run_id="boom",
        on_result=lambda result, done, total: seen.append((result.status, done, total)),
    )
    assert report.resolved_ids == [] and report.error_ids == sorted(t.instance_id for t in tasks)  # masked count
    assert set(report.swe_gym.masked) == {t.instance_id for t in tasks}
    assert set(report.swe_gym.masked.values()) == {"grading sandbox could not start: boom"}
    assert sorted(seen) == [("masked", 1, 3), ("masked", 2, 3), ("masked", 3, 3)]
    assert report.path == tmp_path / "boom" / "gold.boom.json" and report.path.is_file()
