"""The one error hierarchy of swe_gym: every message says what failed and what to do."""


class SWEGymError(Exception):
    """Base class of every error swe_gym raises on purpose."""


class ConfigError(SWEGymError, ValueError):
    """A configuration, task record or argument is invalid."""


class SandboxError(SWEGymError):
    """A sandbox could not be created, reached or used."""


class ProviderNotFoundError(SandboxError, ConfigError):
    """No sandbox provider is registered under the requested name."""


class ProviderUnavailableError(SandboxError):
    """The provider exists but cannot run here (missing engine, binary or extra)."""


class ImageNotFoundError(SandboxError):
    """The sandbox image does not exist where the provider looks for it."""


class SandboxDiedError(SandboxError):
    """The sandbox stopped answering (killed from outside, crashed, or expired)."""


class TaskError(ConfigError):
    """A task record or task source is malformed."""


class GradingError(SWEGymError):
    """Grading could not run for an infrastructure reason (never a wrong patch)."""


class PolicyError(SWEGymError):
    """A policy could not choose an action (e.g. its model endpoint is down, too slow, or answers garbage)."""
