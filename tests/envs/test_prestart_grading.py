"""Overlapped grading: the grading sandbox starts with the episode, so the last step pays apply + tests.

On the real ``local`` provider with bundled tasks; the verdict must not depend on whether the prestarted
sandbox was used, lost (killed while the agent acted) or never needed (the episode closed first).
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym

from swe_gym.sandbox.loop import run_sync
from tests.conftest import kill_from_outside, leftover_sandboxes
from tests.envs.test_env_api import gold_action


def _episode(**options: Any) -> tuple[gym.Env, dict[str, Any]]:
    env = gym.make("swe_gym/SWE-v0", tasks="bundled", provider="local", **options)
    env.reset(seed=0)
    env.step(gold_action(env.unwrapped.task))
    return env, env.unwrapped.host.episode(0)  # type: ignore[attr-defined]


def _submit(env: gym.Env) -> dict[str, Any]:
    _, reward, terminated, _, info = env.step("submit")
    assert terminated and reward == 1.0 and not info["masked"], info["report"]
    return info["report"]


def test_the_last_step_uses_the_prestarted_sandbox() -> None:
    env, episode = _episode()
    try:
        assert episode._grader is not None  # started with the episode
        report = _submit(env)
        assert "sandbox" not in report["timings_s"] and {"apply", "tests"} <= set(report["timings_s"])
    finally:
        env.close()


def test_without_prestart_the_last_step_starts_the_sandbox() -> None:
    env, episode = _episode(prestart_grading=False)
    try:
        assert episode._grader is None
        assert "sandbox" in _submit(env)["timings_s"]
    finally:
        env.close()


def test_a_prestarted_sandbox_lost_meanwhile_is_replaced_not_masked() -> None:
    env, episode = _episode()
    try:
        grader = run_sync(episode._grader)
        kill_from_outside(grader)
        assert "sandbox" in _submit(env)["timings_s"]  # a fresh one was started at the last step
    finally:
        env.close()


def test_closing_before_submit_removes_the_prestarted_sandbox() -> None:
    before = len(leftover_sandboxes()["local"])
    env, _ = _episode()
    env.close()  # the agent's and the grader's sandboxes, even if the grader's was still starting
    assert len(leftover_sandboxes()["local"]) == before


def test_the_agent_cannot_reach_its_prestarted_grading_sandbox() -> None:
    """The grader's sandbox lives while the agent acts: its files must be out of the agent's reach (an agent
    that planted a conftest there would be graded on its own tests)."""
    env, episode = _episode()
    try:
        grader = run_sync(episode._grader)
        found, *_ = env.step(f"find / -path /proc -prune -o -name '*{grader.id}*' -print 2>/dev/null")
        assert found.strip() == "", found  # nothing of the grader's sandbox is in the agent's view
        listed, *_ = env.step(f"ls {grader.backend.home}")
        assert "No such file" in listed, listed
        assert _submit(env)["timings_s"].keys() >= {"apply", "tests"}  # and it still grades, unplanted
    finally:
        env.close()
