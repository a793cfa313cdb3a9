"""Branching episodes: `SWEEnv.fork` and the vector env's ``reset(options={"fork_from": ...})``, on `local`."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.vector import AutoresetMode

from swe_gym import SUBMIT
from swe_gym.errors import ConfigError
from swe_gym.vector import SWEVectorEnv
from tests.conftest import leftover_sandboxes, provider_setup
from tests.envs.test_env_api import gold_action


@pytest.mark.parametrize("pool_size", [0, 2])
def test_branches_diverge_and_are_graded_on_their_own(pool_size: int) -> None:
    """Without a pool each branch is a new sandbox; with one, the episode's changes replayed in the pool's."""
    provider_setup("local")
    env = gym.make("swe_gym/SWE-v0", max_steps=5, pool_size=pool_size)
    try:
        _diverge(env, pool_size)
    finally:
        env.close()
    assert not any(leftover_sandboxes().values())


def _diverge(env: gym.Env, pool_size: int) -> None:
    unwrapped = env.unwrapped
    with pytest.raises(RuntimeError, match="reset"):
        unwrapped.fork()
    env.reset(seed=0)
    env.step("echo prefix > /tmp/prefix")
    obs, *_ = env.step("ls")
    with pytest.raises(ConfigError, match="n >= 1"):
        unwrapped.fork(0)
    pool = unwrapped.host.settings.pool
    if pool is not None:
        unwrapped.host.call(pool.wait_ready())
    solver, quitter = unwrapped.fork(2)
    try:
        assert (pool.stats.forked if pool else 0) == pool_size  # both from the pool when it has them
        for branch in (solver, quitter):
            episode, origin = branch.host.episode(0), unwrapped.host.episode(0)
            assert branch is not unwrapped and branch.task is unwrapped.task and branch.host.settings.pool is None
            assert episode.steps == 2 and episode.last_observation == obs
            assert episode.sandbox.id != origin.sandbox.id
            assert episode._grader is not None  # its own prestarted grading sandbox
        _, _, _, _, info = solver.step(gold_action(unwrapped.task))
        assert info["step"] == 3 and info["exit_code"] == 0
        assert solver.step("cat /tmp/prefix")[0].strip() == "prefix"
        _, reward, terminated, _, info = solver.step(SUBMIT)
        assert (reward, terminated, info["resolved"]) == (1.0, True, True)
        _, reward, terminated, _, info = quitter.step(SUBMIT)
        assert (reward, terminated, info["resolved"], info["patch"]) == (0.0, True, False, "")
        # The source goes on unaffected by either branch.
        assert env.step("git status --porcelain")[0].strip() == ""
        _, reward, _, _, info = env.step(SUBMIT)
        assert (reward, info["step"], info["patch"]) == (0.0, 4, "")
    finally:
        solver.close()
        quitter.close()


def test_branches_outlive_their_source(env: gym.Env) -> None:
    env.reset(seed=1)
    env.step("echo kept > note.txt")
    (branch,) = env.unwrapped.fork()
    env.close()  # the source and its sandboxes go; the branch owns its own
    try:
        assert branch.step("cat note.txt")[0].strip() == "kept"
        obs, _ = branch.reset(seed=1)  # a branch resets like any env
        assert branch.step("ls note.txt")[3] is False
    finally:
        branch.close()
    assert not any(leftover_sandboxes().values())


def test_vector_env_forks_sub_envs_from_live_ones() -> None:
    provider_setup("local")
    envs = SWEVectorEnv(3, provider="local", autoreset_mode=AutoresetMode.DISABLED, max_steps=10, pool_size=4)
    try:
        envs.host.call(envs.host.settings.pool.wait_ready())  # filled: the reset takes two (its grading sandbox too)
        obs, infos = envs.reset(seed=0, options={"fork_from": [None, 0, 0]})  # 0 resets, then 1 and 2 fork it
        assert len(set(infos["instance_id"])) == 1 and obs[1] == obs[0] == obs[2]
        assert list(infos["_forked_from"]) == [False, True, True]
        assert envs.host.settings.pool.stats.forked >= 1  # forks are made in the pool's sandboxes
        envs.step(["echo zero > mine", "echo one > mine", "true"])
        obs, infos = envs.reset(options={"reset_mask": [False, False, True], "fork_from": [None, None, 1]})
        assert infos["step"][2] == 1 and obs[2] == obs[1] and not infos["_instance_id"][0]
        obs, *_ = envs.step(["cat mine", "cat mine", "cat mine"])
        assert [o.strip() for o in obs] == ["zero", "one", "one"]
        envs.step([SUBMIT, "true", "true"])  # sub-env 0 ends: nothing to fork from there any more
        bad = [
            ({"fork_from": [None, 0]}, "one entry"),
            ({"fork_from": [None, 5, None]}, "index in 0..2"),
            ({"fork_from": 1}, "list"),
            ({"reset_mask": [False, True, False], "fork_from": [None, 1, None]}, "itself"),
            ({"reset_mask": [False, False, True], "fork_from": [None, 2, None]}, "not in reset_mask"),
            ({"reset_mask": [False, True, True], "fork_from": [None, None, 0]}, "no live episode"),
            ({"reset_mask": [True, True, True], "fork_from": [None, 0, 1]}, "forks too"),
            ({"reset_mask": [False, True, False], "fork_from": [None, 2, None], "task_ids": [None, "x", None]}, "task"),
        ]
        for options, message in bad:
            with pytest.raises(ConfigError, match=message):
                envs.reset(options=options)
        obs, infos = envs.reset(options={"reset_mask": np.array([True, False, False]), "fork_from": [2, None, None]})
        assert obs[0] == obs[2] and infos["forked_from"][0] == envs.host.episode(2).sandbox.id
    finally:
        envs.close()
    assert not any(leftover_sandboxes().values())
