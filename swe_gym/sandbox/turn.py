"""A lock that swe_gym's event loop and the caller's own thread share (one sandbox's channel: one call at a time).

Calls from the loop queue for it in order (an `asyncio.Lock`); a call made right in the caller's thread (a
Gymnasium step, `RunnerSandbox.exec_here`) only takes a free turn (`try_take`) and otherwise goes through the loop.
So no thread blocks the loop, none waits on the loop while holding the turn, and no worker thread is tied up
waiting (the loop's head waiter polls, with back-off, in the rare case that the caller's thread holds it).
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import AsyncIterator

#: The longest pause between two looks at a turn that the caller's thread holds.
POLL_MAX_S = 0.01


class Turn:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._queue = asyncio.Lock()

    def locked(self) -> bool:
        return self._lock.locked()

    def try_take(self) -> bool:
        return self._lock.acquire(blocking=False)

    def give(self) -> None:
        self._lock.release()

    @contextlib.asynccontextmanager
    async def held(self) -> AsyncIterator[None]:
        """The turn, for a call from the loop."""
        async with self._queue:
            pause = 0.0005
            while not self._lock.acquire(blocking=False):  # the caller's thread has it, for one call
                await asyncio.sleep(pause)
                pause = min(pause * 2, POLL_MAX_S)
            try:
                yield
            finally:
                self._lock.release()
