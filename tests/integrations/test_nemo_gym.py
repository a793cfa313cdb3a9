"""swe_gym as a NeMo Gym environment, run by NeMo Gym itself (PyPI's nemo-gym, in the Python 3.13 rootfs of
.ci/provision_nemo_gym.sh): ``ng_run`` starts swe_gym's resources server, NeMo Gym's simple_agent and model
servers, and ``ng_collect_rollouts`` collects four rollouts in one run:

- two bundled tasks played by the real SmolLM2 on llama.cpp (tool calling), rewarded by swe_gym's grade;
- one by the gold patch through the env's own bash tool (a fake policy, fake_gold_patch_model): resolved, 1.0;
- one whose sandbox cannot start (a Docker image the engine does not have): NeMo Gym's ``mask_sample``.

Then Ctrl-C (SIGINT to ng_run's process group) stops every server, and not one sandbox may be left.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import urllib.request
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from swe_gym.grading import grade
from swe_gym.integrations.nemo_gym import CONFIG_PATH, SERVERS_ROOT
from swe_gym.settings import read_env_file
from swe_gym.tasks import load_tasks
from tests.conftest import IN_CI, TEST_IMAGE, leftover_sandboxes, require

#: The module's one ng_run (ten servers and a Ray head starting on 2 cores) is set up inside the first test.
pytestmark = pytest.mark.timeout(600)

ENTER = Path(os.environ.get("SWE_GYM_NEMO_GYM_ENTER", "/var/tmp/swe-gym-nemo-gym/enter"))
LLM_ENV_FILE = Path("/etc/swe-gym/llm.env")
FAKES_ROOT = Path(__file__).parent / "nemo_gym_servers"
BUNDLED = load_tasks("bundled")
LLM_TASKS, GOLD_TASK = BUNDLED[:2], BUNDLED[2]
UNSTARTABLE = BUNDLED[3].model_copy(update={"image": "swe-gym-no-such-image:0"})
#: The server directories ng_run starts, each given the rootfs's one venv (skip_venv_if_present).
SERVER_DIRS = [
    "resources_servers/swe_gym",
    "responses_api_agents/simple_agent",
    "responses_api_models/vllm_model",
    "responses_api_models/fake_gold_patch_model",
    "environment_servers/legacy_agent",
]


def _problem() -> str | None:
    if not ENTER.is_file():
        return f"no NeMo Gym rootfs at {ENTER} (run .ci/provision_nemo_gym.sh)"
    values = read_env_file(LLM_ENV_FILE) if LLM_ENV_FILE.is_file() else {}
    url = os.environ.get("SWE_GYM_LLM_TOOLS_BASE_URL") or values.get("SWE_GYM_LLM_TOOLS_BASE_URL")
    if not url:
        return f"no tool-calling LLM endpoint configured (run .ci/provision_llm.sh, which writes {LLM_ENV_FILE})"
    try:
        urllib.request.urlopen(f"{url}/models", timeout=60).read()
    except OSError as exc:
        return f"the LLM server at {url} does not answer ({exc})"
    os.environ["SWE_GYM_LLM_TOOLS_BASE_URL"] = url
    return None


def _agent(name: str, resources: str, model: str) -> dict[str, Any]:
    ref = {"type": "resources_servers", "name": resources}
    agent = {"entrypoint": "app.py", "resources_server": ref, "max_steps": 4}
    agent["model_server"] = {"type": "responses_api_models", "name": model}
    env_server = {
        "legacy_agent": {"entrypoint": "app.py", "agent_server": {"type": "responses_api_agents", "name": name}}
    }
    return {name: {"responses_api_agents": {"simple_agent": agent}}, f"{name}_env": {"environment_servers": env_server}}


def _config(tmp: Path) -> Path:
    """The servers besides the shipped config's: the models, the gold agent, a Docker server that cannot start."""
    tasks_file = tmp / "unstartable.jsonl"
    tasks_file.write_text(UNSTARTABLE.model_dump_json() + "\n")
    policy = {
        "entrypoint": "app.py",
        "base_url": os.environ["SWE_GYM_LLM_TOOLS_BASE_URL"],
        "api_key": "none",
        "model": "SmolLM2-135M-Instruct",
        "return_token_id_information": False,
        "uses_reasoning_parser": False,
    }
    docker_env = {"tasks": str(tasks_file), "provider": {"type": "docker", "pull": "never"}, "image": TEST_IMAGE}
    unstartable = {"entrypoint": "app.py", "domain": "coding", "verified": False, "env": docker_env}
    config = {
        "swe_gym_resources_server": {"resources_servers": {"swe_gym": {"env": {"max_steps": 4}}}},
        # One model call: llama-cpp-python's server rejects the follow-up NeMo Gym sends after a tool call
        # (an assistant message whose content is null), so the real model gets one turn with swe_gym's bash.
        "swe_gym_simple_agent": {"responses_api_agents": {"simple_agent": {"max_steps": 1}}},
        "policy_model": {"responses_api_models": {"vllm_model": policy}},
        "fake_gold_patch_model": {"responses_api_models": {"fake_gold_patch_model": {"entrypoint": "app.py"}}},
        "unstartable_resources_server": {"resources_servers": {"swe_gym": unstartable}},
        **_agent("gold_agent", "swe_gym_resources_server", "fake_gold_patch_model"),
        **_agent("unstartable_agent", "unstartable_resources_server", "fake_gold_patch_model"),
    }
    path = tmp / "test_servers.yaml"
    path.write_text(json.dumps(config))  # JSON is YAML
    return path


