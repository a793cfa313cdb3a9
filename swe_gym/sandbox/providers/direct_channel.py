"""A container's runner channel as a Unix socket of this host: frames skip the engine's stream copying.

On a local engine, the attach stream goes through the daemon (and its log driver) twice per message, which is
most of a step's transport. Instead the host listens on a socket in a directory of its own
(`DirectChannel.open`), bind-mounted read-only into the container at `MOUNT`; the runner, started with
``--connect MOUNT/s``, connects once at start, before any command runs. The host accepts that one connection,
then removes the socket and its directory (the container's view of it is detached with it), so nothing else in
the sandbox can connect later; a connection from any other process of this host (checked by the peer's pid) is
turned away. The frames are authenticated as on any channel; attach stays for the runner's
stderr and the container's life (``stdin_once``). A runner that cannot connect (an engine that does not share
this host's files) exits at once, and `accept` says so: the provider then goes back to the attach stream.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import socket
import struct
import tempfile
import time
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path

from swe_gym.errors import SandboxError

#: Where the container sees the directory; the runner connects to ``MOUNT/s``.
MOUNT = "/.swe_gym_channel"
#: The host's directories, one per container while it starts (left only by a process killed meanwhile: `sweep`).
ROOT = Path(tempfile.gettempdir()) / "swe_gym-channels"
STALE_S = 3600.0


class DirectChannelRefusedError(SandboxError):
    """The runner ended before it connected to the host's socket."""


class DirectChannel:
    """The listening socket for one container, and its directory on this host."""

    def __init__(self, directory: Path, listener: socket.socket) -> None:
        self.directory = directory
        self.listener = listener

    @classmethod
    def open(cls) -> DirectChannel:
        directory = ROOT / uuid.uuid4().hex[:16]
        directory.mkdir(parents=True, mode=0o755)
        directory.chmod(0o755)  # the container's user (any uid) must reach the socket
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            listener.bind(str(directory / "s"))
            os.chmod(directory / "s", 0o777)
            listener.listen(1)
            listener.setblocking(False)
        except BaseException:
            listener.close()
            shutil.rmtree(directory, ignore_errors=True)
            raise
        return cls(directory, listener)

    @property
    def bind(self) -> dict[str, dict[str, str]]:
        """The host config ``binds`` entry."""
        return {str(self.directory): {"bind": MOUNT, "mode": "ro"}}

    async def accept(
        self, runner_pid: Callable[[], Awaitable[int]], exited: asyncio.Future[object], timeout: float
    ) -> socket.socket | None:
        """The runner's connection; None when the container's runner ended first (it could not connect).

        Only a connection from the runner's own process counts (its pid, asked of the kernel, is the one
        ``runner_pid`` gives: the container's main process); any other process of this host that connects first
        is turned away, so none can pose as the runner and learn the channel's key."""
        try:
            async with asyncio.timeout(timeout):
                while True:
                    connection = await self._next(exited)
                    if connection is None:
                        return None
                    if _peer_pid(connection) == await runner_pid():
                        return connection
                    connection.close()
        finally:
            self.close()

    async def _next(self, exited: asyncio.Future[object]) -> socket.socket | None:
        loop = asyncio.get_running_loop()
        accepting = asyncio.ensure_future(loop.sock_accept(self.listener))
        try:
            await asyncio.wait({accepting, exited}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            if not accepting.done():
                accepting.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await accepting
        if accepting.cancelled() or accepting.exception() is not None:
            return None
        connection, _ = accepting.result()
        return connection

    def close(self) -> None:
        """No more connections: the socket and its directory go (idempotent)."""
        self.listener.close()
        shutil.rmtree(self.directory, ignore_errors=True)


def _peer_pid(connection: socket.socket) -> int:
    """The pid (in our PID namespace) of the process at the other end of a Unix socket."""
    pid, _uid, _gid = struct.unpack("3i", connection.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, 12))
    return pid


def sweep() -> None:
    """Remove directories a killed process left behind (older than `STALE_S`; a live start takes seconds)."""
    for directory in ROOT.iterdir() if ROOT.is_dir() else []:
        with contextlib.suppress(OSError):
            if time.time() - directory.stat().st_mtime > STALE_S:
                shutil.rmtree(directory, ignore_errors=True)
