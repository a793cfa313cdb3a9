"""The seams between the sandbox facade and the providers behind it.

Everything the rest of swe_gym reads from a provider or a sandbox is declared here, so a provider
written to these Protocols alone (without swe_gym's base classes) works everywhere swe_gym runs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal, Protocol, runtime_checkable

from swe_gym.sandbox.spec import ExecResult, ImageInfo, SandboxSpec, SandboxStatus

if TYPE_CHECKING:
    from swe_gym.sandbox.checkpoints import SandboxCheckpoint


@runtime_checkable
class SandboxBackend(Protocol):
    """One live sandbox as a provider hands it out. `RunnerSandbox` implements it."""

    id: str
    """Unique among this provider's sandboxes; what ``cleanup`` returns and logs name."""
    workdir: str
    """Absolute path commands run in by default (the spec's ``workdir``)."""
    spec: SandboxSpec
    """The spec it was started from; a fork copies it (`swe_gym.sandbox.create.fork_spec`)."""
    provider_name: str
    """The provider's registered name (reset infos and reports show it)."""
    shell_live: bool
    """Whether the persistent shell should be running (its last command left it so). ``AsyncSandbox.fork`` sets
    it on a fork of a sandbox with a live shell, so the fork's first persistent command says the shell was not
    carried over; a backend reads it when it starts a new persistent shell."""
    runner_protected: bool
    """Whether nothing the sandbox runs can end its runner (PID 1 of the sandbox's PID namespace). Where it can
    (False), a sandbox found dead between commands may be the agent's doing: the episode judges it against a
    control instead of masking it."""

    @property
    def network_isolated(self) -> bool:
        """Whether commands here can reach no network, neither the internet nor other sandboxes (reset infos say it)."""
        ...

    async def exec(
        self,
        command: str | bytes,
        *,
        timeout: float | None = None,
        cwd: str | None = None,
        env: dict[str, str] | None = None,
        max_output_bytes: int | None = None,
        shell: Literal["stateless", "persistent"] = "stateless",
    ) -> ExecResult:
        """Run ``command`` with bash: a fresh ``bash -c`` (in ``cwd``, ``env`` added), or with ``shell="persistent"``
        the sandbox's one persistent bash. Output is stdout and stderr merged, head and tail kept past
        ``max_output_bytes``; past ``timeout`` the whole process group is killed (exit code 124); stdin is closed.
        Defaults come from the spec; `SandboxError` once closed, `SandboxDiedError` when the sandbox is gone."""
        ...

    async def write_file(self, path: str, content: bytes | str, mode: int = 0o644) -> None:
        """Write ``content`` at ``path`` (relative: to the workdir), making its directories."""
        ...

    async def read_file(self, path: str, max_bytes: int = 64 << 20) -> bytes:
        """The bytes of ``path`` (relative: to the workdir); a `SandboxError` naming a missing file."""
        ...

    async def upload_tar(self, archive: bytes, dest: str) -> None:
        """Unpack the tar ``archive`` under the absolute directory ``dest``."""
        ...

    async def status(self) -> SandboxStatus:
        """RUNNING when it answers, DEAD when it does not, CLOSED after ``close``; never raises."""
        ...

    async def close(self) -> None:
        """Remove the sandbox and all it holds; idempotent, and done even when it already died."""
        ...


@runtime_checkable
class SandboxProvider(Protocol):
    """Where sandboxes run. Register one with `swe_gym.sandbox.register_provider` or
    the ``swe_gym.providers`` entry-point group (value: a zero-argument factory or
    a class taking keyword options)."""

    name: str
    """The name it is registered under (reset infos, certificates and log lines show it)."""
    max_concurrent_creates: int
    """How many creates and forks may run at once on this provider instance (a Docker daemon given 64 starts
    at once times out); `swe_gym.sandbox.create` holds the rest back."""

    async def create(self, spec: SandboxSpec) -> SandboxBackend:
        """A started sandbox for ``spec``, its ``files`` written; a `SandboxError` when the start failed (retried),
        `ImageNotFoundError`, `ProviderUnavailableError` or `ConfigError` when retrying cannot help. Cancelled
        halfway, it leaves nothing behind."""
        ...

    async def cleanup(
        self,
        *,
        run_id: str | None = None,
        older_than_s: float | None = None,
        labels: dict[str, str] | None = None,
    ) -> list[str]:
        """Remove sandboxes (and images) this library created, selected by run, age and ``labels``; return ids."""
        ...


@runtime_checkable
class SandboxForker(Protocol):
    """Optional provider capability: branch a live sandbox (what `AsyncSandbox.fork` calls).

    ``fork(sandbox, spec)`` returns a new, started sandbox of this provider whose file system (the
    repository, build output, installed packages, ``/tmp``: whatever commands in ``sandbox`` can write)
    is a copy of ``sandbox``'s at that moment and independent afterwards. Processes are not carried over:
    the new sandbox starts with only its runner. ``spec`` is the source's spec as the fork should have it
    (limits, env, network, labels plus ``forked_from``, its own TTL; no ``files`` to write): the provider
    labels, limits and expires the new sandbox like any other, with its own id and runner channel (key).
    The source keeps running, untouched; the copy is taken between its commands (`RunnerSandbox.quiet`)
    and, where the runtime can, with its processes frozen. Whatever the fork itself creates (an image, a
    server-side snapshot) carries the library's labels and goes when no fork uses it, or with ``cleanup``.
    A provider without the capability makes forks fail with `swe_gym.errors.ForkNotSupportedError`.
    """

    async def fork(self, sandbox: SandboxBackend, spec: SandboxSpec) -> SandboxBackend: ...


