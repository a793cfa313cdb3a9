"""The ``swe-gym`` console script, run as a user runs it (a subprocess)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from swe_gym.sandbox import DEFAULT_RUN_ID
from swe_gym.tasks import load_tasks
from swe_gym.wrappers import read_trajectories
from tests.conftest import make_sandbox, provider_setup

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
    result = swe_gym("cleanup", "--provider", "docker", "--run-id", DEFAULT_RUN_ID)
    assert result.returncode == 0, result.stderr
    assert f"docker: removed 1 ({container})" in result.stdout
    box.close()
