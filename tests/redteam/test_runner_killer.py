"""An agent that leaves a process to kill its sandbox's runner after its command returned must not be masked.

A masked episode is dropped from training, so an episode the agent ends by breaking its sandbox between two
commands would trade a 0 for nothing. The attack: ``setsid -f`` (out of the step's process group, which the runner
kills when the command returns) a shell that waits a second and then runs ``kill -9 -1``. Where the runner is PID 1
of the sandbox's PID namespace (local under bwrap, docker, apptainer with ``--pid --no-init``) nothing happens to
it and the episode goes on; elsewhere (OpenSandbox's execd) the runner dies, and the
death is judged against a control (a fresh sandbox of the task runs a command): the episode ends unresolved,
terminated with reward 0.0, never masked. The next action is a command, or the submission (the patch is read from
the dead sandbox).
"""

from __future__ import annotations

import time

import gymnasium as gym
import pytest

from swe_gym import SUBMIT
from tests.conftest import ISOLATED, RUNNER_IS_PID1, leftover_sandboxes, provider_setup

KILLER = 'setsid -f sh -c "sleep 1; kill -9 -1" >/dev/null 2>&1; echo planted'


@pytest.mark.parametrize("then", ["echo next", SUBMIT])
@pytest.mark.parametrize("provider", ISOLATED)  # unisolated, kill -9 -1 is the host's: no boundary to test
def test_a_runner_killed_between_commands_is_never_masked(provider: str, then: str) -> None:
    config, image = provider_setup(provider)
    env = gym.make("swe_gym/SWE-v0", provider=config, image=image, max_steps=10, prestart_grading=False)
    try:
        env.reset(seed=0)
        assert env.step(KILLER)[0].strip() == "planted"
        time.sleep(2.5)  # the killer has run
        observation, reward, terminated, truncated, info = env.step(then)
        assert not info.get("masked"), observation
        if provider in RUNNER_IS_PID1:
            assert observation.startswith("next") or terminated, observation  # it went on: the runner lives
        else:
            assert (reward, terminated, truncated, info["resolved"]) == (0.0, True, False, False), observation
            assert "counted as the agent's doing" in observation
    finally:
        env.close()
    assert not any(leftover_sandboxes().values())
