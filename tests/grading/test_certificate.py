"""The fidelity certificate (`swe-gym validate`) on the real local provider, and evaluate and the envs using it."""

from __future__ import annotations

import json
import logging
import os
import signal
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from swe_gym.errors import ConfigError
from swe_gym.grading import patch_paths
from swe_gym.grading.certificate import (
    Certificate,
    RunResult,
    judge,
    load_certificate,
    validate,
)
from swe_gym.grading.evaluation import evaluate, gold_predictions
from swe_gym.grading.parsers import TestStatus
from swe_gym.grading.report import GradeReport
from swe_gym.sandbox import SandboxSpec
from swe_gym.tasks import SWETask, load_tasks
from tests.conftest import TEST_IMAGE, leftover_sandboxes, provider_setup, require_docker
from tests.fake_exploding_provider import FakeExplodingProvider

TASKS = {t.instance_id: t for t in load_tasks("bundled")}
GOOD = TASKS["swe-gym__iniconf-1"]
ABSENT = TASKS["swe-gym__ledger-1"]  # never validated: uncertified by absence
NO_SUCH_TEST = "tests/test_config.py::test_that_does_not_exist"


def variant(task: SWETask, suffix: str, **changes: object) -> SWETask:
    return task.model_copy(update={"instance_id": f"{task.instance_id}-{suffix}", **changes})


#: FAIL_TO_PASS names a test that does not exist: gold can never resolve it.
MISSING_TEST = variant(GOOD, "missing-test", fail_to_pass=[*GOOD.fail_to_pass, NO_SUCH_TEST])
#: FAIL_TO_PASS is a test that passes before the fix: the empty patch resolves it.
UNDETECTED = variant(GOOD, "undetected", fail_to_pass=GOOD.pass_to_pass[:1], pass_to_pass=GOOD.pass_to_pass[1:])


def added_file(path: str, text: str) -> str:
    lines = text.splitlines()
    body = "".join(f"+{line}\n" for line in lines)
    header = f"diff --git a/{path} b/{path}\nnew file mode 100644\n--- /dev/null\n+++ b/{path}\n"
    return f"{header}@@ -0,0 +1,{len(lines)} @@\n{body}"


#: Passes on odd runs and fails on even ones, counting gold and empty runs apart (by the fixed files'
#: content) in a host directory: a test that really flips, so it needs the unisolated local provider.
FLAKY_TEST = """\
import fcntl
import hashlib
import pathlib

ROOT = pathlib.Path(__file__).resolve().parents[1]


def test_flips():
    key = hashlib.sha256(b"".join((ROOT / p).read_bytes() for p in {paths!r})).hexdigest()[:16]
    counter = pathlib.Path({counters!r}) / key
    with open(str(counter) + ".lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        runs = int(counter.read_text()) + 1 if counter.exists() else 1
        counter.write_text(str(runs))
    assert runs % 2 == 1
"""


def flaky_variant(counters: Path) -> SWETask:
    source = FLAKY_TEST.format(paths=sorted(patch_paths(GOOD.patch)), counters=str(counters))
    return variant(
        GOOD,
        "flaky",
        test_patch=GOOD.test_patch + added_file("tests/test_flaky.py", source),
        pass_to_pass=[*GOOD.pass_to_pass, "tests/test_flaky.py::test_flips"],
        eval=GOOD.eval.model_copy(update={"test_cmd": f"{GOOD.eval.test_cmd} tests/test_flaky.py"}),
    )


@pytest.fixture(scope="module")
def validated(tmp_path_factory: pytest.TempPathFactory) -> tuple[Certificate, Path, list[tuple[int, int]]]:
    """One real validation (k=2) of a sound task and two defective copies, written to a file."""
    provider_setup("local")
    seen: list[tuple[int, int]] = []
    certificate = validate(
        [GOOD, MISSING_TEST, UNDETECTED],
        k=2,
        provider="local",
        workers=2,
        dataset="bundled",
        on_progress=lambda event, done, total: seen.append((done, total)),
    )
    path = certificate.write(tmp_path_factory.mktemp("certificate") / "bundled.json")
    return certificate, path, seen


def test_gold_resolves_and_empty_does_not_every_time(validated) -> None:
    certificate, _, seen = validated
    entry = certificate.instances[GOOD.instance_id]
    assert entry.passed and entry.problems == []
    assert (entry.k, entry.gold_resolved, entry.empty_unresolved) == (2, 2, 2)
    assert entry.gold_masked == entry.empty_masked == 0 and entry.masked_reasons == [] and entry.flaky == {}
    assert [r.outcome for r in entry.gold_runs] == ["resolved"] * 2
    assert [r.outcome for r in entry.empty_runs] == ["unresolved"] * 2
    assert all(r.duration_s > 0 for r in [*entry.gold_runs, *entry.empty_runs])
    assert entry.image is None and entry.image_digest is None  # local: no images
    assert seen == [(n, 12) for n in range(1, 13)]
    assert (certificate.k, certificate.provider, certificate.dataset) == (2, "local", "bundled")
    assert certificate.created.endswith("+00:00")


