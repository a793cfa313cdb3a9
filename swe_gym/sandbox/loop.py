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


def run_sync(coro: Coroutine[Any, Any, T]) -> T:
    """Run ``coro`` on the background loop and wait; Ctrl-C cancels it there too."""
    future = asyncio.run_coroutine_threadsafe(coro, background_loop())
    try:
        return future.result()
    except BaseException:
        future.cancel()
        raise
