"""Durable episodes: `SWEEnv.checkpoint` in a process that is then SIGKILLed, `SWEEnv.resume` in another; the
checkpoint's lifecycle (JSON round trip, expiry, removal, ``swe-gym cleanup``), on every isolated provider."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

import swe_gym
from swe_gym import SUBMIT, SWEEnv
from swe_gym.cli.main import main
from swe_gym.envs.checkpoint import EpisodeCheckpoint
from swe_gym.errors import CheckpointExpiredError, CheckpointNotFoundError, ConfigError
from swe_gym.sandbox import Sandbox, SandboxSpec, current_run_id, get_provider
from swe_gym.sandbox.checkpoints import SandboxCheckpoint
from swe_gym.sandbox.loop import run_sync
from swe_gym.shown_text import to_text
from tests.conftest import leftover_sandboxes, provider_setup

#: A bundled task whose gold patch changes two files: one is applied before the crash, the other after.
TASK_ID = "swe-gym__iniconf-1"

#: The process that crashes: it resets, applies the first half, checkpoints, writes the handle, and is SIGKILLed.
CHILD = """
import json, os, sys
from swe_gym import SWEEnv
config, image, task_id, first_half, out = json.loads(sys.argv[1])
env = SWEEnv(provider=config, image=image, max_steps=10)
env.reset(options={"task_id": task_id})
assert env.step(first_half)[4]["exit_code"] == 0
env.step("git status --short")
env.checkpoint(labels={"test": "crash"}, ttl_s=3600).save(out)
os.kill(os.getpid(), 9)
"""


def apply(patch: str) -> str:
    return f"git apply <<'SWE_GYM_GOLD_EOF'\n{patch}\nSWE_GYM_GOLD_EOF"


def halves(patch: str) -> tuple[str, str]:
    files = [part for part in re.split(r"(?m)^(?=diff --git )", patch) if part.strip()]
    assert len(files) == 2, "the task's gold patch should change two files"
    return files[0], files[1]


def test_an_episode_resumes_after_its_process_is_killed(isolated_provider: str, tmp_path: Path) -> None:
    config, image = provider_setup(isolated_provider)
    (task,) = swe_gym.load_tasks("bundled", instance_ids=[TASK_ID])
    first, second = halves(task.patch)
    handle_path, child_run = tmp_path / "handle.json", f"ckpt{uuid.uuid4().hex[:8]}"
    argv = [sys.executable, "-c", CHILD, json.dumps([config, image, TASK_ID, apply(first), str(handle_path)])]
    child = subprocess.run(argv, capture_output=True, text=True, env={**os.environ, "SWE_GYM_RUN_ID": child_run})
    assert child.returncode == -9, child.stderr
    handle = EpisodeCheckpoint.load(handle_path)
    first_file = re.search(r"^diff --git a/(\S+)", first, re.M).group(1)
    assert handle.steps == 2 and first_file in handle.last_observation

    env = SWEEnv.resume(handle_path)
    try:
        obs, info = env.resumed
        assert (obs, info["step"], info["resumed_from"]) == (handle.last_observation, 2, handle.id)
        _, _, _, _, info = env.step(apply(second))
        assert (info["step"], info["exit_code"]) == (3, 0)
        _, reward, terminated, _, info = env.step(SUBMIT)
        assert (reward, terminated, info["resolved"], info["step"]) == (1.0, True, True, 4)
    finally:
        env.close()
    again = SWEEnv.resume(handle.model_dump())  # not consumed: another episode; the handle's dict works as well
    try:
        assert again.step("git diff --name-only")[0].split() == [first_file]
    finally:
        again.close()

    # The crashed process's run: its sandboxes and its checkpoint go with `cleanup --run-id`.
    run_sync(get_provider(config).cleanup(run_id=child_run))
    with pytest.raises(CheckpointNotFoundError, match="gone"):
        Sandbox.restore(handle.sandbox, config)
    deadline = time.monotonic() + 30
    while any(leftover_sandboxes(child_run).values()) and time.monotonic() < deadline:
        time.sleep(0.2)  # a docker container removes itself asynchronously
    assert not any(leftover_sandboxes(child_run).values())


def test_checkpoint_lifecycle(isolated_provider: str, capsys: pytest.CaptureFixture[str]) -> None:
    """JSON round trip; expired and removed checkpoints are clear errors; ``cleanup --expired`` takes expired ones."""
    config, image = provider_setup(isolated_provider)
    box = Sandbox.create(SandboxSpec(image=image), config)
    try:
        box.exec("echo kept > n")
        live = box.checkpoint(labels={"test": "lifecycle"}, ttl_s=3600)
        short = box.checkpoint(ttl_s=0.001)  # expired at once
    finally:
        box.close()
    assert SandboxCheckpoint.model_validate_json(live.model_dump_json()) == live
    assert live.labels["swe_gym.test"] == "lifecycle" and live.labels["swe_gym.run_id"] == current_run_id()
    with Sandbox.restore(live, config) as restored:
        assert to_text(restored.read_file("n")) == "kept\n"
        assert restored.spec.labels["restored_from"] == live.id
    with pytest.raises(CheckpointExpiredError, match="expired"):
        Sandbox.restore(short, config)

    assert main(["cleanup", "--provider", config["type"], "--expired", "--run-id", current_run_id()]) == 0
    assert f"{config['type']}: removed 1" in capsys.readouterr().out
    with pytest.raises(CheckpointNotFoundError, match="gone"):  # removed: its TTL lifted, it is still not there
        Sandbox.restore(short.model_copy(update={"ttl_s": 3600.0}), config)

    Sandbox.remove_checkpoint(live, config)
    Sandbox.remove_checkpoint(live, config)  # idempotent
    with pytest.raises(CheckpointNotFoundError, match="gone"):
        Sandbox.restore(live, config)
    assert not any(v for k, v in leftover_sandboxes().items() if k.endswith("checkpoints"))


def test_resume_of_a_dead_checkpoint_raises(env) -> None:
    """Expired or removed: `SWEEnv.resume` raises (never a masked or zero-reward episode)."""
    env.reset(seed=0)
    expired = env.unwrapped.checkpoint(ttl_s=0.001)
    removed = env.unwrapped.checkpoint()
    removed.remove()
    with pytest.raises(CheckpointExpiredError, match="expired"):
        SWEEnv.resume(expired)
    with pytest.raises(CheckpointNotFoundError, match="gone"):
        SWEEnv.resume(removed)
    with pytest.raises(CheckpointExpiredError, match="expired"):  # its JSON, as a trainer kept it, reads the same
        SWEEnv.resume(expired.model_dump_json().encode())
    with pytest.raises(ConfigError, match="a checkpoint is"):
        SWEEnv.resume(42)
    expired.remove()
