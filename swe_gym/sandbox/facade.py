"""`AsyncSandbox` (primary) and `Sandbox` (sync): the API users and the env call."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from swe_gym.errors import CheckpointNotSupportedError, ForkNotSupportedError
from swe_gym.sandbox.backend import RunnerSandbox, tar_directory
from swe_gym.sandbox.checkpoints import (
    DEFAULT_TTL_S,
    SandboxCheckpoint,
    checkpointer,
    restore_backend,
    restore_spec,
)
from swe_gym.sandbox.create import check_forkable, create_backend, fork_backend, fork_spec
from swe_gym.sandbox.loop import gather_made, run_sync
from swe_gym.sandbox.protocol import SandboxBackend, SandboxProvider
from swe_gym.sandbox.registry import get_provider
from swe_gym.sandbox.spec import ExecResult, SandboxSpec, SandboxStatus

ProviderLike = str | Mapping[str, Any] | SandboxProvider


class AsyncSandbox:
    """A live sandbox. Create with ``await AsyncSandbox.create(spec, provider="docker")``.

    >>> async with await AsyncSandbox.create(SandboxSpec(), "local") as box:  # doctest: +SKIP
    ...     (await box.exec("echo hi")).output
    'hi\\n'
    """

    def __init__(self, backend: SandboxBackend, provider: SandboxProvider | None = None) -> None:
        """``provider``: the one that made ``backend`` (`fork` needs it; `create` sets it)."""
        self.backend = backend
        self.provider = provider

    @classmethod
    async def create(cls, spec: SandboxSpec | None = None, provider: ProviderLike = "local") -> AsyncSandbox:
        spec = spec or SandboxSpec()
        resolved = get_provider(provider)
        return cls(await create_backend(resolved, spec), resolved)

    async def fork(self, *, labels: Mapping[str, str] | None = None, ttl_s: float | None = None) -> AsyncSandbox:
        """A new sandbox whose file system is a copy of this one's now, independent afterwards.

        Copied: whatever commands here can write (the repository, build output, installed packages,
        ``/tmp``; per provider, see the README's "Branching"). Not copied: processes (the fork starts with
        only its runner; a server started here is not running there, nor the persistent shell: the fork's
        first ``shell="persistent"`` command starts a new one and says so) and in-memory mounts. The copy is
        taken between commands: a command running here is waited for. The fork has this sandbox's spec
        (image, limits, env, network), its labels plus ``labels`` and ``forked_from=<this id>``, its own
        id, runner channel and TTL (``ttl_s``, default this sandbox's, counted from now); close each on its
        own. Raises `ForkNotSupportedError` where the provider (or its configuration) cannot fork.

        >>> async with await AsyncSandbox.create(SandboxSpec(), "local") as box:  # doctest: +SKIP
        ...     await box.exec("echo 1 > n")
        ...     async with await box.fork() as branch:
        ...         await branch.exec("echo 2 > n")
        ...         (await box.read_file("n"), await branch.read_file("n"))
        (b'1\\n', b'2\\n')
        """
        if self.provider is None:
            raise ForkNotSupportedError(
                f"sandbox {self.id} was not made by AsyncSandbox.create, so its provider is unknown; "
                "wrap it as AsyncSandbox(backend, provider) to fork it"
            )
        backend = await fork_backend(self.provider, self.backend, fork_spec(self.backend, labels, ttl_s))
        if self.backend.shell_live:
            backend.shell_live = True  # its first persistent command says the shell was not carried over
        return AsyncSandbox(backend, self.provider)

    async def forks(
        self, n: int, *, labels: Mapping[str, str] | None = None, ttl_s: float | None = None
    ) -> list[AsyncSandbox]:
        """``n`` forks of this sandbox (see `fork`), all or none: if one fails, those made are closed."""
        results = await gather_made([self.fork(labels=labels, ttl_s=ttl_s) for _ in range(n)], AsyncSandbox.close)
        made = [result for result in results if isinstance(result, AsyncSandbox)]
        failed = [result for result in results if isinstance(result, BaseException)]
        if failed:
            await asyncio.gather(*(box.close() for box in made), return_exceptions=True)
            raise failed[0]
        return made

    @property
    def id(self) -> str:
        return self.backend.id

    @property
    def workdir(self) -> str:
        return self.backend.workdir

    @property
    def provider_name(self) -> str:
        return self.backend.provider_name

    @property
    def spec(self) -> SandboxSpec:
        return self.backend.spec

    async def exec(self, command: str | bytes, **options: Any) -> ExecResult:
        """Run ``command`` (options: ``timeout``, ``cwd``, ``env``, ``max_output_bytes``, ``shell``): in a fresh
        ``bash -c`` by default, or with ``shell="persistent"`` in the sandbox's one persistent bash, where ``cd``,
        ``export`` and activated virtualenvs carry over between commands (README: "The persistent shell")."""
        return await self.backend.exec(command, **options)

    async def exec_action(self, command: str | bytes, **options: Any) -> ExecResult:
        """`exec` for the agent's own commands (a step's action): where the backend keeps a bash started ahead for
        them (`RunnerSandbox`, every bundled provider), a stateless one runs there, with no bash start-up to wait
        for and the output ``bash -c`` gives. The library's own commands use `exec`: they never run in a shell a
        process the agent left behind could have reached."""
        if isinstance(self.backend, RunnerSandbox):
            options["spare_shell"] = True
        return await self.backend.exec(command, **options)

    def exec_action_here(self, command: str | bytes, **options: Any) -> ExecResult | None:
        """`exec_action`, blocking, in the calling thread, where the backend can skip swe_gym's loop for it
        (`RunnerSandbox.exec_here`); None, with nothing run, where it cannot (then await `exec_action`). Takes
        ``timeout``, ``max_output_bytes`` and ``shell``."""
        if isinstance(self.backend, RunnerSandbox):
            return self.backend.exec_here(command, spare_shell=True, **options)
        return None

    async def write_file(self, path: str, content: bytes | str, mode: int = 0o644) -> None:
        await self.backend.write_file(path, content, mode)

    async def read_file(self, path: str, max_bytes: int = 64 << 20) -> bytes:
        return await self.backend.read_file(path, max_bytes)

    async def upload_dir(self, source: Path, dest: str | None = None) -> None:
        """Copy a host directory's contents into the sandbox (one round trip)."""
        await self.backend.upload_tar(tar_directory(Path(source)), dest or self.workdir)

    async def upload_tar(self, archive: bytes, dest: str | None = None) -> None:
        await self.backend.upload_tar(archive, dest or self.workdir)

    async def status(self) -> SandboxStatus:
        return await self.backend.status()

    async def close(self) -> None:
        await self.backend.close()

    async def __aenter__(self) -> AsyncSandbox:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    # -- checkpoints: the file system saved for any later process (swe_gym.sandbox.checkpoints) ---------------

    async def checkpoint(
        self, *, labels: Mapping[str, str] | None = None, ttl_s: float = DEFAULT_TTL_S
    ) -> SandboxCheckpoint:
        """Save this sandbox's file system (what `fork` copies, taken the same way, a running command waited for)
        as a handle that survives the process (``model_dump_json``); this sandbox goes on. It carries our labels,
        this one's, ``labels`` and an expiry ``ttl_s`` from now (default a day); remove it with
        `remove_checkpoint`, or ``swe-gym cleanup`` does past its TTL. `CheckpointNotSupportedError` where the
        provider cannot.

        >>> async with await AsyncSandbox.create(SandboxSpec(), "local") as box:  # doctest: +SKIP
        ...     await box.exec("echo 1 > n")
        ...     saved = await box.checkpoint(ttl_s=3600)
        >>> async with await AsyncSandbox.restore(saved) as again:  # doctest: +SKIP
        ...     await again.read_file("n")
        b'1\\n'
        """
        if self.provider is None:
            raise CheckpointNotSupportedError(
                f"sandbox {self.id} was not made by AsyncSandbox.create, so its provider is unknown; "
                "wrap it as AsyncSandbox(backend, provider) to checkpoint it"
            )
        await check_forkable(self.backend)
        return await checkpointer(self.provider).checkpoint(self.backend, dict(labels or {}), ttl_s)

    @classmethod
    async def restore(
        cls,
        checkpoint: SandboxCheckpoint,
        provider: ProviderLike | None = None,
        *,
        labels: Mapping[str, str] | None = None,
        ttl_s: float | None = None,
    ) -> AsyncSandbox:
        """A new sandbox on ``checkpoint``'s file system, as a fork of the source would be (no process carried
        over; the persistent shell's first command says so), with the source's spec, its labels plus ``labels``
        and ``restored_from``, its own TTL. The checkpoint stays: each restore is another independent sandbox.
        ``provider``: the one holding it (default: its name, default options). `CheckpointExpiredError` past its
        TTL, `CheckpointNotFoundError` once removed."""
        resolved = get_provider(checkpoint.provider if provider is None else provider)
        backend = await restore_backend(resolved, checkpoint, restore_spec(checkpoint, labels, ttl_s))
        if checkpoint.shell_live:
            backend.shell_live = True
        return cls(backend, resolved)

    @staticmethod
    async def remove_checkpoint(checkpoint: SandboxCheckpoint, provider: ProviderLike | None = None) -> None:
        """Remove a checkpoint's saved copy (idempotent); sandboxes restored from it go on."""
        resolved = get_provider(checkpoint.provider if provider is None else provider)
        await checkpointer(resolved).remove_checkpoint(checkpoint)


