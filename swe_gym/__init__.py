"""swe_gym: software-engineering tasks as Gymnasium environments.

``import swe_gym`` registers ``swe_gym/SWE-v0``; ``gymnasium.make("swe_gym/SWE-v0")``
runs the bundled tasks on the embedded ``local`` provider.
"""

from swe_gym.envs import ENV_ID, SUBMIT, SUBMIT_MARKER, SWEEnv, register_envs
from swe_gym.errors import (
    ConfigError,
    ForkNotSupportedError,
    GradingError,
    ImageNotFoundError,
    ImageNotSetError,
    PolicyError,
    ProviderNotFoundError,
    ProviderUnavailableError,
    SandboxDiedError,
    SandboxError,
    SWEGymError,
    TaskError,
)
from swe_gym.grading import GradeReport, evaluate, evaluate_async, grade, grade_async, validate, validate_async
from swe_gym.sandbox import AsyncSandbox, ExecResult, Sandbox, SandboxSpec
from swe_gym.tasks import SWETask, load_tasks
from swe_gym.vector import SWEVectorEnv

__version__ = "0.1.0"

register_envs()

__all__ = [
    "ENV_ID",
    "SUBMIT",
    "SUBMIT_MARKER",
    "AsyncSandbox",
    "ConfigError",
    "ExecResult",
    "ForkNotSupportedError",
    "GradeReport",
    "GradingError",
    "ImageNotFoundError",
    "ImageNotSetError",
    "PolicyError",
    "ProviderNotFoundError",
    "ProviderUnavailableError",
    "SWEEnv",
    "SWEGymError",
    "SWETask",
    "SWEVectorEnv",
    "Sandbox",
    "SandboxDiedError",
    "SandboxError",
    "SandboxSpec",
    "TaskError",
    "evaluate",
    "evaluate_async",
    "grade",
    "grade_async",
    "load_tasks",
    "validate",
    "validate_async",
]
