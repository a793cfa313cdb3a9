"""A grading cancelled at any point (Ctrl-C, a trainer's timeout) closes every sandbox of its passes and leaves
no task behind: none pending, none with an exception nobody read."""

from __future__ import annotations

import asyncio
import contextlib
import gc
from typing import Any

import pytest

from swe_gym.grading import grade_async
from swe_gym.sandbox.loop import run_sync
from swe_gym.tasks import load_tasks
from tests.conftest import leftover_sandboxes, provider_setup

TASK = load_tasks("bundled")[0]


async def _cancelled_grading(delay_s: float, again_after_s: float | None) -> list[str]:
    """Cancel a two-pass grading of the gold patch after ``delay_s`` (and once more during its cleanup);
    return what the loop reported meanwhile (unretrieved exceptions, tasks destroyed pending)."""
    loop = asyncio.get_running_loop()
    reported: list[str] = []
    previous = loop.get_exception_handler()
    loop.set_exception_handler(lambda _loop, context: reported.append(str(context.get("message"))))
    try:
        config, _ = provider_setup("local")
        job = asyncio.ensure_future(grade_async(TASK, TASK.patch, provider=config))
        await asyncio.sleep(delay_s)
        job.cancel()
        if again_after_s is not None:
            await asyncio.sleep(again_after_s)
            job.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await job
        others = [t for t in asyncio.all_tasks() if t is not asyncio.current_task() and "_eval" in repr(t)]
        gc.collect()
        await asyncio.sleep(0)
        return reported + [f"pending after the grading returned: {t!r}" for t in others]
    finally:
        loop.set_exception_handler(previous)


@pytest.mark.parametrize("delay_s", [0.0, 0.05, 0.2, 0.5, 1.0, 2.0])
@pytest.mark.parametrize("again_after_s", [None, 0.01], ids=["once", "twice"])
def test_a_grading_cancelled_anywhere_closes_its_sandboxes(delay_s: float, again_after_s: Any) -> None:
    assert run_sync(_cancelled_grading(delay_s, again_after_s)) == []
    assert not any(leftover_sandboxes().values())
