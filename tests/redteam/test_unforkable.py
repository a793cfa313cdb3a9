"""An agent that makes its own sandbox impossible to fork must not turn its forks into masked episodes.

A masked episode is dropped from training, so a masked fork is a way out of a 0 for the branches. The
attack: a directory chain deeper than PATH_MAX, which the local provider's copy cannot follow. `Episode.fork`
judges the failure against a control (a fresh sandbox of the task, forked the same way): the control forks,
so the branches end unresolved (terminated, reward 0.0, not masked), on `SWEEnv.fork` and on the vector
env's ``fork_from``. A task whose own sandbox cannot be forked fails the control too: that stays masked.
"""

from __future__ import annotations

import gymnasium as gym
import pytest
from gymnasium.vector import AutoresetMode

from swe_gym import SWEEnv, load_tasks
from swe_gym.errors import SandboxError
from swe_gym.vector import SWEVectorEnv
from tests.conftest import leftover_sandboxes, provider_setup

DEEP_PATH = (
    "python3 -c \"import os\nfor _ in range(30):\n    os.mkdir('d' * 200); os.chdir('d' * 200)\n"
    "open('x', 'w').write('x')\" && echo planted"
)


def assert_unresolved(result: tuple) -> None:
    observation, reward, terminated, truncated, info = result
    assert (reward, terminated, truncated) == (0.0, True, False), observation
    assert info["masked"] is False and info["resolved"] is False
    assert "could not be forked" in info["fork_failed"], info
    assert "unresolved" in observation


def test_an_unforkable_sandbox_ends_its_forks_unresolved() -> None:
    provider_setup("local")
    env = SWEEnv(provider="local", prestart_grading=False)
    try:
        env.reset(seed=0)
        assert env.step(DEEP_PATH)[0].strip() == "planted"
        branches = env.fork(2)
        try:
            for branch in branches:
                assert_unresolved(branch.step("git status"))
                with pytest.raises(RuntimeError, match="reset"):
                    branch.step("true")  # the episode is over, as after any terminal step
        finally:
            for branch in branches:
                branch.close()
        assert env.step("echo still-here")[0].strip() == "still-here"  # the source goes on unaffected
    finally:
        env.close()
    assert not any(leftover_sandboxes().values())


def test_a_vector_fork_from_an_unforkable_sandbox_ends_unresolved() -> None:
    provider_setup("local")
    envs = SWEVectorEnv(2, provider="local", autoreset_mode=AutoresetMode.DISABLED, prestart_grading=False)
    try:
        envs.reset(seed=0)
        envs.step([DEEP_PATH, "true"])
        obs, infos = envs.reset(options={"reset_mask": [False, True], "fork_from": [None, 0]})
        assert not infos["masked"][1] and "could not be forked" in infos["fork_failed"][1]
        obs, rewards, terminated, truncated, infos = envs.step(["true", "true"])
        assert (rewards[1], terminated[1], truncated[1]) == (0.0, True, False)
        assert not infos["masked"][1] and not infos["resolved"][1] and infos["fork_failed"][1]
        assert not terminated[0]
    finally:
        envs.close()
    assert not any(leftover_sandboxes().values())


def test_a_task_that_cannot_be_forked_is_the_environments_failure() -> None:
    provider_setup("local")
    (task,) = load_tasks("bundled", limit=1)
    deep = task.model_copy(update={"setup_script": DEEP_PATH.replace(" && echo planted", "")})
    env = gym.make("swe_gym/SWE-v0", tasks=[deep], provider="local", prestart_grading=False)
    try:
        env.reset(seed=0)
        with pytest.raises(SandboxError, match="fork failed"):
            env.unwrapped.fork(1)  # the control fails too: no verdict on the agent, the fork's error stands
    finally:
        env.close()
    assert not any(leftover_sandboxes().values())