def _rows(tmp: Path, tasks: str, agent: str, tasks_to_run: list[Any]) -> list[str]:
    """Dataset rows made by swe_gym's row writer, under NeMo Gym's Python like a user's."""
    out = tmp / f"{agent}.jsonl"
    ids = [arg for task in tasks_to_run for arg in ("--instance-id", task.instance_id)]
    write = [ENTER, "python", "-m", "swe_gym.integrations.nemo_gym.rows", "--tasks", tasks, "--out", out]
    subprocess.run([*write, "--agent", agent, "--max-steps", "4", *ids], check=True, capture_output=True)
    return out.read_text().splitlines()


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """ng_run's servers up, ng_collect_rollouts run once; its rollouts by instance id, then everything stopped."""
    problem = _problem()
    if problem is not None:
        if IN_CI:
            pytest.fail(f"CI must run the NeMo Gym tests: {problem}")
        pytest.skip(problem)
    require("local")
    require("docker")
    tmp = tmp_path_factory.mktemp("nemo_gym")
    for server in SERVER_DIRS:
        (tmp / "venvs" / server).mkdir(parents=True)
        (tmp / "venvs" / server / ".venv").symlink_to("/opt/nemo-gym-venv")
    run_id = f"nemo-gym-{uuid.uuid4().hex[:8]}"
    env = {**os.environ, "NEMO_GYM_EXTRA_ROOTS": f"{SERVERS_ROOT}:{FAKES_ROOT}", "SWE_GYM_RUN_ID": run_id}
    configs = f"+config_paths=[{CONFIG_PATH},{_config(tmp)}]"
    venvs = [f"+uv_venv_dir={tmp / 'venvs'}", "+skip_venv_if_present=true"]
    log = (tmp / "ng_run.log").open("w+")
    server = subprocess.Popen(
        [ENTER, "ng_run", configs, *venvs],
        cwd=tmp,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        while "servers ready!" not in (tmp / "ng_run.log").read_text():
            assert server.poll() is None, f"ng_run exited:\n{(tmp / 'ng_run.log').read_text()[-3000:]}"
            try:
                server.wait(1)
            except subprocess.TimeoutExpired:
                pass
        llm_rows = [json.loads(line) for line in _rows(tmp, "bundled", "swe_gym_simple_agent", LLM_TASKS)]
        for row in llm_rows:  # SmolLM2 rarely calls a tool unasked: here it must call bash
            row["responses_create_params"]["tool_choice"] = {"type": "function", "name": "bash"}
        lines = [json.dumps(row) for row in llm_rows] + _rows(tmp, "bundled", "gold_agent", [GOLD_TASK])
        lines += _rows(tmp, str(tmp / "unstartable.jsonl"), "unstartable_agent", [UNSTARTABLE])
        rows, out = tmp / "rows.jsonl", tmp / "rollouts.jsonl"
        rows.write_text("\n".join(lines) + "\n")
        collect = [ENTER, "ng_collect_rollouts", f"+input_jsonl_fpath={rows}", f"+output_jsonl_fpath={out}"]
        collect += ["+num_samples_in_parallel=4", "+responses_create_params.max_output_tokens=48"]
        done = subprocess.run(collect, cwd=tmp, env=env, capture_output=True, text=True)
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
        rollouts = {r["instance_id"]: r for r in map(json.loads, out.read_text().splitlines())}
        metrics = {m["agent_ref"]["name"]: m for m in json.loads((tmp / "rollouts_aggregate_metrics.json").read_text())}
        yield {"rollouts": rollouts, "metrics": metrics, "run_id": run_id, "server": server}
    finally:
        stop(server)
        log.close()


def stop(server: subprocess.Popen[bytes]) -> None:
    """Ctrl-C (SIGINT to ng_run's process group): every server shuts down, swe_gym's closing its sandboxes."""
    if server.poll() is None:
        os.killpg(server.pid, signal.SIGINT)
        server.wait()


def test_the_real_models_rollouts_get_swe_gyms_grade(run: dict[str, Any]) -> None:
    for task in LLM_TASKS:
        rollout = run["rollouts"][task.instance_id]
        assert rollout["mask_sample"] is False and rollout["failure_kind"] is None
        calls = [item["name"] for item in rollout["response"]["output"] if item["type"] == "function_call"]
        assert calls and set(calls) == {"bash"}, rollout["response"]["output"]  # the real model ran swe_gym's bash
        report = grade(task, rollout["patch"], provider="local")  # the same patch, graded again here
        assert rollout["reward"] == report.reward() and rollout["resolved"] is report.resolved


def test_the_gold_patch_applied_through_the_bash_tool_resolves(run: dict[str, Any]) -> None:
    rollout = run["rollouts"][GOLD_TASK.instance_id]
    calls = [item["name"] for item in rollout["response"]["output"] if item["type"] == "function_call"]
    assert calls == ["bash", "submit"]
    assert rollout["reward"] == 1.0 and rollout["resolved"] is True and rollout["mask_sample"] is False
    assert rollout["patch"].strip()


def test_a_sandbox_that_cannot_start_is_nemo_gyms_mask_sample(run: dict[str, Any]) -> None:
    rollout = run["rollouts"][UNSTARTABLE.instance_id]
    assert rollout["mask_sample"] is True and rollout["reward"] == 0.0 and rollout["resolved"] is False
    assert rollout["failure_kind"] == "provider_unavailable"
    assert "swe-gym-no-such-image:0" in rollout["failure_reason"]
    outputs = [item["output"] for item in rollout["response"]["output"] if item["type"] == "function_call_output"]
    assert "episode masked" in outputs[0]
    # NeMo Gym's own aggregation counts it as masked, not as a measured reward 0
    assert run["metrics"]["unstartable_agent"]["agent_metrics"]["coverage/masked_rollouts"] == 1
    assert run["metrics"]["unstartable_agent"]["agent_metrics"]["coverage/measured_rollouts"] == 0


def test_stopping_ng_run_leaves_no_sandbox(run: dict[str, Any]) -> None:
    stop(run["server"])
    assert not any(leftover_sandboxes(run["run_id"]).values())
