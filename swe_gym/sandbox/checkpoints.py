"""Sandbox checkpoints: a live sandbox's file system saved where another process can start a sandbox on it.

A fork copies a sandbox into a new one at once; a checkpoint keeps the copy (`SandboxCheckpoint`, a small
JSON-serialisable handle) until its TTL, so a sandbox can be restored from it after the process that took it is
gone (SIGKILLed mid-rollout). Each provider saves it its own way (`swe_gym.sandbox.protocol.SandboxCheckpointer`):
a committed image (docker), a directory of the home's writable parts under the provider's root (local, apptainer),
a server snapshot (opensandbox). Every checkpoint carries the library's labels (ours, the run, created, expires) and
a TTL: ``swe-gym cleanup --expired`` removes those past it, ``--run-id``/``--all`` a run's or all. Restoring does
not consume it: each restore is a new, independent sandbox (a fork of the saved state), until it is removed
(`AsyncSandbox.remove_checkpoint`) or expires.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Mapping
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from swe_gym.errors import (
    CheckpointExpiredError,
    CheckpointNotFoundError,
    CheckpointNotSupportedError,
    ConfigError,
)
from swe_gym.sandbox import labels as lbl
from swe_gym.sandbox.create import PERMANENT, _gated
from swe_gym.sandbox.protocol import SandboxBackend, SandboxCheckpointer, SandboxProvider
from swe_gym.sandbox.spec import SandboxSpec

#: The label naming a checkpoint (``swe_gym.checkpoint=<id>``) on what holds it: an image, a directory's meta.
CHECKPOINT = "checkpoint"
#: The label a restored sandbox carries: the id of the checkpoint it was restored from.
RESTORED_FROM = "restored_from"
#: How long a checkpoint is kept unless ``ttl_s`` says otherwise.
DEFAULT_TTL_S = 24 * 3600.0
#: Where the directory-based providers (local, apptainer) keep checkpoints: under their root, beside the homes.
CHECKPOINT_DIR = ".checkpoints"


class SandboxCheckpoint(BaseModel):
    """A saved sandbox file system: which provider holds it, where (``reference``), and the spec to restore it
    with. Survives the process (``model_dump_json`` / ``model_validate_json``)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str = Field(description="unique; the label swe_gym.checkpoint on what holds it")
    provider: str = Field(description="the registered name of the provider that holds it")
    reference: str = Field(description="the provider's handle: an image tag, a directory, a snapshot id")
    spec: SandboxSpec = Field(description="the source sandbox's spec (no files), which a restore starts with")
    source_id: str = Field(description="the id of the sandbox it was taken from")
    created_at: float = Field(description="seconds since the epoch")
    ttl_s: float = Field(gt=0, description="kept this long after created_at; restores refuse it afterwards")
    labels: dict[str, str] = Field(default_factory=dict, description="ours (run, created, expires) and the caller's")
    shell_live: bool = Field(default=False, description="the persistent shell was running (a restore says it is not)")

    @property
    def expires_at(self) -> float:
        return self.created_at + self.ttl_s

    def expired(self, now: float | None = None) -> bool:
        return (time.time() if now is None else now) >= self.expires_at


def new_checkpoint(
    provider: str, sandbox: SandboxBackend, labels: Mapping[str, str] | None, ttl_s: float
) -> SandboxCheckpoint:
    """The handle of a checkpoint of ``sandbox`` about to be taken (its ``reference`` filled in by the provider)."""
    if not ttl_s > 0:
        raise ConfigError(f"a checkpoint's ttl_s must be > 0, got {ttl_s}")
    checkpoint_id, now = uuid.uuid4().hex[:16], time.time()
    marks = lbl.sandbox_labels({**sandbox.spec.labels, **(labels or {}), CHECKPOINT: checkpoint_id}, ttl_s)
    # To the millisecond: a short TTL is not rounded up or away, nor is "created" put in the future (an age
    # filter of 0 then would not select a checkpoint taken this second).
    marks[lbl.CREATED_AT], marks[lbl.EXPIRES_AT] = f"{now:.3f}", f"{now + ttl_s:.3f}"
    return SandboxCheckpoint(
        id=checkpoint_id,
        provider=provider,
        reference="",
        spec=sandbox.spec.model_copy(update={"files": {}}),
        source_id=sandbox.id,
        created_at=now,
        ttl_s=ttl_s,
        labels=marks,
        shell_live=sandbox.shell_live,
    )


def selected(
    marks: Mapping[str, str], *, run_id: str | None, older_than_s: float | None, extra: dict[str, str] | None
) -> bool:
    """Whether cleanup's filter selects a checkpoint with these labels: as a sandbox's, except that an age filter
    picks only checkpoints past their TTL (an age sweep for crashed owners' leftovers keeps the checkpoints that
    are meant to outlive them)."""
    if not lbl.matches(dict(marks), run_id=run_id, older_than_s=older_than_s, extra=extra):
        return False
    return older_than_s is None or time.time() >= float(marks.get(lbl.EXPIRES_AT, "0") or 0)


def restore_spec(checkpoint: SandboxCheckpoint, labels: Mapping[str, str] | None, ttl_s: float | None) -> SandboxSpec:
    """The spec a restore gets: the saved one, its labels plus ``labels`` and ``restored_from``, its own TTL."""
    if ttl_s is not None and not ttl_s > 0:
        raise ConfigError(f"a restored sandbox's ttl_s must be > 0, got {ttl_s}")
    spec = checkpoint.spec
    return spec.model_copy(
        update={
            "labels": {**spec.labels, **(labels or {}), RESTORED_FROM: checkpoint.id},
            "ttl_s": spec.ttl_s if ttl_s is None else float(ttl_s),
        }
    )


