"""Host side of the runner protocol: framed request/reply over a byte stream."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from typing import Any, Protocol

from swe_gym.errors import SandboxDiedError, SandboxError

#: How long past a command's own timeout the host waits before calling the sandbox dead.
REPLY_GRACE_S = 10.0


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
        if not reply.get("ok"):
            raise SandboxError(f"sandbox refused {header.get('op')!r}: {reply.get('error')}")
        return reply, data
