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

from swe_gym.cli.errors import command_line_message, subcommand
from swe_gym.cli.main import build_parser
from swe_gym.envs.options import HostConfig
from swe_gym.errors import ConfigError, ImageNotSetError
from swe_gym.policies import LLMPolicy, PolicyInfo
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
    """Each record names its run and policy; a second run into the same file needs --append."""
    provider_setup("local")
    out, run_id = tmp_path / "traj.jsonl", f"first{uuid.uuid4().hex[:6]}"
    result = swe_gym("rollout", "--policy", "oracle", "--out", str(out), "--instance-id", *TASK_IDS, run_id=run_id)
    assert result.returncode == 0, result.stderr
    assert "resolved      2 (100.0%)" in result.stdout
    records = read_trajectories(out)
    assert [r.instance_id for r in records] == TASK_IDS
    assert all(r.reward == 1.0 and r.resolved and r.patch and r.patch.startswith("diff --git") for r in records)
    assert {(r.run_id, r.policy) for r in records} == {(run_id, PolicyInfo(name="oracle"))}

    again = swe_gym("rollout", "--policy", "oracle", "--out", str(out), "--instance-id", TASK_IDS[0])
    assert again.returncode == 2 and "Traceback" not in again.stderr
    assert f"error: --out {out} already holds trajectories: pass --append" in again.stderr
    assert len(read_trajectories(out)) == 2  # untouched
    second = f"second{uuid.uuid4().hex[:6]}"
    again = swe_gym("rollout", "--policy", "oracle", "--out", str(out), "--instance-id", TASK_IDS[0], "--append",
                    run_id=second)  # fmt: skip
    assert again.returncode == 0, again.stderr
    assert [r.run_id for r in read_trajectories(out)] == [run_id, run_id, second]


def test_random_rollout_runs_to_the_step_limit(tmp_path: Path) -> None:
    provider_setup("local")
    out = tmp_path / "random.jsonl"
    result = swe_gym("rollout", "--policy", "random", "--episodes", "1", "--max-steps", "3", "--out", str(out))
    assert result.returncode == 0, result.stderr
    (record,) = read_trajectories(out)
    assert 1 <= len(record.actions) <= 3 and (record.terminated or record.truncated)
    assert record.policy == PolicyInfo(name="random") and len(record.step_infos) == len(record.actions)


def test_errors_are_one_line_without_traceback() -> None:
    result = swe_gym("rollout", "--provider", "nope")
    assert result.returncode == 2
    assert result.stderr.strip().splitlines()[-1].startswith("error: unknown sandbox provider 'nope'")
    assert "Traceback" not in result.stderr
    result = swe_gym("cleanup")
    assert result.returncode == 2 and "--run-id ID, --older-than AGE, --expired, or --all" in result.stderr


def test_errors_name_the_flag_not_the_python_api() -> None:
    """What the library words as Python (a keyword, a model field, a validation error's field) the command
    line words as the flag that sets it."""
    rollout = subcommand(build_parser(), "rollout")
    docker = ImageNotSetError(
        "the docker provider needs an image: set SandboxSpec.image, the task's image, or SWEEnv(image=...)"
    )
    assert command_line_message(docker, rollout) == (
        "the docker provider needs an image: pass --image IMAGE (or use tasks that name their image)"
    )
    evaluate = subcommand(build_parser(), "evaluate")
    assert "pass --image IMAGE" in command_line_message(docker, evaluate)
    with pytest.raises(ConfigError) as invalid:
        HostConfig.parse({"max_steps": 0, "pool_size": -1})
    assert command_line_message(invalid.value, rollout) == (
        "invalid options (--max-steps: Input should be greater than or equal to 1; "
        "--pool-size: Input should be greater than or equal to 0)"
    )
    with pytest.raises(ConfigError) as invalid:
        LLMPolicy({"model": "m", "temperature": 9, "request_timeout_s": 0})
    message = command_line_message(invalid.value, rollout)
    assert "--llm-temperature: Input should be less than or equal to 2" in message and "--llm-timeout: " in message
    worded = {
        "the LLM policy needs a model name: set SWE_GYM_LLM_MODEL or pass model=": "pass --llm-model",
        "set tool_calling='text' (or tool_calling='auto')": "set --llm-tool-calling text (or --llm-tool-calling auto)",
        "make it with tools=['bash', 'submit'] (or set LLMConfig.tools=)": "--tools bash submit (or set --llm-tools)",
        "raise request_timeout_s= or max_retries=": "raise --llm-timeout or --llm-max-retries",
        "no tasks in 'x' (limit=5)": "no tasks in 'x' (--limit 5)",
        "pass domain=HOST:PORT (and api_key=...)": "pass domain=HOST:PORT (and api_key=...)",  # no such flag
    }
    for python, flags in worded.items():
        assert command_line_message(ConfigError(python), rollout).endswith(flags), python

    result = swe_gym("rollout", "--max-steps", "0", "--out", "/nonexistent/never-written.jsonl")
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert result.stderr.strip().splitlines()[-1] == (
        "error: invalid options (--max-steps: Input should be greater than or equal to 1)"
    )


def test_cleanup_by_run_id_removes_leftovers() -> None:
    provider_setup("docker")
    box = make_sandbox("docker")
    container = box.aio.backend.container_id[:12]
    result = swe_gym("cleanup", "--provider", "docker", "--run-id", current_run_id())
    assert result.returncode == 0, result.stderr
    removed = result.stdout.split("docker: removed ", 1)[1].split("(", 1)[1].split(")")[0].split(", ")
    assert container in removed  # with the run's prepared images that no container uses
    assert not leftover_sandboxes()["docker"]
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


@pytest.mark.parametrize(
    ("argv", "extra", "module"),
    [(["serve", "--port", "0"], "openenv", "uvicorn"), (["capture-proxy", "--out", "x.jsonl"], "llm", "aiohttp")],
)
def test_a_command_without_its_extra_names_the_extra(
    argv: list[str], extra: str, module: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import importlib.util

    from swe_gym.cli.main import main

    found = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == module else found(name, *a))
    assert main(argv) == 2
    assert f"{module} (not installed): pip install 'swe_gym[{extra}]'" in capsys.readouterr().err
