"""Boundary models of the sandbox layer: what to create, what an exec returns."""

from __future__ import annotations

from enum import StrEnum

from pydantic import BaseModel, ConfigDict, Field

#: Defaults that keep commands from waiting on a terminal that is not there.
NON_INTERACTIVE_ENV: dict[str, str] = {
    "PAGER": "cat",
    "GIT_PAGER": "cat",
    "MANPAGER": "cat",
    "SYSTEMD_PAGER": "cat",
    "LESS": "-R",
    "TERM": "dumb",
    "GIT_TERMINAL_PROMPT": "0",
    "GIT_EDITOR": "true",
    "DEBIAN_FRONTEND": "noninteractive",
    "PIP_NO_INPUT": "1",
    "PIP_PROGRESS_BAR": "off",
    "TQDM_DISABLE": "1",
    "PYTHONUNBUFFERED": "1",
    "PYTHONDONTWRITEBYTECODE": "1",
    "LANG": "C.UTF-8",
    "LC_ALL": "C.UTF-8",
}


class Resources(BaseModel):
    """Limits a provider enforces where it can (docker always; local through cgroups)."""

    model_config = ConfigDict(extra="forbid")

    cpus: float | None = Field(default=None, gt=0, description="CPU cores; None = no limit")
    memory_mb: int | None = Field(default=4096, gt=0, description="memory limit in MiB")
    pids: int | None = Field(default=1024, gt=0, description="max processes (stops fork bombs)")


class SandboxSpec(BaseModel):
    """Everything a provider needs to start one sandbox."""

    model_config = ConfigDict(extra="forbid")

    image: str | None = Field(default=None, description="container image; None only for `local`")
    workdir: str = Field(default="/testbed", description="absolute path commands run in")
    env: dict[str, str] = Field(default_factory=dict, description="added to NON_INTERACTIVE_ENV")
    resources: Resources = Field(default_factory=Resources)
    network: bool = Field(default=False, description="network access; off by default")
    ttl_s: float = Field(default=4 * 3600, gt=0, description="the sandbox removes itself after this")
    labels: dict[str, str] = Field(default_factory=dict, description="extra labels (task id, ...)")
    files: dict[str, bytes] = Field(default_factory=dict, description="files written at create")
    exec_timeout_s: float = Field(default=60.0, gt=0, description="default per-command timeout")
    max_output_bytes: int = Field(default=1 << 20, gt=0, description="default output cap per exec")

    def command_env(self) -> dict[str, str]:
        return {**NON_INTERACTIVE_ENV, **self.env}


class ExecResult(BaseModel):
    """One command's outcome: output as a terminal would show it, stdout and stderr merged."""

    model_config = ConfigDict(frozen=True)

    output: str
    exit_code: int
    timed_out: bool = False
    output_truncated: bool = False
    dropped_bytes: int = 0
    duration_s: float = 0.0
    #: With ``track_orphans`` (the runner's sandboxes): how many processes of the command's tree outlived their
    #: parent (daemons, a watcher left behind), each ended before the reply; None when not counted.
    orphans: int | None = None

    @property
    def ok(self) -> bool:
        return self.exit_code == 0 and not self.timed_out


class ImageInfo(BaseModel):
    """An image as a provider knows it: its content id (stable across tags), labels and registry digests."""

    model_config = ConfigDict(frozen=True)

    id: str
    labels: dict[str, str] = Field(default_factory=dict)
    repo_digests: tuple[str, ...] = Field(default=(), description="``name@sha256:...`` of a pulled or pushed image")


class SandboxStatus(StrEnum):
    RUNNING = "running"
    DEAD = "dead"
    CLOSED = "closed"
