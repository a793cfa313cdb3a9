"""The one naming rule of the grading entry points: ``name_async`` is the coroutine, ``name`` its blocking form."""

from __future__ import annotations

import asyncio
import inspect
import warnings

import pytest

import swe_gym
import swe_gym.grading
from swe_gym.sandbox.loop import run_sync
from swe_gym.tasks import load_tasks
from tests.conftest import provider_setup

TASK = load_tasks("bundled", limit=1)[0]
PAIRS = [("grade", "grade_async"), ("evaluate", "evaluate_async"), ("validate", "validate_async")]


@pytest.mark.parametrize(("name", "async_name"), PAIRS)
def test_both_forms_are_exported_from_swe_gym_and_swe_gym_grading(name: str, async_name: str) -> None:
    for module in (swe_gym, swe_gym.grading):
        assert name in module.__all__ and async_name in module.__all__
    sync, coroutine = getattr(swe_gym, name), getattr(swe_gym, async_name)
    assert sync is getattr(swe_gym.grading, name) and coroutine is getattr(swe_gym.grading, async_name)
    assert inspect.iscoroutinefunction(coroutine) and not inspect.iscoroutinefunction(sync)
    assert sync.__name__ == name and inspect.signature(sync) == inspect.signature(coroutine)


def test_sync_grade_on_the_local_provider_gold_resolves_empty_does_not() -> None:
    config, _ = provider_setup("local")
    gold = swe_gym.grade(TASK, TASK.patch, provider=config)
    assert not gold.masked, gold.masked_reason
    assert gold.resolved and gold.reward() == 1.0, gold.log_tail
    empty = swe_gym.grade(TASK, "", provider=config)
    assert not empty.masked, empty.masked_reason
    assert empty.empty_patch and not empty.resolved and empty.reward() == 0.0


def test_the_sync_forms_refuse_inside_an_event_loop_where_the_coroutine_works() -> None:
    """In a running loop (a notebook, an async trainer) a blocking call would stall it: refused before anything
    starts (no sandbox, no never-awaited coroutine); awaiting the coroutine there grades as usual."""
    config, _ = provider_setup("local")

    async def in_a_users_loop() -> bool:
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # a coroutine made and dropped would warn
            with pytest.raises(RuntimeError, match=r"grade\(\) blocks .* use `await grade_async\(\.\.\.\)` there"):
                swe_gym.grade(TASK, "", provider=config)
            with pytest.raises(RuntimeError, match=r"`await evaluate_async\(\.\.\.\)`"):
                swe_gym.evaluate([TASK], [], run_id="refused")
            with pytest.raises(RuntimeError, match=r"`await validate_async\(\.\.\.\)`"):
                swe_gym.validate([TASK], k=1)
        report = await swe_gym.grade_async(TASK, "", provider=config)
        return report.resolved or report.masked

    assert asyncio.run(in_a_users_loop()) is False

    async def on_swe_gyms_own_loop() -> None:
        swe_gym.grade(TASK, "", provider=config)

    with pytest.raises(RuntimeError, match="await grade_async"):
        run_sync(on_swe_gyms_own_loop())
