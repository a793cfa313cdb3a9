"""The agent's sandbox never shows git history after the base commit; the grader still grades."""

from __future__ import annotations

import gymnasium as gym
import pytest

import swe_gym  # noqa: F401 - registers the env
from swe_gym.tasks import SWETask
from tests.conftest import require_docker
from tests.family_images import CalcRepo, swebench_image

IMAGE = "swe-gym-test-history:latest"


@pytest.fixture(scope="module")
def repo_and_image(tmp_path_factory: pytest.TempPathFactory) -> tuple[CalcRepo, str]:
    require_docker()
    root = tmp_path_factory.mktemp("history")
    repo = CalcRepo.create(root / "repo")
    return repo, swebench_image(IMAGE, repo, root / "context")


def _task(repo: CalcRepo, image: str, **extra: object) -> SWETask:
    return SWETask(
        instance_id="calc__calc-1",
        repo="example/calc",
        problem_statement="add() subtracts",
        base_commit=repo.base,
        image=image,
        test_cmd="pytest -rA tests/test_calc.py",
        FAIL_TO_PASS=["tests/test_calc.py::test_add"],
        PASS_TO_PASS=["tests/test_calc.py::test_sub"],
        patch=repo.gold_patch,
        test_patch=repo.test_patch,
        **extra,
    )


@pytest.mark.parametrize("scrub", [True, "gc"])
def test_future_history_is_gone_from_the_agent_sandbox(repo_and_image: tuple[CalcRepo, str], scrub) -> None:
    repo, image = repo_and_image
    env = gym.make("swe_gym/SWE-v0", tasks=[_task(repo, image)], provider="docker", scrub_history=scrub)
    try:
        env.reset(seed=0)
        log = env.step("git log --all --format=%H; git tag; git branch -a; git remote; git reflog | wc -l")[0]
        assert log.split() == [repo.base, "*", "main", "0"]
        found = env.step(f"git cat-file -t {repo.fix} 2>&1 || true")[0].strip()
        # Refs only (the default, fast): unreachable objects stay until git's own gc; "gc" drops them.
        assert found == "commit" if scrub is True else "could not get object info" in found
        assert env.step("git status --porcelain")[0] == ""
        env.step(f"git apply <<'EOF'\n{repo.gold_patch}EOF")
        obs, reward, terminated, *_ = env.step("submit")
        assert terminated and reward == 1.0, obs
    finally:
        env.close()


def test_scrub_can_be_turned_off_and_setup_script_runs_first(repo_and_image: tuple[CalcRepo, str]) -> None:
    repo, image = repo_and_image
    task = _task(repo, image, setup_script="git checkout -q -b task-branch && echo ready > .setup-ran")
    env = gym.make("swe_gym/SWE-v0", tasks=[task], provider="docker", scrub_history=False)
    try:
        env.reset(seed=0)
        assert repo.fix in env.step("git log --all --format=%H")[0]
        assert env.step("git branch --show-current; cat .setup-ran")[0].split() == ["task-branch", "ready"]
    finally:
        env.close()


def test_a_failing_setup_script_is_a_clear_error(repo_and_image: tuple[CalcRepo, str]) -> None:
    repo, image = repo_and_image
    task = _task(repo, image, setup_script="git checkout no-such-branch")
    env = gym.make("swe_gym/SWE-v0", tasks=[task], provider="docker")
    try:
        with pytest.raises(Exception, match="setup script failed for calc__calc-1"):
            env.reset(seed=0)
    finally:
        env.close()
