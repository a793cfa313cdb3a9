"""``swe-gym export --format harbor`` without a container: what an exported task's ``tests/`` carries (the twin
pass plans, the canary's place) and how its ``verify.py`` judges a pass's output. The same verifier against real
containers, graded by swe_gym and by the real ``harbor`` CLI, is in tests/redteam/test_harbor_attacks.py."""

from __future__ import annotations

import ast
import base64
import json
import random
import types
from pathlib import Path
from typing import Any

import pytest

from swe_gym.grading.patch import patch_paths
from swe_gym.grading.twin_pass import read_twin_sources
from swe_gym.sandbox import SandboxSpec
from swe_gym.sandbox.loop import run_sync
from swe_gym.tasks import load_bundled
from swe_gym.tasks.harbor_export import (
    VERIFY_SCRIPT,
    GoldCheck,
    canary_dir,
    export_task,
    host_repository,
    host_twin_sources,
    pass_plans,
)
from swe_gym.tasks.provision import provision
from tests.conftest import TEST_IMAGE, require_docker

NONCE = "0123456789abcdef"


@pytest.fixture(scope="module")
def verify() -> Any:
    module = types.ModuleType("swe_gym_exported_verify")
    exec(compile(VERIFY_SCRIPT, "verify.py", "exec"), module.__dict__)
    return module


@pytest.fixture(scope="module")
def parse() -> Any:
    from swe_gym.tasks.harbor_verdict import parse_pytest

    return parse_pytest


def sealed(body: str, nonce: str = NONCE) -> str:
    return f">>>>> Start Test Output {nonce}\n{body}>>>>> End Test Output {nonce}\n"


CANARY = {"path": "tests/test_value_1.py", "passing": "test_parse_value_1", "failing": "test_merge_token_2"}
SUMMARY = "==================== 1 failed, 2 passed in 0.01s ====================\n"
RESULTS = (
    "PASSED tests/test_a.py::test_one\n"
    "PASSED tests/test_value_1.py::test_parse_value_1\n"
    "FAILED tests/test_value_1.py::test_merge_token_2 - assert 1 == 2\n"
)


def test_the_verifier_runs_on_python_3_6(verify: Any) -> None:
    ast.parse(VERIFY_SCRIPT, feature_version=(3, 6))
    assert verify.seal(": '>>>>> Start Test Output'\npytest\n", "n") == ": '>>>>> Start Test Output n'\npytest\n"


def test_a_whole_pass_gives_each_tests_status(verify: Any, parse: Any) -> None:
    status, problem = verify.judge_pass(sealed(RESULTS + SUMMARY), 1, NONCE, parse, CANARY)
    assert problem is None and status == {"tests/test_a.py::test_one": "PASSED"}


@pytest.mark.parametrize(
    ("output", "exit_status", "wrong"),
    [
        # os._exit(0) before pytest's summary: whatever was printed, the run did not finish.
        (sealed(RESULTS), 0, "ended before pytest's final summary"),
        (sealed(RESULTS), 1, "ended before pytest's final summary"),
        # the summary forged, the exit status too: the canary still says 1.
        (sealed(RESULTS + SUMMARY), 0, "pytest exited 0"),
        (sealed(RESULTS + SUMMARY + "PASSED tests/test_a.py::test_two\n"), 1, "after pytest's final summary"),
        (sealed(RESULTS.replace("FAILED", "PASSED") + SUMMARY), 1, "canary test got the wrong result"),
        (sealed(RESULTS.split("PASSED tests/test_value")[0] + SUMMARY), 1, "canary tests are missing"),
        (sealed(RESULTS + sealed(SUMMARY)), 1, "exactly once"),
        (RESULTS + SUMMARY, 1, "exactly once"),
        ("", 1, "exactly once"),
    ],
)
def test_a_pass_that_is_not_whole_counts_for_nothing(
    verify: Any, parse: Any, output: str, exit_status: int, wrong: str
) -> None:
    status, problem = verify.judge_pass(output, exit_status, NONCE, parse, CANARY)
    assert status == {} and wrong in problem


def test_the_reward_needs_every_original_passing_and_no_twin_beside_it(verify: Any) -> None:
    graded = ["t::a", "t::b"]
    honest = [
        ({"t::a": "PASSED", "t::b": "FAILED"}, None, {"t::b": "t::b"}),
        ({"t::a": "FAILED", "t::b": "PASSED"}, None, {"t::a": "t::a"}),
    ]
    assert verify.decide(graded, honest) == (1, "resolved")
    forced = [
        ({"t::a": "PASSED", "t::b": "PASSED"}, None, {"t::b": "t::b"}),
        ({"t::a": "PASSED", "t::b": "PASSED"}, None, {"t::a": "t::a"}),
    ]
    reward, why = verify.decide(graded, forced)
    assert reward == 0 and why.startswith("tampering: the twin of 't::a'")
    unfixed = [
        ({"t::a": "FAILED", "t::b": "FAILED"}, None, {"t::a": "t::a"}),
        ({"t::a": "PASSED", "t::b": "FAILED"}, None, {}),
    ]
    assert verify.decide(graded, unfixed) == (0, "not resolved: t::b")
    assert verify.decide(graded, [({}, "the test run ended before pytest's final summary", {})])[0] == 0
    assert verify.decide(graded, [({"t::a": "PASSED"}, None, {})]) == (0, "not resolved: t::b")  # missing: failed
    assert verify.decide(graded, forced, unchecked={"t::a", "t::b"}) == (1, "resolved")  # twins passing under gold
    renamed = [  # a twin whose parameter id changed runs under another id: it is read there, never as a test
        ({"t::a": "PASSED", "t::b": "PASSED", "t::b[2]": "PASSED"}, None, {"t::b": "t::b[2]"}),
        ({"t::a": "PASSED", "t::b": "PASSED"}, None, {"t::a": "t::a"}),
    ]
    assert verify.decide(graded, renamed)[1].startswith("tampering")


