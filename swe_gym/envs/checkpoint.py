"""`EpisodeCheckpoint`: a live episode saved so that another process can go on with it (`SWEEnv.resume`).

A trainer that crashes mid-rollout loses nothing it checkpointed: the handle is small JSON (the task record, the
env's options and provider config, the step count, last observation, patch base, the editor's undo states, and the
provider's checkpoint of the sandbox: `swe_gym.sandbox.checkpoints`), and a resumed episode's remaining steps and
grade are what they would have been. Resuming does not consume it: each resume is another independent episode (a
fork of the saved one), until the checkpoint expires (its TTL) or is removed (`EpisodeCheckpoint.remove`).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any, TypeAlias

from pydantic import Base64Bytes, BaseModel, ConfigDict, Field

from swe_gym.envs.options import EnvOptions, HostConfig, TaskSelection
from swe_gym.errors import ConfigError
from swe_gym.sandbox.checkpoints import SandboxCheckpoint
from swe_gym.sandbox.facade import AsyncSandbox
from swe_gym.sandbox.loop import run_sync
from swe_gym.sandbox.protocol import SandboxProvider
from swe_gym.tasks import SWETask
from swe_gym.tools import EditorHistory

#: What `SWEEnv.resume` takes: a handle, its ``model_dump()``, its JSON, or the path of a saved one.
CheckpointLike: TypeAlias = "EpisodeCheckpoint | Mapping[str, Any] | str | bytes | os.PathLike[str]"

#: Bumped when a field changes meaning; a handle of another version is refused with a clear error.
VERSION = 1


def provider_config(provider: SandboxProvider) -> dict[str, Any]:
    """``provider``'s options as a ``{"type": ...}`` config (secrets, the fields hidden from repr, left out: the
    resuming process reads them from its own environment, as the provider's defaults do)."""
    config = getattr(provider, "config", None)
    if not isinstance(config, BaseModel):
        return {"type": provider.name}
    secret = {name for name, field in type(config).model_fields.items() if not field.repr}
    return {**config.model_dump(mode="json", exclude=secret), "type": provider.name}


class EpisodeCheckpoint(BaseModel):
    """A live episode saved: what `Episode.resumed` needs to go on with it in any process. ``model_dump_json``
    writes it, ``model_validate_json`` (or `load`) reads it back."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    version: int = VERSION
    task: SWETask
    options: dict[str, Any] = Field(description="the env's EnvOptions, as JSON")
    selection: TaskSelection | None = Field(
        default=None, description="where the env drew its tasks (None: records; the resumed env has the task alone)"
    )
    provider: dict[str, Any] = Field(description="the provider config, {type: NAME, ...}, secrets left out")
    sandbox: SandboxCheckpoint
    steps: int
    last_observation: str
    base_tree: str = Field(description="the patch base: the git tree of the repository at reset")
    editor_history: dict[str, list[Base64Bytes | None]] = Field(default_factory=dict)

    @property
    def id(self) -> str:
        return self.sandbox.id

    @property
    def expires_at(self) -> float:
        return self.sandbox.expires_at

    @classmethod
    def load(cls, path: str | Path) -> EpisodeCheckpoint:
        return cls.model_validate_json(Path(path).read_text(encoding="utf-8"))

    @classmethod
    def of(cls, handle: CheckpointLike) -> EpisodeCheckpoint:
        """``handle`` as a checkpoint, however it was kept: the model, its ``model_dump()`` (a dict), its JSON
        (``str`` or ``bytes``, as ``model_dump_json`` wrote it), or the path of a file `save` wrote."""
        if isinstance(handle, EpisodeCheckpoint):
            return handle
        if isinstance(handle, Mapping):
            return cls.model_validate(handle)
        if isinstance(handle, bytes | bytearray) or (isinstance(handle, str) and handle.lstrip().startswith("{")):
            return cls.model_validate_json(handle)
        if isinstance(handle, str | os.PathLike):
            return cls.load(handle)
        raise ConfigError(
            f"a checkpoint is an EpisodeCheckpoint, its dict or JSON, or the path of a saved one; got {type(handle)}"
        )

    def save(self, path: str | Path) -> None:
        Path(path).write_text(self.model_dump_json(), encoding="utf-8")

    def history(self) -> EditorHistory:
        return EditorHistory({path: list(states) for path, states in self.editor_history.items()})

    def env_arguments(self) -> dict[str, Any]:
        """The `SWEEnv` keywords of the env it was taken in (`SWEEnv.resume` lets overrides replace each)."""
        selection: dict[str, Any] = {"tasks": [self.task]}
        if self.selection is not None:
            selection = self.selection.model_dump(exclude_none=True)
        return {**self.options, **selection, "provider": dict(self.provider)}

    async def remove_async(self) -> None:
        """Remove the saved sandbox (idempotent); episodes resumed from it go on."""
        await AsyncSandbox.remove_checkpoint(self.sandbox, self.provider)

    def remove(self) -> None:
        run_sync(self.remove_async())


def options_of(config: EnvOptions) -> tuple[dict[str, Any], TaskSelection | None]:
    """An env's options as JSON, and its task selection where it names a source (not records) that reloads."""
    options = config.model_dump(mode="json", include=set(EnvOptions.model_fields))
    if isinstance(config, HostConfig) and isinstance(config.tasks, str | Path) and not isinstance(config.limit, slice):
        fields = {"tasks": str(config.tasks), "split": config.split, "instance_ids": config.instance_ids}
        return options, TaskSelection(**fields, limit=config.limit)
    return options, None
