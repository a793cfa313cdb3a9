"""One background event loop per process, so sync code can drive the async core."""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import functools
import logging
import os
import threading
import weakref
from collections.abc import Awaitable, Callable, Coroutine, Sequence
from typing import Any, ParamSpec, TypeVar

T = TypeVar("T")
P = ParamSpec("P")
log = logging.getLogger(__name__)

_lock = threading.Lock()
_loop: asyncio.AbstractEventLoop | None = None


def background_loop() -> asyncio.AbstractEventLoop:
    global _loop
    with _lock:
        if _loop is None or _loop.is_closed():
            _loop = asyncio.new_event_loop()
            threading.Thread(target=_loop.run_forever, name="swe_gym-loop", daemon=True).start()
            # Before the executors behind asyncio.to_thread refuse work at shutdown, which is
            # when plain atexit handlers would run; later registrations run first, so the thread
            # pool's own handler (registered when concurrent.futures.thread is first imported) is
            # registered before ours.
            import concurrent.futures.thread  # noqa: F401

            getattr(threading, "_register_atexit", atexit.register)(_close_live_sandboxes)
        return _loop


_exiting = False


#: Tasks that `guarded` and `to_the_end` await on their owner's behalf: only the owner may cancel them (at exit,
#: cancelling one from outside would lose what it made, a container being created, before its cleanup sees it).
_OWNED: weakref.WeakSet[asyncio.Future[Any]] = weakref.WeakSet()


def _owned(task: asyncio.Future[T]) -> asyncio.Future[T]:
    _OWNED.add(task)
    return task


async def guarded(awaitable: Awaitable[T], cleanup: Callable[[T], Awaitable[None]]) -> T:
    """Await ``awaitable``; if we are cancelled meanwhile, let it finish and ``cleanup`` its result.

    For steps that create something outside the process (a container, a child process):
    cancelling halfway must not orphan it.
    """
    task = _owned(asyncio.ensure_future(awaitable))
    try:
        return await asyncio.shield(task)
    except asyncio.CancelledError:

        async def undo() -> None:
            with contextlib.suppress(Exception):
                await cleanup(await task)

        await to_the_end(undo())  # cancelled again meanwhile: still undone
        raise


async def to_the_end(awaitable: Awaitable[T]) -> T:
    """Await ``awaitable`` to its end however often we are cancelled meanwhile, then pass the cancellation on.

    For teardown (closing a sandbox, waiting for the jobs that own one): a plain `asyncio.shield` returns
    at the cancellation while the teardown goes on unwatched, so the caller reports "closed" too early and
    a process that exits then leaks what was being removed.
    """
    task = _owned(asyncio.ensure_future(awaitable))
    cancelled = False
    while not task.done():
        try:
            await asyncio.wait([task])
        except asyncio.CancelledError:
            cancelled = True
    if cancelled:
        raise asyncio.CancelledError from (None if task.cancelled() else task.exception())
    return task.result()


async def gather_made(
    starts: Sequence[Awaitable[T]], cleanup: Callable[[T], Awaitable[None]]
) -> list[T | BaseException]:
    """Each start's result or error, as ``gather(..., return_exceptions=True)``, except when we are cancelled
    meanwhile: a plain gather then drops the results of the starts already done (a container, a sandbox made)
    with its own; here those still running are cancelled (a half-made thing undoes itself) and those done are
    handed to ``cleanup``, to the end, before the cancellation goes on."""
    tasks = [asyncio.ensure_future(start) for start in starts]
    if not tasks:
        return []
    try:
        await asyncio.wait(tasks)
    except asyncio.CancelledError:
        for task in tasks:
            task.cancel()

        async def undo() -> None:
            await asyncio.wait(tasks)
            made = [task.result() for task in tasks if not task.cancelled() and task.exception() is None]
            await asyncio.gather(*(cleanup(result) for result in made), return_exceptions=True)

        await to_the_end(undo())
        raise
    return [asyncio.CancelledError() if task.cancelled() else task.exception() or task.result() for task in tasks]


