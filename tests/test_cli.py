"""The ``swe-gym`` console script, run as a user runs it (a subprocess)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from swe_gym.sandbox import current_run_id
from swe_gym.tasks import load_tasks
from swe_gym.wrappers import read_trajectories
from tests.conftest import ISOLATED, leftover_sandboxes, make_sandbox, provider_setup

TASK_IDS = [t.instance_id for t in load_tasks("bundled")[:2]]


def swe_gym(*args: str, run_id: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, **({"SWE_GYM_RUN_ID": run_id} if run_id else {})}
    command = [sys.executable, "-m", "swe_gym.cli.main", *args]
    return subprocess.run(command, capture_output=True, text=True, env=env, timeout=600)


def test_oracle_rollout_resolves_and_writes_trajectories(tmp_path: Path) -> None:
    provider_setup("local")
    out = tmp_path / "traj.jsonl"
    result = swe_gym("rollout", "--policy", "oracle", "--out", str(out), "--instance-id", *TASK_IDS)
    assert result.returncode == 0, result.stderr
    assert "resolved      2 (100.0%)" in result.stdout
    records = read_trajectories(out)
    assert [r["instance_id"] for r in records] == TASK_IDS
    assert all(r["reward"] == 1.0 and r["resolved"] and r["patch"].startswith("diff --git") for r in records)


def test_random_rollout_runs_to_the_step_limit(tmp_path: Path) -> None:
    provider_setup("local")
    out = tmp_path / "random.jsonl"
    result = swe_gym("rollout", "--policy", "random", "--episodes", "1", "--max-steps", "3", "--out", str(out))
    assert result.returncode == 0, result.stderr
    (record,) = read_trajectories(out)
    assert 1 <= len(record["actions"]) <= 3 and (record["terminated"] or record["truncated"])


def test_errors_are_one_line_without_traceback() -> None:
    result = swe_gym("rollout", "--provider", "nope")
    assert result.returncode == 2
    assert result.stderr.strip().splitlines()[-1].startswith("error: unknown sandbox provider 'nope'")
    assert "Traceback" not in result.stderr
    result = swe_gym("cleanup")
    assert result.returncode == 2 and "--run-id ID, --older-than AGE, or --all" in result.stderr


def test_cleanup_by_run_id_removes_leftovers() -> None:
    provider_setup("docker")
    box = make_sandbox("docker")
    container = box.aio.backend.container_id[:12]
    result = swe_gym("cleanup", "--provider", "docker", "--run-id", current_run_id())
    assert result.returncode == 0, result.stderr
    assert f"docker: removed 1 ({container})" in result.stdout
    box.close()


@pytest.mark.parametrize("provider", ISOLATED)
def test_cleanup_removes_what_a_killed_owner_left(provider: str) -> None:
    """An owner killed with SIGKILL runs no exit hook; `swe-gym cleanup --run-id` finds its sandbox by label."""
    config, image = provider_setup(provider)
    kind, run_id = config["type"], f"crash{uuid.uuid4().hex[:8]}"
    script = (
        "import json, os, sys; from swe_gym.sandbox import Sandbox, SandboxSpec;"
        f"box = Sandbox.create(SandboxSpec(image={image!r}), json.loads(sys.argv[1]));"
        "print(box.aio.backend.id, flush=True); os.kill(os.getpid(), 9)"
    )
    env = {**os.environ, "SWE_GYM_RUN_ID": run_id}
    owner = subprocess.run(
        [sys.executable, "-c", script, json.dumps(config)], capture_output=True, text=True, env=env, timeout=300
    )
    assert owner.returncode == -9, owner.stderr
    created = owner.stdout.strip()
    if provider != "docker":  # a docker container removes itself when its owner's socket closes
        assert created in leftover_sandboxes(run_id)[kind]
    result = swe_gym("cleanup", "--provider", kind, "--run-id", run_id)
    assert result.returncode == 0, result.stderr
    deadline = time.monotonic() + 30
    while leftover_sandboxes(run_id)[kind] and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not leftover_sandboxes(run_id)[kind]