def test_defective_tasks_fail_with_their_problems(validated) -> None:
    certificate, _, _ = validated
    missing = certificate.instances[MISSING_TEST.instance_id]
    assert not missing.passed and missing.gold_resolved == 0 and missing.empty_unresolved == 2
    assert missing.problems[0].startswith("gold patch resolved 0/2 runs")
    assert NO_SUCH_TEST in missing.problems[0] and missing.gold_runs[0].unexpected == [NO_SUCH_TEST]
    undetected = certificate.instances[UNDETECTED.instance_id]
    assert not undetected.passed and undetected.gold_resolved == 2 and undetected.empty_unresolved == 0
    assert undetected.problems == ["empty patch resolved 2/2 runs: the tests do not detect the bug (task defect)"]
    summary = certificate.summary
    assert (summary.total, summary.passed, summary.failed) == (3, 1, 2)
    assert summary.failed_ids == [MISSING_TEST.instance_id, UNDETECTED.instance_id]
    assert summary.flaky_ids == summary.masked_ids == [] and summary.wall_s > 0


def test_certificate_round_trips_and_bad_files_are_config_errors(validated, tmp_path: Path) -> None:
    certificate, path, _ = validated
    loaded = load_certificate(path)
    assert loaded.model_dump() == certificate.model_dump() and loaded.path == path
    assert json.loads(path.read_text())["instances"][GOOD.instance_id]["passed"] is True
    with pytest.raises(ConfigError, match="does not exist; create one with: swe-gym validate"):
        load_certificate(tmp_path / "none.json")
    (tmp_path / "bad.json").write_text("{")
    with pytest.raises(ConfigError, match="is not valid JSON"):
        load_certificate(tmp_path / "bad.json")
    (tmp_path / "other.json").write_text('{"dataset": "x"}')
    with pytest.raises(ConfigError, match=r"is not a swe_gym certificate \(created: Field required"):
        load_certificate(tmp_path / "other.json")


def test_a_test_that_flips_between_runs_is_flaky(tmp_path: Path) -> None:
    provider_setup("local-unisolated")
    (tmp_path / "counters").mkdir()
    task = flaky_variant(tmp_path / "counters")
    certificate = validate([task], k=2, provider={"type": "local", "isolation": "none"}, workers=2)
    entry = certificate.instances[task.instance_id]
    flaky = entry.flaky["tests/test_flaky.py::test_flips"]
    # The empty patch grades in one pass, so its runs alternate exactly; gold grades in two concurrent passes (a
    # twin of the flipping test in one of them), so which run sees which count is a race, and a flip between the
    # passes can even read as tampering: a flaky graded test fails the certificate either way.
    assert sorted(flaky.empty) == ["FAILED", "PASSED"] and flaky.graded
    assert list(entry.flaky) == ["tests/test_flaky.py::test_flips"]  # the steady tests are not flaky
    assert not entry.passed  # how many gold runs resolve is a race (see above); the flaky test fails it anyway
    assert any(p.startswith("flaky graded tests") and "test_flips" in p for p in entry.problems)
    assert certificate.summary.flaky_ids == [task.instance_id]


def test_a_provider_that_raises_masks_the_run_and_the_run_goes_on() -> None:
    """A sandbox that cannot start, for whatever reason, is the environment's failure: masked, never a raise."""
    tasks = [GOOD, ABSENT]
    certificate = validate(tasks, k=1, provider=FakeExplodingProvider(), workers=2)
    assert certificate.summary.failed_ids == sorted(t.instance_id for t in tasks)
    entry = certificate.instances[GOOD.instance_id]
    assert entry.errors == []
    assert entry.masked_reasons == [
        "gold run 1: grading sandbox could not start: boom",
        "empty run 1: grading sandbox could not start: boom",
    ]
    assert entry.gold_masked == entry.empty_masked == 1 and not entry.passed


def test_flakiness_is_judged_per_patch() -> None:
    from swe_gym.grading.certificate import flaky_tests

    def report(**status: str) -> GradeReport:
        return GradeReport(instance_id=GOOD.instance_id, test_status={k: TestStatus(v) for k, v in status.items()})

    gold = [report(a="PASSED", b="PASSED"), report(a="PASSED"), None]  # b missing once; a masked run has no say
    empty = [report(a="FAILED", b="PASSED"), report(a="FAILED", b="PASSED")]  # a differs from gold: not flaky
    flaky = flaky_tests(GOOD, gold, empty)
    assert list(flaky) == ["b"] and flaky["b"].gold == ["PASSED", "MISSING", None] and not flaky["b"].graded
    runs = [RunResult(outcome="resolved")] * 2
    assert judge(2, runs, [RunResult(outcome="unresolved")] * 2, flaky) == []  # an ungraded flaky test is listed only


