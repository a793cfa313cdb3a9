"""The module verifiers imports for the taskset id ``swe-gym-verifiers`` (its loader wants a top-level module
exporting in ``__all__`` one `Taskset`, one `Env` and one `Harness` subclass, the taskset's default); the code
is `swe_gym.integrations.verifiers`."""

from swe_gym.integrations.verifiers import SWEGymEnv, SWEGymHarness, SWEGymTaskset

__all__ = ["SWEGymEnv", "SWEGymHarness", "SWEGymTaskset"]
