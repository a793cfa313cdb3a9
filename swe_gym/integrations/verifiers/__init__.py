"""verifiers (Prime Intellect, 0.4) interop: swe_gym's tasks as a verifiers environment.

Each rollout of `SWEGymEnv` is one swe_gym episode on the env's `EpisodeHost`: the episode's observations
are the user turns, each model reply is one bash command, and the rollout's score is swe_gym's graded
reward (the ``swe_gym_reward`` reward of `SWEGymTask`). A masked episode is a rollout error
(`MaskedEpisodeError` on the trace, so verifiers' error-corrected means and ``--resume`` leave it out),
never a reward of 0. Every sandbox goes when its rollout ends, and all of them when the env stops serving.

verifiers finds a taskset by a top-level module named after its id; ``swe_gym_verifiers`` is that
module (``vf-eval swe-gym-verifiers ...``, or ``vf.load_environment(vf.EnvConfig(taskset={"id":
"swe-gym-verifiers"}))``). Needs the ``verifiers`` extra (``pip install 'swe_gym[verifiers]'``).
"""

from __future__ import annotations

from swe_gym.integrations.verifiers.env import SWEGymEnv, SWEGymEnvConfig
from swe_gym.integrations.verifiers.exchange import OUTCOME_KEY, MaskedEpisodeError, play
from swe_gym.integrations.verifiers.harness import SWEGymHarness, SWEGymHarnessConfig
from swe_gym.integrations.verifiers.taskset import SWEGymData, SWEGymTask, SWEGymTaskset, SWEGymTasksetConfig

#: The id verifiers loads this environment by (its module: ``swe_gym_verifiers``).
ENV_ID = "swe-gym-verifiers"

__all__ = [
    "ENV_ID",
    "OUTCOME_KEY",
    "MaskedEpisodeError",
    "SWEGymData",
    "SWEGymEnv",
    "SWEGymEnvConfig",
    "SWEGymHarness",
    "SWEGymHarnessConfig",
    "SWEGymTask",
    "SWEGymTaskset",
    "SWEGymTasksetConfig",
    "play",
]