@pytest.mark.docker
def test_docker_records_the_image_digest_and_a_missing_image_is_masked() -> None:
    require_docker()
    missing = variant(GOOD, "no-image", image="swe-gym-test:no-such-tag")
    certificate = validate([GOOD, missing], k=1, provider="docker", spec=SandboxSpec(image=TEST_IMAGE))
    entry = certificate.instances[GOOD.instance_id]
    assert entry.passed, entry.problems
    assert entry.image == TEST_IMAGE and entry.image_digest and entry.image_digest.startswith("sha256:")
    import docker

    assert entry.image_digest == docker.from_env().images.get(TEST_IMAGE).id
    gone = certificate.instances[missing.instance_id]
    assert not gone.passed and gone.image_digest is None and (gone.gold_masked, gone.empty_masked) == (1, 1)
    assert len(gone.masked_reasons) == 2 and gone.masked_reasons[0].startswith("gold run 1: ")
    assert certificate.summary.masked_ids == [missing.instance_id]


# -- accepting the certificate -------------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["skip", "flag"])
def test_evaluate_skips_or_flags_uncertified_instances(validated, tmp_path: Path, mode: str) -> None:
    certificate, path, _ = validated
    tasks = [GOOD, MISSING_TEST, ABSENT]
    report = evaluate(
        tasks,
        gold_predictions(tasks),
        workers=2,
        run_dir=tmp_path,
        run_id=mode,
        certificate=load_certificate(path),
        uncertified=mode,  # type: ignore[arg-type]
    )
    section = report.swe_gym
    assert section.uncertified_mode == mode and section.certificate == str(path)
    assert sorted(section.uncertified) == sorted([MISSING_TEST.instance_id, ABSENT.instance_id])
    assert section.uncertified[MISSING_TEST.instance_id].startswith(f"failed the certificate {path}: gold patch")
    assert section.uncertified[ABSENT.instance_id].startswith(f"not in the certificate {path}")
    if mode == "skip":
        assert report.resolved_ids == [GOOD.instance_id] and report.completed_ids == [GOOD.instance_id]
        assert {report.results[t.instance_id].status for t in (MISSING_TEST, ABSENT)} == {"skipped"}
        assert report.incomplete_ids == report.error_ids == []
    else:
        assert report.resolved_ids == sorted([GOOD.instance_id, ABSENT.instance_id])
        assert report.unresolved_ids == [MISSING_TEST.instance_id]
    on_disk = json.loads(report.path.read_text())["swe_gym"]
    assert on_disk["uncertified"] == section.uncertified and on_disk["uncertified_mode"] == mode


def test_env_skips_or_flags_uncertified_tasks(validated) -> None:
    from swe_gym.envs.swe_env import SWEEnv
    from swe_gym.vector.swe_vector_env import SWEVectorEnv

    _, path, _ = validated
    tasks = [GOOD, MISSING_TEST, ABSENT]
    options = {"certificate": str(path), "prestart_grading": False, "pool_size": 0}
    env = SWEEnv(tasks, "local", uncertified="skip", **options)
    try:
        assert [t.instance_id for t in env.tasks] == [GOOD.instance_id]
        _, info = env.reset(seed=0)
        assert info["instance_id"] == GOOD.instance_id and "uncertified" not in info
    finally:
        env.close()
    env = SWEEnv(tasks, "local", uncertified="flag", **options)
    try:
        assert [t.instance_id for t in env.tasks] == [t.instance_id for t in tasks]
        _, info = env.reset(options={"task_id": MISSING_TEST.instance_id})
        assert info["uncertified"].startswith(f"failed the certificate {path}: gold patch resolved 0/2")
    finally:
        env.close()
    vector = SWEVectorEnv(2, tasks, "local", uncertified="skip", **options)
    try:
        assert [t.instance_id for t in vector.tasks] == [GOOD.instance_id]
    finally:
        vector.close()
    with pytest.raises(ConfigError, match="no task is left"):
        SWEEnv([MISSING_TEST, ABSENT], "local", uncertified="skip", **options)
    with pytest.raises(ConfigError, match="does not exist"):
        SWEEnv(tasks, "local", **{**options, "certificate": str(path) + ".missing"})


# -- the command line ---------------------------------------------------------------------------------


@pytest.fixture
def cli() -> Iterator[object]:
    """`swe_gym.cli.main.main`, with the root logger put back afterwards (main installs its own handler)."""
    from swe_gym.cli.main import main

    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    yield main
    root.handlers[:] = handlers
    root.setLevel(level)


