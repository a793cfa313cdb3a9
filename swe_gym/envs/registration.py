"""Registers the environment ids with Gymnasium on ``import swe_gym``."""

from __future__ import annotations

import gymnasium as gym

ENV_ID = "swe_gym/SWE-v0"


def register_envs() -> None:
    if ENV_ID not in gym.registry:
        # Nondeterministic in Gymnasium's sense: actions are shell commands (`date`, `$RANDOM`,
        # timings in info), so a seed and the actions cannot fix every transition.
        gym.register(
            id=ENV_ID,
            entry_point="swe_gym.envs.swe_env:SWEEnv",
            vector_entry_point="swe_gym.vector.swe_vector_env:SWEVectorEnv",
            nondeterministic=True,
        )
