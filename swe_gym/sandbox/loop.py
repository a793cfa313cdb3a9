"""One background event loop per process, so sync code can drive the async core."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Coroutine
from typing import Any, TypeVar

T = TypeVar("T")

_lock = threading.Lock()
_loop: asyncio.AbstractEventLoop | None = None


def background_loop() -> asyncio.AbstractEventLoop:
    global _loop
    with _lock:
        if _loop is None or _loop.is_closed():
            _loop = asyncio.new_event_loop()
            threading.Thread(target=_loop.run_forever, name="swe_gym-loop", daemon=True).start()
        return _loop


#: After Ctrl-C, how long to let the cancelled coroutine clean up (close half-made sandboxes).
CANCEL_GRACE_S = 30.0


def run_sync(coro: Coroutine[Any, Any, T]) -> T:
    """Run ``coro`` on the background loop and wait; Ctrl-C cancels it there and waits for its cleanup."""
    finished = threading.Event()

    async def tracked() -> T:
        try:
            return await coro
        finally:
            finished.set()

    future = asyncio.run_coroutine_threadsafe(tracked(), background_loop())
    try:
        return future.result()
    except BaseException:
        future.cancel()
        finished.wait(CANCEL_GRACE_S)
        raise
