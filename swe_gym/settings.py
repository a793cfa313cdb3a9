"""swe_gym's settings from ``SWE_GYM_*`` environment variables, read with pydantic-settings when asked
(never frozen at import: a variable set after ``import swe_gym`` counts).

`Settings` holds the process-wide ones. A component (a provider, a policy) reads its own with
``setting("SWE_GYM_LLM_", "MODEL")``: ``PREFIX + NAME`` from the environment, else from the dotenv
file ``PREFIX + "ENV_FILE"`` names (one a provisioning script wrote, or a mounted secret).
"""

from __future__ import annotations

import functools
import os
import tempfile
from pathlib import Path
from typing import Literal

from dotenv import dotenv_values
from pydantic import Field, ValidationError, create_model
from pydantic_settings import BaseSettings, SettingsConfigDict

from swe_gym.errors import ConfigError, validation_problems


class Settings(BaseSettings):
    """``SWE_GYM_<NAME>`` for each field."""

    model_config = SettingsConfigDict(env_prefix="SWE_GYM_", extra="ignore")

    run_id: str | None = None
    local_root: Path = Path(tempfile.gettempdir()) / "swe_gym-sandboxes"
    apptainer_root: Path = Path(tempfile.gettempdir()) / "swe_gym-apptainer"
    sif_dir: Path | None = None
    sif_cache: Path | None = None
    pull: Literal["never", "missing"] = "never"


def settings() -> Settings:
    """The settings as the environment says now."""
    try:
        return Settings()
    except ValidationError as exc:
        raise ConfigError(f"invalid SWE_GYM_* environment variables ({validation_problems(exc)})") from None


class _Component(BaseSettings):
    model_config = SettingsConfigDict(extra="ignore", env_file_encoding="utf-8")


@functools.cache
def _component(variable: str) -> type[_Component]:
    """A settings model of one variable (the env var, or the env file's key, of that name)."""
    return create_model(
        "ComponentSetting", __base__=_Component, value=(str | None, Field(None, validation_alias=variable))
    )


def setting(prefix: str, name: str, default: str | None = None) -> str | None:
    """``prefix + name`` from the environment, else from the file ``prefix + "ENV_FILE"`` names, else ``default``."""
    env_file = os.environ.get(prefix + "ENV_FILE")
    if env_file and not Path(env_file).is_file():
        raise ConfigError(f"cannot read the settings file {env_file} (named by {prefix}ENV_FILE): no such file")
    try:
        value = _component(prefix + name)(_env_file=env_file or None).value  # type: ignore[call-arg]
    except ValidationError as exc:
        raise ConfigError(f"invalid setting {prefix}{name} ({validation_problems(exc)})") from None
    return value or default


def read_env_file(path: str | Path) -> dict[str, str]:
    """The ``KEY=VALUE`` pairs of a dotenv file (what `setting` reads as a fallback)."""
    if not Path(path).is_file():
        raise ConfigError(f"cannot read the settings file {path}: no such file")
    return {key: value for key, value in dotenv_values(path).items() if value is not None}
