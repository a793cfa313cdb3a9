"""Harbor task directories as swe_gym tasks: loading (images built by content from the local test image), clear
errors for bad tasks, and real episodes graded by the task's own verifier (gold, empty and partial solutions) on
docker and apptainer. The fixtures are Harbor tasks written for this repository: ``slugfix`` (a git repository with
a bug, pytest behind ``tests/test.sh``, reward.txt), ``csv-report`` (no git, two checks, a fractional reward.json)
and ``report-artifact`` (the answer outside the work tree, in an artifact the task names).
"""

from __future__ import annotations

import io
import shutil
import tarfile
from pathlib import Path
from typing import Any

import gymnasium as gym
import pytest

from swe_gym.errors import TaskError
from swe_gym.grading.harbor_verifier import keep_artifacts, parse_reward, reward_names, verifier_text
from swe_gym.policies.oracle import OraclePolicy
from swe_gym.tasks import harbor, load_tasks
from tests.conftest import provider_setup, require_docker

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "harbor"
SLUGFIX, CSV, REPORT = "swe-gym-fixtures__slugfix", "swe-gym-fixtures__csv-report", "swe-gym-fixtures__report-artifact"


@pytest.fixture(scope="module")
def tasks() -> dict[str, Any]:
    require_docker()
    return {task.instance_id: task for task in load_tasks(FIXTURES)}


def test_a_folder_of_tasks_and_one_task_directory_load(tasks: dict[str, Any]) -> None:
    assert sorted(tasks) == [CSV, REPORT, SLUGFIX]
    slugfix, csv = tasks[SLUGFIX], tasks[CSV]
    assert slugfix.family == csv.family == "harbor"
    assert slugfix.workdir == "/testbed" and csv.workdir == "/app"  # from each Dockerfile's WORKDIR
    assert slugfix.problem_statement.startswith("`slugify.slug(") and "sales.csv" in csv.problem_statement
    assert (slugfix.eval.toolkit, slugfix.eval.timeout_s, csv.eval.timeout_s) == ("harbor", 120.0, 60.0)
    assert slugfix.resources is not None and (slugfix.resources.cpus, slugfix.resources.memory_mb) == (1, 1024)
    assert slugfix.metadata["harbor"]["agent_timeout_s"] == 600.0
    assert csv.metadata["harbor"]["verifier_env"] == {"EXPECTED_ROWS": "3"}
    assert tasks[REPORT].metadata["harbor"]["artifacts"] == ["/logs/artifacts", "/var/tmp/report"]
    assert slugfix.image and slugfix.image.startswith("swe-gym-harbor:") and slugfix.image != csv.image
    (again,) = load_tasks(FIXTURES / "slugfix")
    assert again.image == slugfix.image  # the same content, the same (already built) image


def test_an_image_is_named_by_its_build_context(tmp_path: Path) -> None:
    task = shutil.copytree(FIXTURES / "csv-report", tmp_path / "csv-report")
    before = harbor.to_task(task).image
    (task / "task.toml").write_text((task / "task.toml").read_text().replace("60.0", "61.0"))
    assert harbor.to_task(task).image == before  # task.toml is not in the image
    (task / "environment" / "Dockerfile").write_text((task / "environment" / "Dockerfile").read_text() + "\n# x\n")
    assert harbor.to_task(task).image != before


def test_a_base_image_not_on_the_engine_is_a_clear_error_not_a_pull(tmp_path: Path) -> None:
    require_docker()
    task = shutil.copytree(FIXTURES / "csv-report", tmp_path / "absent-base")
    (task / "environment" / "Dockerfile").write_text("FROM swe-gym-absent-base:never\nWORKDIR /app\n")
    with pytest.raises(TaskError, match=r"base image swe-gym-absent-base:never is not on the Docker engine.*pull"):
        load_tasks(task)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda t: (t / "task.toml").write_text("[verifier\n"), "cannot read it as TOML"),
        (lambda t: (t / "tests" / "test.sh").unlink(), "needs tests/test.sh"),
        (lambda t: (t / "instruction.md").unlink(), "needs instruction.md"),
        (lambda t: shutil.rmtree(t / "environment"), "docker_image or an environment/Dockerfile"),
        (lambda t: (t / "task.toml").write_text('[verifier]\ntimeout_sec = "soon"\n'), "timeout_sec"),
        (lambda t: (t / "task.toml").write_text('[[steps]]\nname = "one"\n'), "multi-step"),
    ],
)
def test_malformed_tasks_are_clear_errors(tmp_path: Path, change: Any, message: str) -> None:
    task = shutil.copytree(FIXTURES / "csv-report", tmp_path / "bad")
    change(task)
    with pytest.raises(TaskError, match=message):
        harbor.to_task(task)


def test_a_harbor_dataset_by_name_says_how_to_get_it() -> None:
    """Only Harbor's online registry maps a dataset name to its tasks; the error says how to download it."""
    with pytest.raises(TaskError, match=r"harbor datasets download terminal-bench@2\.0 -o DIR"):
        load_tasks("terminal-bench@2.0")


