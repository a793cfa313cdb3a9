"""SWEEnv through Gymnasium's own API and checker, on the embedded local provider."""

from __future__ import annotations

import gymnasium as gym
import pytest
from gymnasium.utils.env_checker import check_env

import swe_gym
from swe_gym import SUBMIT, SUBMIT_MARKER
from swe_gym.errors import ConfigError, ProviderNotFoundError, TaskError
from tests.conftest import ISOLATED, provider_setup

TERMINAL_KEYS = {"resolved", "patch", "report", "masked", "masked_reason", "reset_s", "grade_s"}
STEP_KEYS = {"exit_code", "timed_out", "output_truncated", "duration_s"}


def gold_action(task: swe_gym.SWETask) -> str:
    return f"git apply <<'SWE_GYM_GOLD_EOF'\n{task.patch}\nSWE_GYM_GOLD_EOF"


def test_check_env_passes() -> None:
    provider_setup("local")
    environment = gym.make("swe_gym/SWE-v0", max_steps=5, render_mode="ansi")
    try:
        check_env(environment.unwrapped)
    finally:
        environment.close()


def test_make_with_no_arguments_uses_bundled_tasks_on_local() -> None:
    provider_setup("local")
    environment = gym.make("swe_gym/SWE-v0")
    try:
        obs, info = environment.reset(seed=1)
        unwrapped = environment.unwrapped
        assert info["provider"] == "local" and info["instance_id"] in {t.instance_id for t in unwrapped.tasks}
        assert unwrapped.task.problem_statement.strip()[:40] in obs
        assert SUBMIT in obs and unwrapped.task.patch not in obs and unwrapped.task.test_patch not in obs
        assert environment.observation_space.contains(obs)
    finally:
        environment.close()


def test_seeded_reset_is_reproducible_and_covers_tasks(env: gym.Env) -> None:
    picks = [env.reset(seed=seed)[1]["instance_id"] for seed in (7, 7, 8, 9, 10, 11)]
    assert picks[0] == picks[1]
    assert len(set(picks)) > 1


def test_gold_patch_through_steps_gives_reward_one(env: gym.Env) -> None:
    obs, info = env.reset(seed=0)
    task = env.unwrapped.task
    obs, reward, terminated, truncated, info = env.step(gold_action(task))
    assert (reward, terminated, truncated) == (0.0, False, False)
    assert STEP_KEYS <= set(info) and info["exit_code"] == 0
    obs, reward, terminated, truncated, info = env.step(SUBMIT)
    assert (reward, terminated, truncated) == (1.0, True, False)
    assert TERMINAL_KEYS <= set(info) and info["resolved"] and not info["masked"]
    assert info["patch"].startswith("diff --git") and info["report"]["fail_to_pass"]["failure"] == []
    assert "RESOLVED" in obs and env.observation_space.contains(obs)
    with pytest.raises(RuntimeError, match="reset"):
        env.step("ls")


@pytest.mark.parametrize("provider", ISOLATED)
def test_bundled_episode_end_to_end_on_every_provider(provider: str) -> None:
    """``gymnasium.make(..., provider=NAME)``: reset, the gold patch as actions, submit, graded 1.0."""
    _config, image = provider_setup(provider)
    environment = gym.make("swe_gym/SWE-v0", provider=provider, image=image, max_steps=5)
    try:
        _obs, info = environment.reset(seed=3)
        assert info["provider"] == provider
        assert environment.step(gold_action(environment.unwrapped.task))[4]["exit_code"] == 0
        obs, reward, terminated, truncated, info = environment.step(SUBMIT)
        assert (reward, terminated, truncated) == (1.0, True, False), obs
        assert info["resolved"] and not info["masked"]
        assert "sandbox" not in info["report"]["timings_s"]  # graded in the sandbox prestarted at reset
    finally:
        environment.close()


def test_mini_swe_agent_submit_marker(env: gym.Env) -> None:
    env.reset(seed=0)
    _obs, reward, terminated, truncated, info = env.step(f"echo {SUBMIT_MARKER}; echo trailing")
    assert terminated and not truncated and reward == 0.0 and info["resolved"] is False
    assert info["report"]["empty_patch"]


def test_step_limit_truncates_and_grades(env: gym.Env) -> None:
    env.reset(seed=0)
    env.step(gold_action(env.unwrapped.task))
    for _ in range(3):
        result = env.step("true")
        assert not result[2] and not result[3]
    obs, reward, terminated, truncated, info = env.step("true")
    assert truncated and not terminated and reward == 1.0 and info["resolved"]
    assert "step limit" in obs


def test_no_grading_on_truncation_when_disabled() -> None:
    provider_setup("local")
    environment = gym.make("swe_gym/SWE-v0", max_steps=1, grade_on_truncation=False)
    try:
        environment.reset(seed=0)
        _, reward, _terminated, truncated, info = environment.step("true")
        assert truncated and reward == 0.0 and info["report"] is None and info["grade_s"] == 0.0
    finally:
        environment.close()


def test_partial_reward_mode() -> None:
    provider_setup("local")
    environment = gym.make("swe_gym/SWE-v0", reward="partial")
    try:
        environment.reset(seed=0)
        environment.step(gold_action(environment.unwrapped.task))
        assert environment.step(SUBMIT)[1] == 1.0
    finally:
        environment.close()


def test_reset_options_and_bad_configuration() -> None:
    provider_setup("local")
    environment = gym.make("swe_gym/SWE-v0")
    try:
        task = environment.unwrapped.tasks[2]
        assert environment.reset(options={"task_id": task.instance_id})[1]["instance_id"] == task.instance_id
        with pytest.raises(ConfigError, match="unknown task_id"):
            environment.reset(options={"task_id": "nope"})
        with pytest.raises(TypeError, match="bash command string"):
            environment.reset(seed=0)
            environment.step(42)
    finally:
        environment.close()
    with pytest.raises(ProviderNotFoundError, match="unknown sandbox provider 'nope'"):
        gym.make("swe_gym/SWE-v0", provider="nope")
    with pytest.raises(TaskError, match="does not exist"):
        gym.make("swe_gym/SWE-v0", tasks="/nonexistent/tasks.jsonl")
    with pytest.raises(ConfigError, match="reward"):
        gym.make("swe_gym/SWE-v0", reward="sometimes")


def test_close_frees_the_sandbox_even_after_an_exception() -> None:
    provider_setup("local")
    environment = gym.make("swe_gym/SWE-v0")
    environment.reset(seed=0)
    home = environment.unwrapped.sandbox.backend.home
    with pytest.raises(TypeError):
        environment.step(None)
    environment.close()
    assert not home.exists()
