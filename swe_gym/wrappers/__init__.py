"""Gymnasium wrappers for `SWEEnv`."""

from swe_gym.wrappers.recorder import TrajectoryRecorder, read_trajectories
from swe_gym.wrappers.vector_env import SWEVectorEnv

__all__ = ["SWEVectorEnv", "TrajectoryRecorder", "read_trajectories"]