def test_cli_validate_writes_the_certificate_and_evaluate_reads_it(cli, tmp_path: Path, capsys) -> None:
    provider_setup("local")
    out = tmp_path / "cert.json"
    args = ["validate", "--dataset", "bundled", "--instance-id", GOOD.instance_id, "--k", "1", "--out", str(out)]
    assert cli(args) == 0
    printed = capsys.readouterr()
    assert "passed         1 (100.0%)" in printed.out and f"certificate    {out}" in printed.out
    assert f"{GOOD.instance_id}: passed (gold 1/1, empty 1/1)" in printed.err
    certificate = load_certificate(out)
    assert list(certificate.instances) == [GOOD.instance_id] and certificate.summary.passed == 1

    runs = tmp_path / "runs"
    args = ["evaluate", "--dataset", "bundled", "--gold", "--instance-id", GOOD.instance_id, ABSENT.instance_id]
    args += ["--certificate", str(out), "--uncertified", "skip", "--run-dir", str(runs), "--run-id", "c"]
    assert cli(args) == 0
    printed = capsys.readouterr()
    assert f"uncertified    {ABSENT.instance_id}: not in the certificate" in printed.out
    summary = json.loads((runs / "c" / "gold.c.json").read_text())
    assert summary["resolved_ids"] == [GOOD.instance_id] and list(summary["swe_gym"]["uncertified"]) == [
        ABSENT.instance_id
    ]


def test_cli_usage_errors_exit_2(cli, tmp_path: Path, capsys) -> None:
    assert cli(["validate", "--dataset", "bundled", "--k", "0"]) == 2
    assert "error: --k must be >= 1, got 0" in capsys.readouterr().err
    assert cli(["validate", "--dataset", "bundled", "--workers", "0"]) == 2
    args = ["evaluate", "--dataset", "bundled", "--gold", "--certificate", str(tmp_path / "none.json")]
    assert cli(args) == 2
    assert "error: certificate" in capsys.readouterr().err


def test_ctrl_c_cancels_the_validation_and_closes_its_sandboxes(tmp_path: Path) -> None:
    provider_setup("local")
    run_id = f"va{uuid.uuid4().hex[:8]}"
    out = tmp_path / "cert.json"
    command = [sys.executable, "-m", "swe_gym.cli.main", "validate", "--dataset", "bundled", "--k", "3"]
    command += ["--workers", "2", "--out", str(out)]
    # A background job of a non-interactive shell inherits SIGINT ignored: give the child the default.
    reset = lambda: signal.signal(signal.SIGINT, signal.SIG_DFL)  # noqa: E731
    pipes = {"stderr": subprocess.PIPE, "stdout": subprocess.PIPE, "text": True}
    with subprocess.Popen(command, env={**os.environ, "SWE_GYM_RUN_ID": run_id}, preexec_fn=reset, **pipes) as process:
        assert process.stderr is not None
        for line in process.stderr:  # the first instance is done: later runs are being graded now
            if line.startswith("[runs "):
                break
        process.send_signal(signal.SIGINT)
        _, stderr = process.communicate(timeout=120)
    assert process.returncode == 130, stderr
    assert "interrupted: gradings cancelled" in stderr and "Traceback" not in stderr
    assert not out.exists()
    assert not any(leftover_sandboxes(run_id).values())


def test_a_task_whose_graded_tests_are_mostly_uncovered_is_weakly_checked() -> None:
    from swe_gym.grading.certificate import weakly_checked

    task = next(iter(TASKS.values()))
    graded = [*task.fail_to_pass, *task.pass_to_pass]
    half = dict.fromkeys(graded[: len(graded) // 2], "no twin")
    assert weakly_checked(task, half) is None
    most = dict.fromkeys(graded[: len(graded) // 2 + 1], "no twin")
    assert (
        weakly_checked(task, most)
        == f"{len(most)} of {len(graded)} graded tests have no check code under test cannot tell apart"
    )


def test_cli_validate_prints_a_weakly_checked_task(cli, tmp_path: Path, capsys) -> None:
    """semverkit's graded tests are mostly truth tests and tables by name: no literal expected value to perturb."""
    provider_setup("local")
    out = tmp_path / "cert.json"
    args = ["validate", "--dataset", "bundled", "--instance-id", "swe-gym__semverkit-1", "--k", "1", "--out", str(out)]
    assert cli(args) == 0
    entry = load_certificate(out).instances["swe-gym__semverkit-1"]
    assert entry.passed and entry.weakly_checked, entry
    assert f"weakly checked swe-gym__semverkit-1: {entry.weakly_checked}" in capsys.readouterr().out
