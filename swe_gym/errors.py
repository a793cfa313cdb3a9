"""The one error hierarchy of swe_gym: every message says what failed and what to do."""

from __future__ import annotations

import importlib.util
from collections.abc import Callable
from typing import Any

from pydantic import ValidationError


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


class ImageNotSetError(ImageNotFoundError, ConfigError):
    """No image was named where the provider needs one: the caller's mistake, raised, never masked."""


class ForkNotSupportedError(SandboxError, NotImplementedError):
    """This provider (or this sandbox's configuration) cannot fork a live sandbox; the message says what is missing."""


class UnforkableSandboxError(SWEGymError):
    """An episode's sandbox could not be forked while a fresh sandbox of the same task could: what the agent did
    to it (a path too long to copy, a full disk) is the cause, so its forks end unresolved, never masked."""


class SandboxDiedError(SandboxError):
    """The sandbox stopped answering (killed from outside, crashed, or expired).

    ``during_call`` tells who may have caused it: True when a request went to a runner
    believed alive and no valid reply came (the command then running may have killed it:
    an OOM, a fork bomb, ``kill -9 -1``), False when the sandbox was already known dead
    before the request (an earlier call or a status ping failed, the transport said it was gone).
    """

    def __init__(self, *args: object, during_call: bool = False) -> None:
        super().__init__(*args)
        self.during_call = during_call

    def __reduce__(self):  # keep ``during_call`` across pickling (process pools, Ray)
        return (type(self), self.args, {"during_call": self.during_call})


class TaskError(ConfigError):
    """A task record or task source is malformed."""


class GradingError(SWEGymError):
    """Grading could not run for an infrastructure reason (never a wrong patch)."""


class PolicyError(SWEGymError):
    """A policy could not choose an action (e.g. its model endpoint is down, too slow, or answers garbage)."""


class ChannelTamperedError(SandboxDiedError):
    """A reply on the channel to the sandbox's runner was not the runner's (forged, corrupted or out of order).

    Only code inside the sandbox can cause it, so it is the sandbox's verdict, never an infrastructure mask:
    ``during_call`` is always True.
    """

    def __init__(self, *args: object) -> None:
        super().__init__(*args, during_call=True)


def validation_problems(
    exc: ValidationError, *, whole: str = "value", hint: Callable[[tuple[Any, ...]], str] | None = None
) -> str:
    """A pydantic error as one line: ``field: message`` per field, ``; ``-joined.

    One message per field (a union reports each of its alternatives); ``whole`` names an error
    about the object itself; ``hint(loc)`` may add advice to a field's message.
    """
    problems: dict[str, str] = {}
    for error in exc.errors():
        loc = tuple(error["loc"])
        field = ".".join(str(part) for part in loc) or whole
        problems.setdefault(field, error["msg"] + (hint(loc) if hint else ""))
    return "; ".join(f"{field}: {message}" for field, message in problems.items())


def require_extra(what: str, extra: str, *modules: str) -> None:
    """A `ConfigError` saying which extra to install when one of ``modules`` is missing (checked before any import)."""
    missing = [module for module in modules if importlib.util.find_spec(module) is None]
    if missing:
        raise ConfigError(f"{what} needs {', '.join(missing)} (not installed): pip install 'swe_gym[{extra}]'")


class CheckpointNotSupportedError(SandboxError, NotImplementedError):
    """This provider cannot checkpoint a sandbox (it lacks `swe_gym.sandbox.protocol.SandboxCheckpointer`)."""


class CheckpointNotFoundError(SandboxError, ConfigError):
    """A checkpoint handed to resume or restore is gone (removed, or cleaned up): the caller's to replace, never
    masked. Start a new episode, or checkpoint more often with a longer ``ttl_s``."""


class CheckpointExpiredError(CheckpointNotFoundError):
    """A checkpoint's TTL has passed: it is not restored even where its files are still there (``swe-gym cleanup
    --expired`` removes it)."""
