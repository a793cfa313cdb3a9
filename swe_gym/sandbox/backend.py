"""`RunnerSandbox`: the provider-neutral half of a live sandbox, driven through the runner.

A provider only has to start the runner inside its sandbox, hand over the byte
stream, and know how to tear the sandbox down; exec and file semantics are here,
once, for every provider.
"""

from __future__ import annotations

import contextlib
import io
import logging
import tarfile
import time
import weakref
from abc import ABC, abstractmethod
from collections.abc import AsyncIterator, Awaitable
from importlib.resources import files
from pathlib import Path
from typing import Literal

from swe_gym.errors import ChannelTamperedError, SandboxDiedError, SandboxError
from swe_gym.sandbox.channel import REPLY_GRACE_S, Channel, RunnerChannel
from swe_gym.sandbox.delta import Delta
from swe_gym.sandbox.loop import to_the_end
from swe_gym.sandbox.spec import ExecResult, SandboxSpec, SandboxStatus
from swe_gym.sandbox.turn import Turn
from swe_gym.shown_text import to_text

log = logging.getLogger(__name__)

READY_TIMEOUT_S = 30.0

#: The runner's source travels in this variable (popped at start), keeping argv short.
RUNNER_ENV = "SWE_GYM_RUNNER"
RUNNER_BOOTSTRAP = f"import os; exec(os.environ.pop({RUNNER_ENV!r}))"


def runner_source() -> str:
    return files("swe_gym.sandbox").joinpath("runner.py").read_text()


def decode_output(data: bytes, head_size: int, dropped: int) -> str:
    """Merge head and tail into text (`swe_gym.shown_text`: bytes that are not UTF-8 are marked, not lost)."""
    head, tail = to_text(data[:head_size]), to_text(data[head_size:])
    if not dropped:
        return head + tail
    return f"{head}\n[... {dropped} bytes of output dropped ...]\n{tail}"


