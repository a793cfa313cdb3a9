"""`AsyncSandbox` (primary) and `Sandbox` (sync): the API users and the env call."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from swe_gym.sandbox.backend import tar_directory
from swe_gym.sandbox.create import create_backend
from swe_gym.sandbox.loop import run_sync
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

    def __init__(self, backend: SandboxBackend) -> None:
        self.backend = backend

    @classmethod
    async def create(cls, spec: SandboxSpec | None = None, provider: ProviderLike = "local") -> AsyncSandbox:
        spec = spec or SandboxSpec()
        return cls(await create_backend(get_provider(provider), spec))

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
        return await self.backend.exec(command, **options)

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

    def exec(self, command: str | bytes, **options: Any) -> ExecResult:
        return run_sync(self.aio.exec(command, **options))

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
