"""Settings from ``SWE_GYM_<COMPONENT>_<NAME>`` variables, else from a ``KEY=VALUE`` env file.

A component (a provider, a policy) reads ``PREFIX + NAME`` from the environment, and
falls back to the file that ``PREFIX + "ENV_FILE"`` names (e.g. one a provisioning
script wrote, or a mounted secret): ``setting("SWE_GYM_LLM_", "MODEL")``.
"""

from __future__ import annotations

import os
from pathlib import Path

from swe_gym.errors import ConfigError


def read_env_file(path: str | Path) -> dict[str, str]:
    """The ``KEY=VALUE`` lines of ``path`` (blank lines and ``#`` comments skipped)."""
    try:
        lines = Path(path).read_text().splitlines()
    except OSError as exc:
        raise ConfigError(f"cannot read the settings file {path}: {exc}") from exc
    pairs = (line.strip().partition("=") for line in lines)
    return {key.strip(): value.strip() for key, sep, value in pairs if sep and not key.startswith("#")}


def setting(prefix: str, name: str, default: str | None = None) -> str | None:
    """``prefix + name`` from the environment, else from the file ``prefix + "ENV_FILE"`` names, else ``default``."""
    value = os.environ.get(prefix + name)
    if value:
        return value
    path = os.environ.get(prefix + "ENV_FILE")
    return (read_env_file(path).get(prefix + name) if path else None) or default
