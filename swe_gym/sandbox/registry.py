"""Find sandbox providers by name: built-ins, `register_provider`, and entry points.

Built-in and entry-point providers are imported only when asked for, so a
missing optional dependency is an error only for the provider that needs it.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from importlib.metadata import entry_points
from typing import Any

from pydantic import ValidationError

from swe_gym.errors import ConfigError, ProviderNotFoundError, ProviderUnavailableError, validation_problems
from swe_gym.sandbox.protocol import SandboxProvider

ENTRY_POINT_GROUP = "swe_gym.providers"

ProviderFactory = Callable[..., SandboxProvider]

_BUILTIN: dict[str, tuple[str, str]] = {
    "local": ("swe_gym.sandbox.providers.local:LocalProvider", ""),
    "docker": ("swe_gym.sandbox.providers.docker:DockerProvider", ""),
    "apptainer": ("swe_gym.sandbox.providers.apptainer:ApptainerProvider", "apptainer"),
    "opensandbox": ("swe_gym.sandbox.providers.opensandbox:OpenSandboxProvider", "opensandbox"),
}
_registered: dict[str, ProviderFactory] = {}


def register_provider(name: str, factory: ProviderFactory) -> None:
    """Make ``factory(**options)`` available as provider ``name`` (replaces an earlier one)."""
    _registered[name] = factory


def _entry_points() -> dict[str, Any]:
    return {ep.name: ep for ep in entry_points(group=ENTRY_POINT_GROUP)}


def available_providers() -> list[str]:
    return sorted({*_BUILTIN, *_registered, *_entry_points()})


def _load(target: str, extra: str, name: str) -> ProviderFactory:
    module_name, _, attr = target.partition(":")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        hint = f"pip install 'swe_gym[{extra}]'" if extra else "check your installation"
        raise ProviderUnavailableError(f"provider {name!r} cannot be imported ({exc}); {hint}") from exc
    return getattr(module, attr)


def _factory(name: str) -> ProviderFactory:
    if name in _registered:
        return _registered[name]
    if name in _BUILTIN:
        return _load(*_BUILTIN[name], name)
    found = _entry_points().get(name)
    if found is None:
        raise ProviderNotFoundError(f"unknown sandbox provider {name!r}; available: {', '.join(available_providers())}")
    try:
        return found.load()
    except ImportError as exc:
        raise ProviderUnavailableError(f"provider {name!r} ({found.value}) cannot be imported: {exc}") from exc


def get_provider(provider: str | Mapping[str, Any] | SandboxProvider = "local", **options: Any) -> SandboxProvider:
    """A provider from a name, a ``{"type": name, **options}`` mapping, or an instance.

    Invalid options are a `ConfigError` naming each bad field (never a pydantic traceback).
    """
    if isinstance(provider, str):
        name, config = provider, {}
    elif isinstance(provider, Mapping):
        config = dict(provider)
        name = config.pop("type", None)
        if not isinstance(name, str):
            raise ProviderNotFoundError(f"provider config {dict(provider)!r} has no 'type' naming the provider")
    if isinstance(provider, (str, Mapping)):
        factory = _factory(name)
        try:
            return factory(**config, **options)
        except ValidationError as exc:
            raise ConfigError(f"invalid options for provider {name!r} ({validation_problems(exc)})") from None
    if isinstance(provider, SandboxProvider):
        return provider
    raise ProviderNotFoundError(f"not a sandbox provider: {provider!r}")