class Sandbox:
    """Blocking twin of `AsyncSandbox`, run on a shared background event loop."""

    def __init__(self, inner: AsyncSandbox) -> None:
        self.aio = inner

    @classmethod
    def create(cls, spec: SandboxSpec | None = None, provider: ProviderLike = "local") -> Sandbox:
        return cls(run_sync(AsyncSandbox.create(spec, provider)))

    @property
    def id(self) -> str:
        return self.aio.id

    @property
    def workdir(self) -> str:
        return self.aio.workdir

    @property
    def spec(self) -> SandboxSpec:
        return self.aio.spec

    def fork(self, *, labels: Mapping[str, str] | None = None, ttl_s: float | None = None) -> Sandbox:
        """A new sandbox whose file system is a copy of this one's now; see `AsyncSandbox.fork`."""
        return Sandbox(run_sync(self.aio.fork(labels=labels, ttl_s=ttl_s)))

    def exec(self, command: str | bytes, **options: Any) -> ExecResult:
        return run_sync(self.aio.exec(command, **options))

    def exec_action(self, command: str | bytes, **options: Any) -> ExecResult:
        """`exec` for the agent's own commands; see `AsyncSandbox.exec_action`."""
        return run_sync(self.aio.exec_action(command, **options))

    def write_file(self, path: str, content: bytes | str, mode: int = 0o644) -> None:
        run_sync(self.aio.write_file(path, content, mode))

    def read_file(self, path: str, max_bytes: int = 64 << 20) -> bytes:
        return run_sync(self.aio.read_file(path, max_bytes))

    def upload_dir(self, source: Path, dest: str | None = None) -> None:
        run_sync(self.aio.upload_dir(source, dest))

    def status(self) -> SandboxStatus:
        return run_sync(self.aio.status())

    def close(self) -> None:
        run_sync(self.aio.close())

    def __enter__(self) -> Sandbox:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- checkpoints (see AsyncSandbox.checkpoint) --------------------------------------------------------------

    def checkpoint(self, *, labels: Mapping[str, str] | None = None, ttl_s: float = DEFAULT_TTL_S) -> SandboxCheckpoint:
        """Save this sandbox's file system for any later process; see `AsyncSandbox.checkpoint`."""
        return run_sync(self.aio.checkpoint(labels=labels, ttl_s=ttl_s))

    @classmethod
    def restore(
        cls,
        checkpoint: SandboxCheckpoint,
        provider: ProviderLike | None = None,
        *,
        labels: Mapping[str, str] | None = None,
        ttl_s: float | None = None,
    ) -> Sandbox:
        """A new sandbox on ``checkpoint``'s file system; see `AsyncSandbox.restore`."""
        return cls(run_sync(AsyncSandbox.restore(checkpoint, provider, labels=labels, ttl_s=ttl_s)))

    @staticmethod
    def remove_checkpoint(checkpoint: SandboxCheckpoint, provider: ProviderLike | None = None) -> None:
        run_sync(AsyncSandbox.remove_checkpoint(checkpoint, provider))
