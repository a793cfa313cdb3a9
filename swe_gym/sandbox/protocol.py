"""The seams between the sandbox facade and the providers behind it."""

from __future__ import annotations

from typing import Literal, Protocol, runtime_checkable

from swe_gym.sandbox.spec import ExecResult, ImageInfo, SandboxSpec, SandboxStatus


@runtime_checkable
class SandboxBackend(Protocol):
    """One live sandbox as a provider hands it out. `RunnerSandbox` implements it."""

    id: str
    workdir: str
    spec: SandboxSpec
    provider_name: str

    async def exec(
        self,
        command: str | bytes,
        *,
        timeout: float | None = None,
        cwd: str | None = None,
        env: dict[str, str] | None = None,
        max_output_bytes: int | None = None,
        shell: Literal["stateless", "persistent"] = "stateless",
    ) -> ExecResult: ...

    async def write_file(self, path: str, content: bytes | str, mode: int = 0o644) -> None: ...

    async def read_file(self, path: str, max_bytes: int = 64 << 20) -> bytes: ...

    async def upload_tar(self, archive: bytes, dest: str) -> None: ...

    async def status(self) -> SandboxStatus: ...

    async def close(self) -> None: ...


@runtime_checkable
class SandboxProvider(Protocol):
    """Where sandboxes run. Register one with `swe_gym.sandbox.register_provider` or
    the ``swe_gym.providers`` entry-point group (value: a zero-argument factory or
    a class taking keyword options)."""

    name: str

    async def create(self, spec: SandboxSpec) -> SandboxBackend: ...

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
class ImageInspector(Protocol):
    """Optional provider capability: what the provider knows of an image (e.g. docker; `ImageCommitter` has it).

    Providers without images of their own (``local``) do not have it; validation records no digest then.
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

    async def image_info(self, image: str) -> ImageInfo | None:
        """``image`` as this provider would start it, or None when it does not have it."""
        ...

    async def commit(self, sandbox: SandboxBackend, image: str, labels: dict[str, str]) -> ImageInfo:
        """Save ``sandbox`` (one of this provider's) as ``image`` (``name:tag``), replacing an older one."""
        ...