def _forget_parent_state() -> None:
    """In a forked child (e.g. a Gymnasium AsyncVectorEnv worker) the parent's loop thread does not
    exist and the parent's sandboxes are not ours to close: start clean."""
    global _loop, _lock
    from swe_gym.sandbox.backend import LIVE
    from swe_gym.sandbox.create import forget_gates

    _loop, _lock = None, threading.Lock()
    LIVE.clear()
    forget_gates()


os.register_at_fork(after_in_child=_forget_parent_state)


async def offload(fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> T:
    """`asyncio.to_thread`, except at interpreter exit, when thread pools refuse work: then inline."""
    if _exiting:
        return fn(*args, **kwargs)
    return await asyncio.to_thread(fn, *args, **kwargs)


def _close_live_sandboxes() -> None:
    """At interpreter exit, stop what the program left running and close what it forgot to (the loop thread and
    the thread pools still run then): work still in flight (a grading sandbox prestarted in the background, a pool
    filling up) is cancelled and waited for, so a sandbox being created is removed by its own cleanup rather than
    left half-made when the thread pools stop, and no task dies later with an error nobody reads."""
    global _exiting
    from swe_gym.sandbox.backend import LIVE

    async def wind_down() -> None:
        pending = [task for task in asyncio.all_tasks() if task is not asyncio.current_task()]
        for task in pending:
            if task not in _OWNED:
                task.cancel()
        for outcome in await asyncio.gather(*pending, return_exceptions=True):
            if isinstance(outcome, Exception) and not isinstance(outcome, asyncio.CancelledError):
                log.debug("a background task failed as the program ended: %r", outcome)
        await asyncio.gather(*(box.close() for box in list(LIVE)), return_exceptions=True)

    _exiting = True
    if _loop is not None and _loop.is_running():
        with contextlib.suppress(TimeoutError):
            asyncio.run_coroutine_threadsafe(wind_down(), _loop).result(timeout=CANCEL_GRACE_S)


#: After Ctrl-C, how long to let the cancelled coroutine clean up (close half-made sandboxes).
CANCEL_GRACE_S = 30.0


def in_loop_thread() -> bool:
    """Whether the caller runs on the background loop itself (where waiting on it would deadlock)."""
    loop = _loop
    if loop is None:
        return False
    try:
        return asyncio.get_running_loop() is loop
    except RuntimeError:
        return False


def run_sync(coro: Coroutine[Any, Any, T]) -> T:
    """Run ``coro`` on the background loop and wait; Ctrl-C cancels it there and waits for its cleanup."""
    if in_loop_thread():
        coro.close()
        raise RuntimeError("swe_gym's sync API was called from its own event loop; use the async API there")
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


def _loop_running_here() -> bool:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


def blocking(coroutine_function: Callable[P, Coroutine[Any, Any, T]]) -> Callable[P, T]:
    """The sync form of a ``*_async`` coroutine function, named without the suffix (``grade`` for ``grade_async``):
    it runs the coroutine on the background loop and waits. Where an event loop runs in the calling thread it
    refuses, before starting anything: waiting there would stall that loop (on the background loop, forever)."""
    async_name = coroutine_function.__name__
    name = async_name.removesuffix("_async")

    @functools.wraps(coroutine_function)
    def call(*args: P.args, **kwargs: P.kwargs) -> T:
        if _loop_running_here():
            raise RuntimeError(
                f"swe_gym's {name}() blocks until it is done, and an event loop is running in this thread: "
                f"use `await {async_name}(...)` there"
            )
        return run_sync(coroutine_function(*args, **kwargs))

    call.__name__, call.__qualname__ = name, coroutine_function.__qualname__.removesuffix("_async")
    call.__doc__ = f"Blocking `{async_name}` (refused inside an event loop).\n\n{coroutine_function.__doc__ or ''}"
    return call
