"""The byte streams a `RunnerChannel` runs over: asyncio's streams (`StreamLink`), or a pair of file descriptors
that the loop and, between two of its calls, the caller's own thread can both use (`FdLink`).

`FdLink` is what lets a Gymnasium step skip swe_gym's event loop: the step's request and reply go over the
runner's pipe (or socket) right in the caller's thread (`RunnerChannel.call_here`), with no hop onto the loop's
thread and back (on a small machine, a third of a step's cost).
"""

from __future__ import annotations

import asyncio
import os
import select
import threading
import time
from collections.abc import Callable
from typing import Protocol

from swe_gym.sandbox.runner import BadFrame

#: A reply's header line may not be longer (a longer one was never the runner's).
LINE_LIMIT = 1 << 20
_CHUNK = 1 << 20


class Link(Protocol):
    """One request out, one reply in; ``here``: the ``*_now`` forms work too (blocking, in any thread)."""

    here: bool

    def at_eof(self) -> bool: ...

    async def send(self, data: bytes) -> None: ...

    async def line(self) -> bytes:
        """The next line, without its newline (`BadFrame` past `LINE_LIMIT`; `EOFError` at the end)."""
        ...

    async def exactly(self, size: int) -> bytes: ...


class StreamLink:
    """asyncio's reader and writer (Docker's attach stream): the loop only."""

    here = False

    def __init__(self, reader: asyncio.StreamReader, sink: _Sink) -> None:
        self._reader, self._sink = reader, sink

    def at_eof(self) -> bool:
        return self._reader.at_eof()

    async def send(self, data: bytes) -> None:
        self._sink.write(data)
        await self._sink.drain()

    async def line(self) -> bytes:
        try:
            return (await self._reader.readuntil(b"\n"))[:-1]
        except asyncio.LimitOverrunError as exc:
            raise BadFrame(f"a reply line longer than {LINE_LIMIT} bytes ({exc})") from exc
        except asyncio.IncompleteReadError as exc:
            raise EOFError("the runner's stream ended") from exc

    async def exactly(self, size: int) -> bytes:
        try:
            return await self._reader.readexactly(size)
        except asyncio.IncompleteReadError as exc:
            raise EOFError("the runner's stream ended mid-reply") from exc


class _Sink(Protocol):
    def write(self, data: bytes) -> None: ...

    async def drain(self) -> None: ...


class FdLink:
    """Non-blocking descriptors read into one buffer: awaited on the loop (a reader registered only while a call
    waits), or polled in the caller's thread. The channel's turn keeps the two from ever overlapping. ``close``
    while a call is under way waits for that call to end (its runner's end going away ends it), so a descriptor is
    never closed, and its number reused, under a thread still polling it."""

    here = True

    def __init__(self, rfd: int, wfd: int, close: Callable[[], None]) -> None:
        """``close`` closes both descriptors (they may be one socket's)."""
        os.set_blocking(rfd, False)
        os.set_blocking(wfd, False)
        self._rfd, self._wfd, self._close = rfd, wfd, close
        self._buffer = bytearray()
        self._eof = False
        self._state = threading.Lock()
        self._users = 0
        self._closing = False

    def at_eof(self) -> bool:
        return self._eof and not self._buffer

    def close(self) -> None:
        with self._state:
            self._closing = True
            if self._users:
                return
        self._close()

    def _enter(self) -> None:
        with self._state:
            if self._closing:
                raise ConnectionResetError("the sandbox's channel is closed")
            self._users += 1

    def _leave(self) -> None:
        with self._state:
            self._users -= 1
            last = self._closing and not self._users
        if last:
            self._close()

    # -- the loop's side ---------------------------------------------------------------------------------------

    async def _ready(self, fd: int, writing: bool) -> None:
        loop = asyncio.get_running_loop()
        ready = loop.create_future()

        def wake() -> None:
            if not ready.done():
                ready.set_result(None)

        (loop.add_writer if writing else loop.add_reader)(fd, wake)
        try:
            await ready
        finally:
            (loop.remove_writer if writing else loop.remove_reader)(fd)

    async def send(self, data: bytes) -> None:
        self._enter()
        try:
            view = memoryview(data)
            while view:
                view = view[self._write(view) :]
                if view:
                    await self._ready(self._wfd, writing=True)
        finally:
            self._leave()

    async def line(self) -> bytes:
        self._enter()
        try:
            while (found := self._take_line()) is None:
                if not self._fill():
                    await self._ready(self._rfd, writing=False)
            return found
        finally:
            self._leave()

    async def exactly(self, size: int) -> bytes:
        self._enter()
        try:
            while len(self._buffer) < size:
                if not self._fill(size - len(self._buffer)):
                    await self._ready(self._rfd, writing=False)
            return self._take(size)
        finally:
            self._leave()

    # -- the caller's thread -------------------------------------------------------------------------------------

    def _wait_now(self, fd: int, writing: bool, deadline: float) -> None:
        left = deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError
        poller = select.poll()
        poller.register(fd, select.POLLOUT if writing else select.POLLIN)
        poller.poll(max(1, int(left * 1000)))

    def send_now(self, data: bytes, deadline: float) -> None:
        self._enter()
        try:
            view = memoryview(data)
            while view:
                view = view[self._write(view) :]
                if view:
                    self._wait_now(self._wfd, True, deadline)
        finally:
            self._leave()

    def line_now(self, deadline: float) -> bytes:
        self._enter()
        try:
            while (found := self._take_line()) is None:
                if not self._fill():
                    self._wait_now(self._rfd, False, deadline)
            return found
        finally:
            self._leave()

    def exactly_now(self, size: int, deadline: float) -> bytes:
        self._enter()
        try:
            while len(self._buffer) < size:
                if not self._fill(size - len(self._buffer)):
                    self._wait_now(self._rfd, False, deadline)
            return self._take(size)
        finally:
            self._leave()

    # -- the buffer ----------------------------------------------------------------------------------------------

    def _write(self, view: memoryview) -> int:
        try:
            return os.write(self._wfd, view)
        except BlockingIOError:
            return 0

    def _fill(self, want: int = _CHUNK) -> bool:
        """Read what is there (False: nothing yet); the end of the stream is `EOFError`."""
        if self._eof:
            raise EOFError("the runner's stream ended")
        try:
            chunk = os.read(self._rfd, max(_CHUNK, min(want, 16 * _CHUNK)))
        except BlockingIOError:
            return False
        if not chunk:
            self._eof = True
            raise EOFError("the runner's stream ended")
        self._buffer += chunk
        return True

    def _take_line(self) -> bytes | None:
        end = self._buffer.find(b"\n")
        if end < 0:
            if len(self._buffer) > LINE_LIMIT:
                raise BadFrame(f"a reply line longer than {LINE_LIMIT} bytes")
            return None
        line = bytes(self._buffer[:end])
        del self._buffer[: end + 1]
        return line

    def _take(self, size: int) -> bytes:
        data = bytes(self._buffer[:size])
        del self._buffer[:size]
        return data
