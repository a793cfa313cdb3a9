"""A third-party provider written to `swe_gym.sandbox.protocol` alone, found through its entry point.

It subclasses nothing of swe_gym's: `DelegatingProvider` and `DelegatingSandbox` implement every member the
Protocols declare, each one spelled out, and run their sandboxes through the public ``local`` provider
(unisolated: ``get_provider({"type": "local", "isolation": "none"})``). A member of swe_gym's own classes read
anywhere outside the Protocols fails here with an AttributeError, which is what the contract suite checks.

`install_entry_point` lays it out as ``pip install`` of a plugin would: a ``*.dist-info`` with an
``entry_points.txt`` in the ``swe_gym.providers`` group, in a directory put on ``sys.path`` (and on
``PYTHONPATH``, for the contract tests that start a child Python).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Literal

from swe_gym.sandbox import ExecResult, SandboxBackend, SandboxForker, SandboxSpec, SandboxStatus, get_provider

NAME = "delegating"
_ROOT = Path(__file__).resolve().parents[2]


class DelegatingSandbox:
    """One sandbox: each Protocol member forwarded to a ``local`` sandbox."""

    provider_name = NAME

    def __init__(self, inner: SandboxBackend) -> None:
        self.inner = inner
        self.id = inner.id  # the local sandbox's id, so the suite's leak check (by local's labels) sees it
        self.workdir = inner.workdir
        self.spec = inner.spec

    @property
    def shell_live(self) -> bool:
        return self.inner.shell_live

    @shell_live.setter
    def shell_live(self, live: bool) -> None:
        self.inner.shell_live = live

    @property
    def network_isolated(self) -> bool:
        return self.inner.network_isolated

    @property
    def runner_protected(self) -> bool:
        return self.inner.runner_protected

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
        return await self.inner.exec(
            command, timeout=timeout, cwd=cwd, env=env, max_output_bytes=max_output_bytes, shell=shell
        )

    async def write_file(self, path: str, content: bytes | str, mode: int = 0o644) -> None:
        await self.inner.write_file(path, content, mode)

    async def read_file(self, path: str, max_bytes: int = 64 << 20) -> bytes:
        return await self.inner.read_file(path, max_bytes)

    async def upload_tar(self, archive: bytes, dest: str) -> None:
        await self.inner.upload_tar(archive, dest)

    async def status(self) -> SandboxStatus:
        return await self.inner.status()

    async def close(self) -> None:
        await self.inner.close()


class DelegatingProvider:
    """The provider: ``create``, ``fork`` and ``cleanup`` done by an unisolated ``local`` provider."""

    name = NAME

    def __init__(self, max_concurrent_creates: int = 4) -> None:
        self.max_concurrent_creates = max_concurrent_creates
        self.local = get_provider({"type": "local", "isolation": "none"})

    async def create(self, spec: SandboxSpec) -> DelegatingSandbox:
        return DelegatingSandbox(await self.local.create(spec))

    async def fork(self, sandbox: SandboxBackend, spec: SandboxSpec) -> DelegatingSandbox:
        assert isinstance(sandbox, DelegatingSandbox) and isinstance(self.local, SandboxForker)
        return DelegatingSandbox(await self.local.fork(sandbox.inner, spec))

    async def cleanup(
        self,
        *,
        run_id: str | None = None,
        older_than_s: float | None = None,
        labels: dict[str, str] | None = None,
    ) -> list[str]:
        return await self.local.cleanup(run_id=run_id, older_than_s=older_than_s, labels=labels)


def install_entry_point(directory: Path) -> None:
    """Register `DelegatingProvider` as an installed plugin would be: a dist-info in ``directory``, put on the path."""
    dist = directory / "swe_gym_delegating_provider-1.0.dist-info"
    dist.mkdir(parents=True, exist_ok=True)
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: swe-gym-delegating-provider\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text(
        f"[swe_gym.providers]\n{NAME} = tests.sandbox.delegating_provider:DelegatingProvider\n"
    )
    for path in (str(directory), str(_ROOT)):
        if path not in sys.path:
            sys.path.insert(0, path)
    paths = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    os.environ["PYTHONPATH"] = os.pathsep.join([str(directory), str(_ROOT), *paths])
