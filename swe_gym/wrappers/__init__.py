"""Gymnasium wrappers for `SWEEnv`."""

from swe_gym.wrappers.recorder import TrajectoryRecorder, read_trajectories

__all__ = ["TrajectoryRecorder", "read_trajectories"]
