"""Gymnasium environments: `SWEEnv` and its registration."""

from swe_gym.envs.prompt import SUBMIT, SUBMIT_MARKER
from swe_gym.envs.registration import ENV_ID, register_envs
from swe_gym.envs.swe_env import SWEEnv

__all__ = ["ENV_ID", "SUBMIT", "SUBMIT_MARKER", "SWEEnv", "register_envs"]