def tar_directory(source: Path) -> bytes:
    """An in-memory tar of ``source``'s contents (paths relative to it)."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as archive:
        for path in sorted(source.iterdir()):
            archive.add(path, arcname=path.name)
    return buffer.getvalue()


#: Sandboxes booted and not yet closed, so process exit can close them (see `loop.py`).
LIVE: weakref.WeakSet[RunnerSandbox] = weakref.WeakSet()


def encode_text(text: str) -> bytes:
    """UTF-8 bytes of any ``str``: surrogate escapes (bytes decoded with ``surrogateescape``) go back to
    their bytes; other lone surrogates, which no UTF-8 text can hold, are kept as their 3-byte forms."""
    try:
        return text.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:
        return text.encode("utf-8", "surrogatepass")


class RunnerSandbox(ABC):
    """A live sandbox whose commands go through `swe_gym.sandbox.runner`: the base a provider extends.

    A provider's sandbox class subclasses it (or `ProcessSandbox`, for a runner that is a child
    process) and its provider's ``create`` does three things, in order:

    1. ``attach(channel)``: the `Channel` to the runner (its reader and writer), once it exists;
    2. ``await boot(start)``: ``start`` is the provider's coroutine that launches the runner (e.g.
       `ProcessSandbox.spawn_runner`); boot runs it, waits until the runner answers, writes the spec's
       files, and closes the half-made sandbox on any failure;
    3. implements ``_terminate`` (remove the sandbox, idempotent); everything else (exec, files,
       status, close) is done here.

    Forking is the provider's (`swe_gym.sandbox.protocol.SandboxForker`): its ``fork(sandbox, spec)``
    copies the source's writable file system inside ``async with sandbox.quiet():`` (no command of the
    source runs meanwhile) and then starts the copy as a new sandbox of its class, through steps 1-3.
    """

    provider_name: str = "runner"
    #: Whether nothing the sandbox runs can end its runner (it is PID 1 of the sandbox's PID namespace, which ignores
    #: signals from inside), so a sandbox found dead between commands was ended from outside.
    runner_protected: bool = False
    #: Whether this sandbox's persistent shell should be running (its last command left it so); a fork copies
    #: it, so the fork's first persistent command says the shell was not carried over.
    shell_live: bool = False

    def __init__(self, sandbox_id: str, spec: SandboxSpec, workdir: str) -> None:
        self.id = sandbox_id
        self.spec = spec
        self.workdir = workdir
        self._channel: Channel | None = None
        self._closed = False
        self._known_dead = False
        self._busy = Turn()  # held by each call, and by `quiet` while a fork copies the file system
        #: Whether anything but a ping ran (a warm pool's sandbox that never did holds its image's files as started).
        self.used = False

    @property
    def network_isolated(self) -> bool:
        """Whether commands here can reach no network (neither the internet nor other sandboxes)."""
        return not self.spec.network

    def attach(self, channel: Channel) -> None:
        self._channel = channel

    async def boot(self, start: Awaitable[None]) -> None:
        """Run the provider's ``start``, wait for the runner, write the spec's files.

        Any failure, Ctrl-C included, closes the half-made sandbox before re-raising.
        """
        LIVE.add(self)
        try:
            await start
            await self._call({"op": "ping"}, timeout=READY_TIMEOUT_S)
            for path, content in self.spec.files.items():
                await self.write_file(path, content)
        except BaseException:
            await self.close()
            raise

    @contextlib.asynccontextmanager
    async def quiet(self) -> AsyncIterator[None]:
        """Waits for the command now running (if any) to end; no other starts until the block ends.

        For a fork's copy of the file system: it sees the sandbox between two commands. Calling the
        sandbox itself inside the block would wait forever.
        """
        async with self._busy.held():
            if self._closed:
                raise SandboxError(f"sandbox {self.id} is closed")
            yield

    async def _call(self, header: dict, payload: bytes = b"", *, timeout: float | None):
        channel = self._open_channel(header)
        try:
            async with self._busy.held():
                reply = await channel.call(header, payload, timeout=timeout)
        except SandboxDiedError as exc:
            self._died(exc)
            raise
        self._known_dead = False
        return reply

    def _call_here(self, header: dict, payload: bytes, *, timeout: float) -> tuple[dict, bytes] | None:
        """`_call` in the calling thread (see `exec_here`); None, with nothing sent, where it cannot be."""
        channel = self._open_channel(header)
        if not isinstance(channel, RunnerChannel) or not channel.here or not self._busy.try_take():
            return None
        try:
            reply = channel.call_here(header, payload, timeout=timeout)
        except SandboxDiedError as exc:
            self._died(exc)
            raise
        finally:
            self._busy.give()
        if reply is not None:
            self._known_dead = False
        return reply

    def _open_channel(self, header: dict) -> Channel:
        if self._closed:
            raise SandboxError(f"sandbox {self.id} is closed")
        assert self._channel is not None, "provider forgot to attach the runner channel"
        self.used = self.used or header["op"] != "ping"
        return self._channel

    def _died(self, exc: SandboxDiedError) -> None:
        if self._known_dead and not isinstance(exc, ChannelTamperedError):
            exc.during_call = False  # an earlier call (or status ping) had found it dead already
        self._known_dead = True

    async def exec(
        self,
        command: str | bytes,
        *,
        timeout: float | None = None,
        cwd: str | None = None,
        env: dict[str, str] | None = None,
        max_output_bytes: int | None = None,
        shell: Literal["stateless", "persistent"] = "stateless",
        spare_shell: bool = False,
        track_orphans: bool = False,
    ) -> ExecResult:
        """Run ``command``: by default in a fresh ``bash -c`` (in ``cwd``, default the workdir, with ``env`` added);
        ``shell="persistent"``: in the sandbox's persistent shell, where ``cd`` and ``export`` carry over (see the
        runner's `PersistentShell`; it takes no ``cwd`` or ``env``). Same timeout, output and stdin rules either way.
        ``spare_shell`` (the agent's commands only, `AsyncSandbox.exec_action`): a stateless command may run in the
        bash the runner started ahead after the last such one (the runner's `SpareShell`), as ``bash -c`` would.
        ``track_orphans`` (stateless only): the reply counts the processes of the command's tree that outlived their
        parent (re-parented to the runner, which is PID 1 or a subreaper) and every one still alive is killed before
        it (`ExecResult.orphans`): a verifier's reward can then not be rewritten by something the tests left."""
        header, payload, timeout = self._exec_request(
            command, timeout, cwd, env, max_output_bytes, shell, spare_shell, track_orphans
        )
        started = time.perf_counter()
        reply, data = await self._call(header, payload, timeout=timeout + REPLY_GRACE_S)
        return self._exec_result(header, reply, data, started)

    def exec_here(
        self,
        command: str | bytes,
        *,
        timeout: float | None = None,
        max_output_bytes: int | None = None,
        shell: Literal["stateless", "persistent"] = "stateless",
        spare_shell: bool = False,
    ) -> ExecResult | None:
        """`exec`, blocking, in the calling thread: over a channel that can (`FdLink`: local, apptainer, docker's
        direct channel) and when no other call holds this sandbox, the request and reply skip swe_gym's loop; else
        None, and nothing ran (use `exec`). Never from swe_gym's own loop."""
        header, payload, timeout = self._exec_request(
            command, timeout, None, None, max_output_bytes, shell, spare_shell, False
        )
        started = time.perf_counter()
        answer = self._call_here(header, payload, timeout=timeout + REPLY_GRACE_S)
        return None if answer is None else self._exec_result(header, *answer, started)

    def _exec_request(
        self,
        command: str | bytes,
        timeout: float | None,
        cwd: str | None,
        env: dict[str, str] | None,
        max_output_bytes: int | None,
        shell: str,
        spare_shell: bool,
        track_orphans: bool,
    ) -> tuple[dict, bytes, float]:
        """The runner request of `exec`: header, payload and the command's timeout."""
        timeout = self.spec.exec_timeout_s if timeout is None else timeout
        payload = command if isinstance(command, bytes) else encode_text(command)
        limit = max_output_bytes or self.spec.max_output_bytes
        if shell == "persistent":
            if cwd is not None or env:
                raise ValueError("cwd and env are for stateless commands; in the persistent shell use cd and export")
            header = {"op": "shell", "timeout": timeout, "cwd": self.workdir, "limit": limit, "expect": self.shell_live}
        elif shell == "stateless":
            header = {"op": "exec", "timeout": timeout, "cwd": cwd or self.workdir, "env": env or {}, "limit": limit}
            if spare_shell:
                header["spare"] = True
            if track_orphans:
                header["orphans"] = True
        else:
            raise ValueError(f"shell must be 'stateless' or 'persistent', got {shell!r}")
        return header, payload, timeout

    def _exec_result(self, header: dict, reply: dict, data: bytes, started: float) -> ExecResult:
        if header["op"] == "shell":
            self.shell_live = bool(reply.get("shell_alive"))
        dropped = int(reply["dropped"])
        return ExecResult(
            output=decode_output(data, int(reply["head_size"]), dropped),
            exit_code=int(reply["exit_code"]),
            timed_out=bool(reply["timed_out"]),
            output_truncated=dropped > 0,
            dropped_bytes=dropped,
            duration_s=time.perf_counter() - started,
            orphans=reply.get("orphans"),
        )

    async def write_file(self, path: str, content: bytes | str, mode: int = 0o644) -> None:
        data = encode_text(content) if isinstance(content, str) else content
        await self._call({"op": "write", "path": self._abs(path), "mode": mode}, data, timeout=120)

    async def read_file(self, path: str, max_bytes: int = 64 << 20) -> bytes:
        _, data = await self._call({"op": "read", "path": self._abs(path), "max": max_bytes}, timeout=120)
        return data

    async def upload_tar(self, archive: bytes, dest: str) -> None:
        await self._call({"op": "untar", "path": self._abs(dest)}, archive, timeout=600)

    async def apply_delta(self, delta: Delta, root: str = "/") -> None:
        """A fork's changes into this sandbox (`swe_gym.sandbox.delta`): its deletions, then the tar's entries
        replace what is at their paths, owners and modes kept, then the image's own files get the source's
        metadata (the runner's ``delta``)."""
        header = {"op": "delta", "path": root, "remove": delta.remove, "clear": delta.clear, "touch": delta.touch}
        await self._call(header, delta.archive, timeout=600)

    async def status(self) -> SandboxStatus:
        if self._closed:
            return SandboxStatus.CLOSED
        try:
            await self._call({"op": "ping"}, timeout=10)
        except SandboxDiedError:
            return SandboxStatus.DEAD
        return SandboxStatus.RUNNING

    async def close(self) -> None:
        """Idempotent; removes the sandbox even when the runner is already gone."""
        if self._closed:
            return
        self._closed = True
        LIVE.discard(self)
        await to_the_end(self._terminate())

    def _abs(self, path: str) -> str:
        return path if path.startswith("/") else f"{self.workdir.rstrip('/')}/{path}"

    @abstractmethod
    async def _terminate(self) -> None:
        """Stop the runner and free every resource of this sandbox."""
