"""Every bundled task: the gold patch resolves it, an empty patch does not, on every real provider."""

from __future__ import annotations

import pytest

from swe_gym.grading import grade
from swe_gym.sandbox import SandboxSpec
from swe_gym.tasks import load_tasks
from tests.conftest import ISOLATED, provider_setup

TASKS = load_tasks("bundled")


def test_there_are_enough_bundled_tasks() -> None:
    assert len(TASKS) >= 8
    for task in TASKS:
        assert task.fail_to_pass and task.pass_to_pass and task.patch and task.test_patch
        assert task.repo_source is not None and (task.repo_source / ".gitignore").is_file()


@pytest.mark.parametrize("provider", ISOLATED)
@pytest.mark.parametrize("task", TASKS, ids=lambda t: t.instance_id)
def test_gold_resolves_and_empty_does_not(task, provider: str) -> None:
    config, image = provider_setup(provider)
    spec = SandboxSpec(image=image)
    gold = grade(task, task.patch, provider=config, spec=spec)
    assert not gold.masked, gold.masked_reason
    assert gold.resolved and gold.reward() == 1.0, gold.log_tail
    assert gold.apply_method == "git apply"
    assert sorted(gold.fail_to_pass.success) == sorted(task.fail_to_pass)
    empty = grade(task, "", provider=config, spec=spec)
    assert not empty.masked, empty.masked_reason
    assert empty.empty_patch and not empty.resolved and empty.reward() == 0.0
    assert empty.fail_to_pass.failure and sorted(empty.pass_to_pass.success) == sorted(task.pass_to_pass)