def checkpointer(provider: SandboxProvider) -> SandboxCheckpointer:
    """``provider`` as a `SandboxCheckpointer`, or a `CheckpointNotSupportedError` that says so."""
    if not isinstance(provider, SandboxCheckpointer):
        raise CheckpointNotSupportedError(
            f"the {provider.name} provider cannot checkpoint a sandbox (it has no checkpoint/restore; see "
            "swe_gym.sandbox.protocol.SandboxCheckpointer); use local, docker, apptainer or opensandbox"
        )
    return provider


def check_restorable(checkpoint: SandboxCheckpoint, provider: SandboxProvider) -> None:
    """A `CheckpointExpiredError` past its TTL, a `ConfigError` for a checkpoint of another provider."""
    if checkpoint.provider != provider.name:
        raise ConfigError(
            f"checkpoint {checkpoint.id} is held by the {checkpoint.provider} provider, not {provider.name}: "
            f"restore it with provider={checkpoint.provider!r}"
        )
    if checkpoint.expired():
        raise CheckpointExpiredError(
            f"checkpoint {checkpoint.id} expired at {time.ctime(checkpoint.expires_at)} (ttl_s={checkpoint.ttl_s:g}) "
            "and is not restored (swe-gym cleanup --expired removes it); start a new episode, or take checkpoints "
            "with a longer ttl_s"
        )


async def restore_backend(
    provider: SandboxProvider, checkpoint: SandboxCheckpoint, spec: SandboxSpec
) -> SandboxBackend:
    """A started sandbox on ``checkpoint``'s file system, through the provider's create gate and retries."""
    saver = checkpointer(provider)
    check_restorable(checkpoint, provider)
    return await _gated(provider, lambda: saver.restore(checkpoint, spec), "restore", 3, PERMANENT)


def gone(checkpoint: SandboxCheckpoint, where: str) -> CheckpointNotFoundError:
    return CheckpointNotFoundError(
        f"checkpoint {checkpoint.id} ({checkpoint.provider}: {where}) is gone: removed, or by swe-gym cleanup; "
        "start a new episode, or keep the checkpoint (a longer ttl_s, no cleanup of its run)"
    )


# -- checkpoints as directories (local, apptainer) ------------------------------------------------------------------


def checkpoint_root(root: Path) -> Path:
    return root / CHECKPOINT_DIR


def new_checkpoint_dir(root: Path, checkpoint: SandboxCheckpoint, **meta: object) -> Path:
    """The checkpoint's directory, holding ``meta.json`` (its labels, so cleanup finds it) before anything else."""
    directory = checkpoint_root(root) / checkpoint.id
    directory.mkdir(parents=True)
    (directory / "meta.json").write_text(json.dumps({"id": checkpoint.id, "labels": checkpoint.labels, **meta}))
    return directory


def checkpoint_dir(checkpoint: SandboxCheckpoint) -> Path:
    """The directory holding ``checkpoint``, or a `CheckpointNotFoundError`."""
    directory = Path(checkpoint.reference)
    if not (directory / "meta.json").is_file():
        raise gone(checkpoint, str(directory))
    return directory


def cleanup_checkpoint_dirs(
    root: Path, *, run_id: str | None, older_than_s: float | None, labels: dict[str, str] | None
) -> list[str]:
    """Remove the checkpoint directories under ``root`` that cleanup's filter selects (`selected`). Blocking."""
    from swe_gym.sandbox.providers.process import remove_home

    removed = []
    base = checkpoint_root(root)
    for directory in sorted(base.iterdir()) if base.is_dir() else []:
        try:
            meta = json.loads((directory / "meta.json").read_text())
        except (OSError, ValueError):
            continue
        if selected(meta.get("labels", {}), run_id=run_id, older_than_s=older_than_s, extra=labels):
            remove_home(directory, None)
            removed.append(str(meta.get("id")))
    return removed


async def save_dirs(
    root: Path,
    checkpoint: SandboxCheckpoint,
    sandbox: SandboxBackend,
    copies: list[tuple[list[Path], str]],
    **meta: object,
) -> SandboxCheckpoint:
    """Checkpoint a process sandbox (`ProcessSandbox.copy_out`, as its fork copies): each (its home's directories,
    a folder of the checkpoint's directory) copied; the handle, its ``reference`` that directory."""
    from swe_gym.sandbox.loop import offload
    from swe_gym.sandbox.providers.process import ProcessSandbox, remove_home

    assert isinstance(sandbox, ProcessSandbox)
    directory = await offload(new_checkpoint_dir, root, checkpoint, **meta)
    try:
        await sandbox.copy_out([(sources, directory / folder) for sources, folder in copies])
    except BaseException:
        await offload(remove_home, directory, None)
        raise
    return checkpoint.model_copy(update={"reference": str(directory)})


async def load_dirs(checkpoint: SandboxCheckpoint, home: Path) -> None:
    """Copy a directory checkpoint's folders into a new sandbox ``home``."""
    from swe_gym.sandbox.providers.process import copy_tree

    directory = checkpoint_dir(checkpoint)
    await copy_tree(sorted(path for path in directory.iterdir() if path.is_dir()), home)


async def remove_dir(checkpoint: SandboxCheckpoint, root: Path) -> None:
    """Remove a directory checkpoint (idempotent); only one under ``root``'s checkpoint folder."""
    from swe_gym.sandbox.loop import offload
    from swe_gym.sandbox.providers.process import remove_home

    directory = Path(checkpoint.reference)
    if directory.parent != checkpoint_root(root) or directory.name != checkpoint.id:
        raise ConfigError(f"checkpoint {checkpoint.id} is not one of this provider's (under {checkpoint_root(root)})")
    await offload(remove_home, directory, None)
