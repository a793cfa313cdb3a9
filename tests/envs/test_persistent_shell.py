"""``shell="persistent"`` through `SWEEnv`: one bash per episode, state kept between actions, grading untouched."""

from __future__ import annotations

import gymnasium as gym

import swe_gym  # noqa: F401 - registers the env
from swe_gym import SUBMIT
from tests.conftest import provider_setup


def test_cd_persists_between_steps_and_the_episode_still_grades() -> None:
    config, _ = provider_setup("local")
    env = gym.make("swe_gym/SWE-v0", provider=config, shell="persistent", max_steps=20)
    try:
        obs, _ = env.reset(seed=0)
        assert "one bash session" in obs
        workdir, task = env.unwrapped.sandbox.workdir, env.unwrapped.task
        assert env.step("mkdir -p scratch && cd scratch && export SWE_GYM_X=kept")[4]["exit_code"] == 0
        assert env.step('pwd; echo "$SWE_GYM_X"')[0] == f"{workdir}/scratch\nkept\n"
        obs, _, _, _, info = env.step("cd .. && rmdir scratch && exec bash -c 'exit 3'")
        assert info["exit_code"] == 3 and "the shell ended (exit code 3)" in obs
        obs = env.step("pwd")[0]
        assert obs.startswith("[swe_gym: new shell (the previous one ended with exit code 3)") and workdir in obs
        gold = f"git apply <<'SWE_GYM_GOLD_EOF'\n{task.patch}\nSWE_GYM_GOLD_EOF"
        assert env.step(gold)[4]["exit_code"] == 0
        obs, reward, terminated, truncated, info = env.step(SUBMIT)
        assert (reward, terminated, truncated) == (1.0, True, False)
        assert info["resolved"] and not info["masked"] and "scratch" not in info["patch"]
    finally:
        env.close()