def test_reward_files_read_as_harbor_reads_them(tmp_path: Path) -> None:
    assert parse_reward("reward.txt", b"1\n") == 1.0 and parse_reward("reward.txt", b" 0.25 ") == 0.25
    assert parse_reward("reward.json", b'{"reward": 0.5, "style": 1}') == 0.5
    assert parse_reward("reward.json", b'{"accuracy": 0.75}') == 0.75 and parse_reward("reward.json", b"1") == 1.0
    for name, data in [("reward.txt", b""), ("reward.txt", b"nan"), ("reward.json", b"true"), ("reward.json", b"{}")]:
        with pytest.raises(ValueError):
            parse_reward(name, data)
    assert reward_names(verifier_text(FIXTURES / "slugfix" / "tests")) == ("reward.txt",)
    assert reward_names(verifier_text(FIXTURES / "csv-report" / "tests")) == ("reward.json",)
    (tmp_path / "test.sh").write_text("rewardkit /tests\n")  # a helper writes it: either kind is read
    assert reward_names(verifier_text(tmp_path)) == ("reward.json", "reward.txt")


def episode(env: gym.Env[str, str], task_id: str, actions: list[str]) -> tuple[float, dict[str, Any], list[str]]:
    """Reset to ``task_id``, run ``actions``, submit: (reward, final info, observations)."""
    env.reset(options={"task_id": task_id})
    seen = [env.step(action)[0] for action in actions]
    _, reward, terminated, _, info = env.step("submit")
    assert terminated and not info["masked"], info["masked_reason"]
    return reward, info, seen


@pytest.mark.parametrize("provider", ["docker", "apptainer"])
def test_gold_and_empty_solutions_get_the_verifiers_reward(provider: str, tasks: dict[str, Any]) -> None:
    config, _ = provider_setup(provider)
    env = gym.make("swe_gym/SWE-v0", tasks=str(FIXTURES), provider=config, prestart_grading=False)
    try:
        oracle = OraclePolicy(env.unwrapped.tasks)  # type: ignore[attr-defined]
        cases = [(SLUGFIX, "/testbed", "reward.txt"), (CSV, "/app", "reward.json"), (REPORT, "/app", "reward.txt")]
        for task_id, workdir, reward_file in cases:
            observation, info = env.reset(options={"task_id": task_id})
            hidden = env.step("ls -d /tests /solution /logs 2>&1; pwd")[0]
            assert hidden.count("No such file or directory") == 3 and hidden.strip().endswith(workdir), hidden
            oracle.reset(observation, info)
            env.step(oracle.act(observation, info))  # unpacks solution/ and runs solve.sh
            _, gold, terminated, _, report = env.step(oracle.act(observation, info))
            assert terminated and gold == 1.0 and report["resolved"], report["report"]
            assert report["report"]["score_source"] == f"/logs/verifier/{reward_file}"
            empty, info, _ = episode(env, task_id, [])
            assert empty == 0.0 and not info["resolved"], info["report"]
    finally:
        env.close()


def test_a_fraction_where_the_verifier_writes_one(tasks: dict[str, Any]) -> None:
    config, _ = provider_setup("docker")
    env = gym.make("swe_gym/SWE-v0", tasks=str(FIXTURES / "csv-report"), provider=config, prestart_grading=False)
    try:
        reward, info, _ = episode(env, CSV, ["tail -n +2 sales.csv | wc -l > count.txt"])
        assert reward == 0.5 and not info["resolved"] and info["report"]["score"] == 0.5
        assert "count.txt" in info["patch"]  # the work tree is what reached the verifier
    finally:
        env.close()


def test_only_files_and_directories_under_the_named_artifacts_reach_the_verifier() -> None:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as archive:
        for name, kind, target in [
            ("var/tmp/report", tarfile.DIRTYPE, ""),
            ("var/tmp/report/lines.txt", tarfile.REGTYPE, ""),
            ("./var/tmp/report/sub/../../../../usr/bin/python3", tarfile.REGTYPE, ""),  # climbs out
            ("var/tmp/report/bin", tarfile.SYMTYPE, "/usr/bin"),  # would aim later members elsewhere
            ("var/tmp/report/hard", tarfile.LNKTYPE, "etc/passwd"),
            ("var/tmp/report/dev", tarfile.CHRTYPE, ""),
            ("usr/bin/bash", tarfile.REGTYPE, ""),  # outside every artifact
            ("var/tmp/reporter/x", tarfile.REGTYPE, ""),  # a sibling whose name starts alike
        ]:
            member = tarfile.TarInfo(name)
            member.type, member.linkname = kind, target
            data = b"4\n" if kind == tarfile.REGTYPE else b""
            member.size = len(data)
            archive.addfile(member, io.BytesIO(data) if data else None)
    kept = tarfile.open(fileobj=io.BytesIO(keep_artifacts(buffer.getvalue(), ["/logs/artifacts", "/var/tmp/report"])))
    assert kept.getnames() == ["var/tmp/report", "var/tmp/report/lines.txt"]
    assert keep_artifacts(buffer.getvalue(), ["/logs/artifacts"]) == b""  # none there: nothing to upload


def test_the_tasks_time_limit_for_the_agent_ends_the_episode(tmp_path: Path, tasks: dict[str, Any]) -> None:
    task = shutil.copytree(FIXTURES / "report-artifact", tmp_path / "report-artifact")
    config_file = task / "task.toml"
    config_file.write_text(config_file.read_text().replace("timeout_sec = 120.0", "timeout_sec = 2.0"))
    config, _ = provider_setup("docker")
    env = gym.make("swe_gym/SWE-v0", tasks=str(task), provider=config, prestart_grading=False, step_timeout=60)
    try:
        env.reset()
        observation, reward, terminated, truncated, info = env.step("sleep 30")
        assert info["timed_out"] and truncated and not terminated and reward == 0.0
        assert "the task's time limit reached" in observation and info["report"] is not None  # graded
    finally:
        env.close()
