"""Hostile and malformed actions through `SWEEnv.step` on the isolating providers.

Each returns an observation inside the space within step_timeout + 1 s, and the
next step (or, after a destructive one, the next reset) works.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import gymnasium as gym
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import swe_gym  # noqa: F401 - registers the env
from swe_gym.errors import ImageNotSetError
from swe_gym.shown_text import to_text
from tests.conftest import ISOLATED, RUNNER_IS_PID1, kill_from_outside, provider_setup

STEP_TIMEOUT = 3.0

HARMLESS_BUT_NASTY = {
    "empty": "",
    "1MB": "echo " + "x" * 1_000_000 + " | wc -c",
    "binary": to_text(b"\xff\xfe\x00\x01echo hi\x80"),  # bytes as an observation shows them
    "unbalanced-quotes": 'echo "unbalanced',
    "exit": "exit",
    "exec-bash": "exec bash",
    "reads-stdin": "cat; python3 -c 'input()'",
    "vim": "vim README.md",
    "less": "less README.md",
    "infinite-loop": "while true; do :; done",
    "term-ignoring-child": "(trap '' TERM; sleep 1000) & sleep 1000",
    "100MB-output": "yes | head -c 100000000",
    "control-chars": "printf '\\033[31mred\\033[0m\\r\\n\\x00\\x07'",
    "lone-surrogate": "echo \ud800 ok",  # no UTF-8 text holds it; it must not raise UnicodeEncodeError
}
DESTRUCTIVE = {
    "kill-all": "kill -9 -1",
    "rm-root": "cd /; rm -rf --no-preserve-root /",
    "fork-bomb": ":(){ :|:& };:",
}


def _make(provider: str, **kwargs: object) -> gym.Env:
    config, image = provider_setup(provider)
    return gym.make("swe_gym/SWE-v0", provider=config, image=image, step_timeout=STEP_TIMEOUT, max_steps=1000, **kwargs)


@pytest.fixture(scope="module", params=ISOLATED)
def env(request: pytest.FixtureRequest) -> Iterator[gym.Env]:
    environment = _make(request.param)
    environment.reset(seed=0)
    yield environment
    environment.close()


def _check_step(env: gym.Env, action: str) -> dict:
    obs, reward, terminated, truncated, info = env.step(action)
    assert env.observation_space.contains(obs)
    assert (reward, terminated, truncated) == (0.0, False, False)
    assert info["duration_s"] < STEP_TIMEOUT + 1.0
    return info


@pytest.mark.parametrize("name", list(HARMLESS_BUT_NASTY))
def test_nasty_action_then_next_step_works(env: gym.Env, name: str) -> None:
    info = _check_step(env, HARMLESS_BUT_NASTY[name])
    if name in ("infinite-loop", "term-ignoring-child"):
        assert info["timed_out"]
    if name == "100MB-output":
        assert info["output_truncated"]
    assert env.step("echo ok")[0] == "ok\n"


@pytest.mark.parametrize("provider", ISOLATED)
@pytest.mark.parametrize("name", list(DESTRUCTIVE))
def test_destructive_action_host_untouched_and_env_recovers(provider: str, name: str) -> None:
    canary = Path.cwd() / ".pytest_cache" / "swe_gym_env_canary"
    canary.parent.mkdir(exist_ok=True)
    canary.write_text("alive")
    environment = _make(provider)
    try:
        environment.reset(seed=0)
        obs, reward, terminated, truncated, info = environment.step(DESTRUCTIVE[name])
        assert environment.observation_space.contains(obs) and reward == 0.0 and not truncated
        if terminated:  # the action took the sandbox down with it (during the call): a verdict, not a mask
            assert not info.get("masked") and "broke its sandbox" in obs
        _obs, _info = environment.reset(seed=1)
        assert environment.step("echo recovered")[0] == "recovered\n"
    finally:
        environment.close()
    assert canary.read_text() == "alive" and Path("/usr/bin/env").exists()


@pytest.mark.parametrize("provider", ISOLATED)
def test_sandbox_killed_from_outside_masks_the_episode(provider: str) -> None:
    environment = _make(provider)
    try:
        environment.reset(seed=0)
        kill_from_outside(environment.unwrapped.sandbox)
        obs, reward, terminated, truncated, info = environment.step("ls")
        if provider in RUNNER_IS_PID1:  # nothing inside can end the runner: an outside death, masked
            assert truncated and not terminated and reward == 0.0
            assert info["masked"] and "sandbox died" in info["masked_reason"]
        else:  # the sandbox's own processes could have (tests/redteam/test_runner_killer.py): judged by a control
            assert terminated and not truncated and reward == 0.0 and not info["masked"]
            assert "counted as the agent's doing" in obs
        assert environment.observation_space.contains(obs)
        environment.reset(seed=0)  # and the next episode is fine
        assert environment.step("echo ok")[0] == "ok\n"
    finally:
        environment.close()


def test_docker_without_an_image_says_how_to_give_one() -> None:
    provider_setup("docker")
    environment = gym.make("swe_gym/SWE-v0", provider="docker")
    try:
        with pytest.raises(ImageNotSetError, match=r"SWEEnv\(image=\.\.\.\)"):
            environment.reset(seed=0)
    finally:
        environment.close()


actions = st.one_of(
    st.text(st.characters(codec=None, exclude_categories=()), max_size=300),
    st.tuples(st.sampled_from(["x", "é", "\0", "'", "\n"]), st.integers(0, 300_000)).map(lambda t: t[0] * t[1]),
    st.binary(max_size=300).map(lambda b: b.decode("utf-8", "surrogateescape")),
)


@pytest.fixture(scope="module")
def local_env() -> Iterator[gym.Env]:
    environment = _make("local")
    environment.reset(seed=0)
    yield environment
    environment.close()


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(action=actions)
def test_arbitrary_actions_always_give_an_observation_in_the_space(local_env: gym.Env, action: str) -> None:
    if not local_env.unwrapped.host.live(0):
        local_env.reset(seed=0)
    obs, _reward, _terminated, _truncated, info = local_env.step(action)
    assert local_env.observation_space.contains(obs)
    assert isinstance(info["exit_code"], int) and info["duration_s"] < STEP_TIMEOUT + 1.0
