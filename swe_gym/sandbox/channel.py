"""Host side of the runner protocol: framed request/reply, over a byte stream or one command per call."""

from __future__ import annotations

import asyncio
import base64
import json
import uuid
from collections.abc import Callable
from typing import Any, Protocol

from swe_gym.errors import SandboxDiedError, SandboxError
from swe_gym.sandbox.runner import ONE_SHOT_BEGIN, ONE_SHOT_END

#: How long past a command's own timeout the host waits before calling the sandbox dead.
REPLY_GRACE_S = 10.0


class Channel(Protocol):
    """How `RunnerSandbox` reaches its runner: one framed request, one framed reply."""

    async def call(
        self, header: dict[str, Any], payload: bytes = b"", *, timeout: float | None = None
    ) -> tuple[dict[str, Any], bytes]: ...


def _checked(header: dict[str, Any], reply: dict[str, Any]) -> None:
    if not reply.get("ok"):
        raise SandboxError(f"sandbox refused {header.get('op')!r}: {reply.get('error')}")


class ByteSink(Protocol):
    def write(self, data: bytes) -> None: ...

    async def drain(self) -> None: ...


class RunnerChannel:
    """One request at a time to the in-sandbox runner; a lost runner is `SandboxDiedError`."""

    def __init__(self, reader: asyncio.StreamReader, sink: ByteSink, describe: Callable[[], str]) -> None:
        self._reader = reader
        self._sink = sink
        self._describe = describe
        self._lock = asyncio.Lock()
        self.dead_reason: str | None = None

    async def call(
        self, header: dict[str, Any], payload: bytes = b"", *, timeout: float | None = None
    ) -> tuple[dict[str, Any], bytes]:
        if self.dead_reason is not None:
            raise SandboxDiedError(self.dead_reason)
        async with self._lock:
            try:
                return await asyncio.wait_for(self._roundtrip(header, payload), timeout)
            except (asyncio.IncompleteReadError, ConnectionError, BrokenPipeError, OSError) as exc:
                self.dead_reason = f"sandbox stopped answering ({exc!r}); {self._describe()}"
            except TimeoutError:
                self.dead_reason = f"sandbox did not answer within {timeout:.1f}s; {self._describe()}"
            raise SandboxDiedError(self.dead_reason)

    async def _roundtrip(self, header: dict[str, Any], payload: bytes) -> tuple[dict[str, Any], bytes]:
        line = json.dumps({**header, "size": len(payload)}).encode() + b"\n"
        self._sink.write(line + payload)
        await self._sink.drain()
        reply = json.loads(await self._reader.readuntil(b"\n"))
        data = await self._reader.readexactly(reply.get("size", 0)) if reply.get("size") else b""
        _checked(header, reply)
        return reply, data


class CommandTransport(Protocol):
    """A sandbox reachable only one command at a time (a remote API): upload a file, run a command."""

    async def put(self, path: str, data: bytes) -> None: ...

    async def run(self, command: str, timeout: float) -> str:
        """The command's stdout; raise `SandboxDiedError` when the sandbox is gone."""
        ...


#: Request frames up to this size travel base64 in the command line; larger ones as an uploaded file.
INLINE_LIMIT = 48 * 1024


class OneShotChannel:
    """The runner protocol over a `CommandTransport`: each call runs the runner once.

    The request frame goes in the command line (small) or an uploaded file (large),
    the runner handles it exactly as the long-lived runner would (same exec
    semantics), and its reply comes back base64-encoded on stdout.
    """

    def __init__(self, transport: CommandTransport, runner_command: str, request_dir: str) -> None:
        self._transport = transport
        self._runner_command = runner_command
        self._request_dir = request_dir

    async def call(
        self, header: dict[str, Any], payload: bytes = b"", *, timeout: float | None = None
    ) -> tuple[dict[str, Any], bytes]:
        frame = json.dumps({**header, "size": len(payload)}).encode() + b"\n" + payload
        if len(frame) <= INLINE_LIMIT:
            request = f"--inline {base64.b64encode(frame).decode()}"
        else:
            path = f"{self._request_dir}/{uuid.uuid4().hex}.req"
            await self._transport.put(path, frame)
            request = f"--request {path}"
        stdout = await self._transport.run(f"{self._runner_command} {request}", timeout or 3600.0)
        begin, end = stdout.find(ONE_SHOT_BEGIN), stdout.find(ONE_SHOT_END)
        if begin < 0 or end < begin:
            raise SandboxError(f"the sandbox's runner gave no reply to {header.get('op')!r}: {stdout[-400:]!r}")
        raw = base64.b64decode(stdout[begin + len(ONE_SHOT_BEGIN) : end])
        line, _, data = raw.partition(b"\n")
        reply = json.loads(line)
        _checked(header, reply)
        return reply, data