def test_test_files_go_in_without_following_links(verify: Any, tmp_path: Path) -> None:
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "work").mkdir()
    (tmp_path / "work" / "tests").symlink_to(tmp_path / "elsewhere")
    blob = base64.b64encode(b"def test_x():\n    pass\n").decode()
    verify.install_files(str(tmp_path / "work"), {"tests/test_x.py": ["b", 0o644], "old.py": None}, {"b": blob})
    assert (tmp_path / "work" / "tests").is_dir() and not (tmp_path / "work" / "tests").is_symlink()
    assert (tmp_path / "work" / "tests" / "test_x.py").read_bytes().startswith(b"def test_x")
    assert not list((tmp_path / "elsewhere").iterdir())
    with pytest.raises(ValueError):
        verify.install_files(str(tmp_path / "work"), {"../escape.py": None}, {})


def test_a_canary_is_drawn_afresh_beside_the_first_test_file(verify: Any) -> None:
    assert canary_dir("python3 -m pytest -rA -p no:cacheprovider tests/test_a.py tests/b/test_b.py") == "tests"
    assert canary_dir("cd sub && pytest tests/test_a.py") is None  # not a lone pytest command: no canary
    rng = random.Random(3)
    one, two = verify.make_canary(rng, "tests"), verify.make_canary(rng, "tests")
    assert one["path"].startswith("tests/test_") and one["path"] != two["path"]
    assert {one["passing"], one["failing"]}.isdisjoint({two["passing"], two["failing"]})
    scope: dict[str, Any] = {}
    exec(one["source"], scope)  # the canary's own source
    scope[one["passing"]]()
    with pytest.raises(AssertionError):
        scope[one["failing"]]()


def test_each_graded_tests_twin_runs_in_exactly_one_pass_of_every_plan() -> None:
    task = next(t for t in load_bundled() if t.instance_id == "swe-gym__textkit-1")
    with host_repository(task) as repo:
        plan, twins = pass_plans(task, repo, count=4)
        plain = repo.after(task.test_patch, sorted(set(patch_paths(task.test_patch))))
    graded = {*task.fail_to_pass, *task.pass_to_pass}
    assert len(plan["plans"]) == 4 and "twinned in 2 passes" in twins
    for each in plan["plans"]:
        first, second = (set(ids) for ids in each["twinned"])
        assert not first & second and (first | second) <= graded and first | second
        for files in each["files"]:
            assert set(files) >= set(plain)  # every file the test patch touches, written in each pass
            for path, entry in plain.items():
                if not path.endswith(".py"):  # what no twin lives in is the test patch's, byte for byte
                    assert (
                        files[path] is None
                        if entry is None
                        else plan["blobs"][files[path][0]] == (base64.b64encode(entry[0]).decode())
                    )
        assert each["files"][0] != each["files"][1]


def test_an_exported_task_carries_the_verifier_and_not_the_originals(tmp_path: Path) -> None:
    task = next(t for t in load_bundled() if t.instance_id == "swe-gym__textkit-1")
    target = export_task(task, tmp_path, image="swe-gym-test:bookworm", gold=GoldCheck())  # no gold run here
    tests = target / "tests"
    assert sorted(p.name for p in tests.iterdir()) == ["plan.json", "test.sh", "verdict.py", "verify.json", "verify.py"]
    config = json.loads((tests / "verify.json").read_text())
    assert config["mode"] == "passes" and config["canary_dir"] == "tests" and config["test_cmd"] == task.eval.test_cmd
    assert "exec python3 -I /tests/verify.py" in (tests / "test.sh").read_text()
    assert "timeout_sec = 3720.0" in (target / "task.toml").read_text()  # two passes of the eval timeout, and a margin


@pytest.mark.parametrize("instance_id", ["swe-gym__textkit-1", "swe-gym__ledger-1"])
def test_the_hosts_twin_sources_are_the_graders(instance_id: str) -> None:
    """What the export reads on the host is what the safe grader reads in a sandbox at base
    (`swe_gym.grading.twin_pass.read_twin_sources`), so the exported twins are the grader's."""
    require_docker()
    task = next(t for t in load_bundled() if t.instance_id == instance_id)

    async def in_sandbox() -> Any:
        sandbox = await provision(task, "docker", SandboxSpec(image=TEST_IMAGE))
        try:
            return await read_twin_sources(sandbox, task)
        finally:
            await sandbox.close()

    with host_repository(task) as repo:
        assert host_twin_sources(task, repo) == run_sync(in_sandbox())
