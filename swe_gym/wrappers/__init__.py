"""Gymnasium wrappers for `SWEEnv`, and the trajectories `TrajectoryRecorder` writes."""

from swe_gym.wrappers.recorder import TrajectoryRecorder
from swe_gym.wrappers.trajectory import StepInfo, Trajectory, read_trajectories

__all__ = ["StepInfo", "Trajectory", "TrajectoryRecorder", "read_trajectories"]
