"""An env made with ``tools=`` takes tool calls (every shape) and plain bash strings; bad calls are observations."""

from __future__ import annotations

import json
from typing import Any

import gymnasium as gym
import pytest

from swe_gym.tools import TOOL_NAMES
from swe_gym.vector import SWEVectorEnv
from tests.conftest import provider_setup
from tests.envs.test_env_api import gold_action


def _make(provider: str = "local", **options: Any) -> gym.Env:
    _, image = provider_setup(provider)
    return gym.make("swe_gym/SWE-v0", provider=provider, image=image, tools=list(TOOL_NAMES), **options)


def _openai(name: str, arguments: dict[str, Any], call_id: str) -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": json.dumps(arguments)}}


@pytest.mark.parametrize("provider", ["local", "docker"])
def test_an_episode_of_tool_calls_is_graded(provider: str) -> None:
    env = _make(provider, max_steps=20)
    try:
        env.reset(seed=0)
        task = env.unwrapped.task
        obs, _, _, _, info = env.step({"name": "bash", "arguments": {"command": "echo hi"}})
        assert obs == "hi\n" and info["tool"] == "bash" and info["exit_code"] == 0
        obs, *_, info = env.step(
            json.dumps({"name": "str_replace_editor", "arguments": {"command": "view", "path": "."}})
        )
        assert "up to 2 levels deep" in obs and info["tool"] == "str_replace_editor"
        obs, *_, info = env.step(
            _openai("str_replace_editor", {"command": "create", "path": "NOTES.md", "file_text": "x\n"}, "c1")
        )
        assert obs.startswith("File created") and info["tool_call_id"] == "c1"
        assert env.step(gold_action(task))[4]["exit_code"] == 0  # a plain bash string still works
        obs, reward, terminated, _, info = env.step(_openai("submit", {}, "c2"))
        assert terminated and reward == 1.0 and info["tool_call_id"] == "c2" and "NOTES.md" in info["patch"]
    finally:
        env.close()


@pytest.mark.parametrize(
    ("action", "reason"),
    [
        ('{"name": "bash", "arguments": ', "not valid JSON"),
        ({"name": "grep", "arguments": {}}, "unknown tool 'grep'"),
        ({"name": "bash", "arguments": {"cmd": "ls"}}, 'bash takes one argument, "command"'),
        ({"arguments": {"command": "ls"}}, 'has no "name"'),
    ],
)
def test_bad_calls_are_error_observations_that_count_as_steps(action: Any, reason: str) -> None:
    env = _make(max_steps=2)
    try:
        env.reset(seed=0)
        obs, reward, terminated, truncated, info = env.step(action)
        assert reason in obs and reason in info["tool_error"] and info["step"] == 1 and info["exit_code"] == 2
        assert (reward, terminated, truncated) == (0.0, False, False)
        editor = {"name": "str_replace_editor", "arguments": {"command": "str_replace", "path": "nope", "old_str": "a"}}
        obs, _, _, truncated, info = env.step(editor)
        assert "does not exist" in obs and info["exit_code"] == 1 and truncated  # the step limit still ends it
    finally:
        env.close()


def test_the_vector_env_takes_tool_calls() -> None:
    provider_setup("local")
    env = SWEVectorEnv(2, provider="local", tools=["bash", "submit"], pool_size=0, prestart_grading=False)
    try:
        env.reset(seed=0)
        observations, *_, infos = env.step([{"name": "bash", "arguments": {"command": "echo a"}}, "echo b"])
        assert observations == ("a\n", "b\n") and list(infos["tool"]) == ["bash", "bash"]
    finally:
        env.close()