@runtime_checkable
class PoolForker(Protocol):
    """Optional provider capability: fork into sandboxes already started (a warm pool's; `SandboxPool.fork`).

    A fork that way costs what the source's commands changed, not a sandbox start. ``fork_into(sandbox,
    targets)`` makes each of ``targets`` (started sandboxes of this provider with ``sandbox``'s spec, labels
    aside, in which nothing but their runner has run) a fork of ``sandbox`` as `SandboxForker.fork` defines
    one: the file system copied (taken once for all targets, between commands, the source frozen where it can
    be), none of the source's processes. It returns False, with the targets untouched, where this source cannot
    be copied that way (e.g. a change too big to replay): the caller forks the usual way then. A `SandboxError`
    means the copy failed and the targets must not be used.
    """

    #: Whether the copy goes into each target through its own runner (docker: the layer replayed by it), so a target
    #: it reached is known alive; otherwise (local: the host writes the files) the caller asks each meanwhile.
    replays_through_runners: bool

    async def fork_into(self, sandbox: SandboxBackend, targets: list[SandboxBackend]) -> bool: ...


@runtime_checkable
class ImageAdopter(Protocol):
    """Optional provider capability: make a started sandbox of no image one of ``image`` (local: its saved home
    copied in), as if it had been started from it.

    Lets a warm pool keep sandboxes that serve every image (`SandboxPool.take`, `SandboxPool.fork`), where an
    image is only files the provider can put in place. False, with the sandbox untouched, where it cannot (another
    image already, commands run there, an image it does not have).
    """

    def holds(self, image: str) -> bool:
        """Whether ``image`` is one `adopt` can put in place (cheap: no sandbox is touched)."""
        ...

    async def adopt(self, sandbox: SandboxBackend, image: str) -> bool: ...


@runtime_checkable
class ImageInspector(Protocol):
    """Optional provider capability: what the provider knows of an image (e.g. docker; `ImageCommitter` has it).

    Providers without images (opensandbox, apptainer) do not have it; validation records no digest then.
    """

    async def image_info(self, image: str) -> ImageInfo | None:
        """``image`` as this provider would start it (content id, labels, registry digests), or None."""
        ...


@runtime_checkable
class ImageCommitter(Protocol):
    """Optional provider capability: save a live sandbox's files as an image later sandboxes start from.

    Lets a caller pay a slow preparation once per image rather than in every sandbox. The new image keeps
    the source image's configuration (command, environment, user); the sandbox's own settings do not leak
    into it. It carries the library's labels plus ``labels``, so the provider's ``cleanup`` can remove it.
    """

    #: Whether an image is worth making for any preparation (a repository upload, a setup script), not only for
    #: a slow one such as scrubbing git history: true where committing costs about what a reset's upload does.
    prepares_every_task: bool

    async def image_info(self, image: str) -> ImageInfo | None:
        """``image`` as this provider would start it, or None when it does not have it."""
        ...

    async def commit(self, sandbox: SandboxBackend, image: str, labels: dict[str, str]) -> ImageInfo:
        """Save ``sandbox`` (one of this provider's) as ``image`` (``name:tag``), replacing an older one."""
        ...


@runtime_checkable
class SandboxCheckpointer(Protocol):
    """Optional provider capability: save a live sandbox's file system so that any process can restore it later
    (`AsyncSandbox.checkpoint`/`AsyncSandbox.restore`; durable episodes, `swe_gym.envs.checkpoint`).

    What is saved is what a fork copies (`SandboxForker`), taken the same way (between commands, the source
    frozen where it can be); the source keeps running. The saved copy carries the library's labels (ours, the run,
    created, expires) so ``cleanup`` finds it, and outlives this process until its TTL or ``remove_checkpoint``.
    """

    async def checkpoint(self, sandbox: SandboxBackend, labels: dict[str, str], ttl_s: float) -> SandboxCheckpoint:
        """Save ``sandbox`` (one of this provider's); the handle (`swe_gym.sandbox.checkpoints.SandboxCheckpoint`,
        JSON-serialisable) names where, and carries ``labels`` with ours and the expiry ``ttl_s`` from now."""
        ...

    async def restore(self, checkpoint: SandboxCheckpoint, spec: SandboxSpec) -> SandboxBackend:
        """A new, started sandbox with ``spec`` on the saved file system, as a fork of the source would be; the
        checkpoint stays (restore it again for another). `CheckpointNotFoundError` when it is gone."""
        ...

    async def remove_checkpoint(self, checkpoint: SandboxCheckpoint) -> None:
        """Remove the saved copy; idempotent (one already gone is no error). Sandboxes restored from it keep
        running."""
        ...

    async def cleanup_checkpoints(
        self,
        *,
        run_id: str | None = None,
        older_than_s: float | None = None,
        labels: dict[str, str] | None = None,
    ) -> list[str]:
        """Remove checkpoints selected as ``cleanup`` selects sandboxes, except that ``older_than_s`` picks only
        those past their TTL (0: every expired one); return their ids. ``cleanup`` calls it too."""
        ...
