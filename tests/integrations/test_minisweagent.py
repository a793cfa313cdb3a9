"""mini-swe-agent interop, driven by mini-swe-agent's own `DeterministicModel` (scripted outputs).

(a) its unchanged `DefaultAgent` on our `SandboxEnvironment` (local and docker providers);
(b) its agent as the policy of an `SWEEnv` episode on a bundled task, graded by our grading.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import gymnasium as gym
import pytest

from tests.conftest import IN_CI, leftover_sandboxes, make_sandbox, provider_setup

try:
    from swe_gym.integrations.minisweagent import (
        EpisodeResult,
        SandboxEnvironment,
        default_agent_config,
        default_model_config,
        run_episode,
    )
except ImportError:
    if IN_CI:
        raise
    pytest.skip("mini-swe-agent is not installed (pip install 'swe_gym[minisweagent]')", allow_module_level=True)

from minisweagent.agents.default import DefaultAgent
from minisweagent.environments import get_environment
from minisweagent.exceptions import Submitted
from minisweagent.models.test_models import (
    DeterministicModel,
    DeterministicToolcallModel,
    make_output,
    make_toolcall_output,
)

from swe_gym.policies.oracle import apply_patch_command

TASK_ID = "swe-gym__textkit-1"
SUBMIT_COMMAND = "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"
ENVIRONMENT_CLASS = "swe_gym.integrations.minisweagent.SandboxEnvironment"


def scripted(*commands: str) -> DeterministicModel:
    """mini-swe-agent's test model answering with one command per turn."""
    outputs = [make_output(f"THOUGHT: step {i}", [{"command": command}]) for i, command in enumerate(commands)]
    return DeterministicModel(outputs=outputs)


def agent_config(**overrides: Any) -> dict[str, Any]:
    return default_agent_config() | overrides


def assert_no_leftover_sandboxes() -> None:
    for _ in range(50):  # Docker's auto-removal is asynchronous
        leaks = {provider: ids for provider, ids in leftover_sandboxes().items() if ids}
        if not leaks:
            return
        time.sleep(0.2)
    pytest.fail(f"sandboxes left behind: {leaks}")


# -- (a) SandboxEnvironment: mini-swe-agent's Environment on our providers ------------------------


@pytest.mark.parametrize("provider", ["local", pytest.param("docker", marks=pytest.mark.docker)])
def test_default_agent_runs_commands_and_submits(provider: str) -> None:
    config, image = provider_setup(provider)
    model = scripted(
        "printf 'hello\\n' > greeting.txt && cat greeting.txt",
        'pwd && echo "$SWE_GYM_MINI"',
        "echo to stderr >&2; exit 3",
        f"{SUBMIT_COMMAND} && cat greeting.txt",
    )
    with SandboxEnvironment(provider=config, image=image, env={"SWE_GYM_MINI": "on"}) as env:
        # mini-swe-agent's own default config: text-based templates that render {{system}}, {{release}}, ...
        agent = DefaultAgent(model, env, **default_agent_config("default.yaml"))
        exit_info = agent.run("Write a greeting to greeting.txt, then submit it.")
        trajectory = agent.serialize()
        workdir = env.sandbox.workdir

    assert exit_info == {"exit_status": "Submitted", "submission": "hello\n"}
    roles = [message["role"] for message in agent.messages]
    assert roles == ["system", "user"] + ["assistant", "user"] * 3 + ["assistant", "exit"]
    observations = [message["extra"] for message in agent.messages[3:-1:2]]
    assert [o["returncode"] for o in observations] == [0, 0, 3]
    assert observations[0]["raw_output"] == "hello\n"
    assert observations[1]["raw_output"] == f"{workdir}\non\n"
    assert observations[2]["raw_output"] == "to stderr\n"
    assert "Linux" in agent.messages[1]["content"]  # the sandbox's uname, rendered by mini-swe-agent's template
    assert trajectory["info"]["exit_status"] == "Submitted"
    assert trajectory["info"]["config"]["environment_type"] == ENVIRONMENT_CLASS
    assert trajectory["info"]["sandbox"]["provider"] == config["type"]
    json.dumps(trajectory)  # mini-swe-agent saves it as JSON
    assert_no_leftover_sandboxes()


def test_get_environment_builds_it_from_a_mini_swe_agent_config() -> None:
    config, _ = provider_setup("local")
    env = get_environment(
        # keys of mini-swe-agent's own environments (interpreter, run_args) are ignored, as there
        {"environment_class": ENVIRONMENT_CLASS, "provider": config, "env": {"PAGER": "cat"}, "interpreter": ["sh"]}
    )
    try:
        assert isinstance(env, SandboxEnvironment)
        out = env.execute({"command": "echo $PAGER"})
        assert out == {
            "output": "cat\n",
            "returncode": 0,
            "exception_info": "",
            "extra": {
                "exit_code": 0,
                "timed_out": False,
                "output_truncated": False,
                "duration_s": out["extra"]["duration_s"],
            },
        }
        variables = env.get_template_vars(task="t")
        assert {"system", "release", "version", "machine", "cwd", "sandbox_id", "task"} <= variables.keys()
        assert variables["cwd"] == env.sandbox.workdir and variables["provider_name"] == "local"
    finally:
        env.cleanup()
        env.cleanup()  # idempotent
    assert_no_leftover_sandboxes()


def test_timeout_kills_the_process_group_and_output_is_capped() -> None:
    config, _ = provider_setup("local")
    with SandboxEnvironment(provider=config, timeout=1, max_output_bytes=2000) as env:
        started = time.monotonic()
        out = env.execute({"command": "(sleep 2; echo late > late.txt) & echo started; sleep 60"})
        assert time.monotonic() - started < 15
        assert out["returncode"] == -1 and out["extra"]["timed_out"]
        assert "timed out after 1s" in out["exception_info"] and "started" in out["output"]
        time.sleep(2.5)
        assert env.execute({"command": "test -e late.txt; echo $?"})["output"] == "1\n"  # the child died too

        assert env.execute({"command": "sleep 3; echo done"}, timeout=10)["output"] == "done\n"  # per-call timeout

        big = env.execute({"command": "head -c 100000 /dev/zero | tr '\\0' a"})
        assert big["returncode"] == 0 and big["extra"]["output_truncated"]
        assert 1000 < len(big["output"]) < 5000


def test_submission_marker_follows_mini_swe_agent_and_cwd_applies(tmp_path: Path) -> None:
    config, _ = provider_setup("local")
    with SandboxEnvironment(provider=config) as env:
        failed = env.execute({"command": f"{SUBMIT_COMMAND}; exit 1"})  # a failing command does not submit
        assert failed["returncode"] == 1 and failed["output"].startswith("COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT")
        with pytest.raises(Submitted) as submitted:
            env.execute({"command": f"echo; {SUBMIT_COMMAND}; printf 'line 1\\nline 2\\n'"})
        (message,) = submitted.value.messages
        assert message["role"] == "exit"
        assert message["extra"] == {"exit_status": "Submitted", "submission": "line 1\nline 2\n"}
        assert env.execute({"command": "pwd"}, cwd="/tmp")["output"] == "/tmp\n"


def test_wraps_an_existing_sandbox_and_leaves_it_to_its_owner() -> None:
    box = make_sandbox("local")
    try:
        env = SandboxEnvironment.from_sandbox(box, cwd="/tmp")
        assert env.execute({"command": "pwd"})["output"] == "/tmp\n"
        assert env.serialize()["info"]["sandbox"]["id"] == box.id
        env.cleanup()
        assert box.exec("echo alive").output == "alive\n"
        owning = SandboxEnvironment.from_sandbox(box.aio, close_sandbox=True)  # an AsyncSandbox works too
        owning.cleanup()
        assert box.status() == "closed"
    finally:
        box.close()
    assert_no_leftover_sandboxes()


# -- (b) run_episode: mini-swe-agent's agent as the policy of an SWEEnv episode -------------------


def make_env(provider: str = "local", **options: Any) -> gym.Env:
    config, image = provider_setup(provider)
    return gym.make("swe_gym/SWE-v0", provider=config, image=image, instance_ids=[TASK_ID], **options)


@pytest.mark.parametrize("provider", ["local", pytest.param("docker", marks=pytest.mark.docker)])
def test_agent_applying_the_gold_patch_is_resolved(provider: str, tmp_path: Path) -> None:
    env = make_env(provider, max_steps=6)
    try:
        task = env.unwrapped.tasks[0]
        model = scripted(apply_patch_command(task.patch), SUBMIT_COMMAND)
        output_path = tmp_path / "trajectory.json"
        result = run_episode(env, model=model, agent_config=agent_config(output_path=output_path))
    finally:
        env.close()

    assert isinstance(result, EpisodeResult)
    assert result.reward == 1.0 and result.resolved and not result.masked
    assert result.terminated and not result.truncated
    assert result.exit_status == "Submitted" and result.steps == 2 and result.model_calls == 2
    assert result.reset_info["instance_id"] == TASK_ID
    assert result.info["report"]["resolved"] and result.info["patch"].strip()
    assert [m["role"] for m in result.messages] == ["system", "user", "assistant", "user", "assistant", "exit"]
    assert "RESOLVED" in result.messages[-1]["content"]
    assert result.messages[-1]["extra"]["submission"] == result.info["patch"]
    saved = json.loads(output_path.read_text())
    assert saved["info"]["swe_gym"] == {
        "instance_id": TASK_ID,
        "reward": 1.0,
        "resolved": True,
        "masked": False,
        "terminated": True,
        "truncated": False,
        "steps": 2,
    }
    assert saved["info"]["exit_status"] == "Submitted" and saved["messages"] == result.trajectory["messages"]
    assert_no_leftover_sandboxes()


WRONG_EDIT = "sed -i '1i # an unrelated edit' $(git ls-files '*.py' | grep -v test | head -n 1) && git diff --stat"


@pytest.mark.parametrize("attempt", ["git status --short", WRONG_EDIT], ids=["empty", "wrong"])
def test_an_empty_or_wrong_attempt_scores_zero(attempt: str) -> None:
    env = make_env(max_steps=6)
    try:
        result = run_episode(env, model=scripted(attempt, SUBMIT_COMMAND), agent_config=agent_config())
    finally:
        env.close()
    assert result.reward == 0.0 and not result.resolved and not result.masked
    assert result.terminated and result.exit_status == "Submitted" and result.steps == 2
    assert bool(result.info["patch"].strip()) == (attempt == WRONG_EDIT)
    assert_no_leftover_sandboxes()


def test_agent_raising_mid_episode_closes_the_env() -> None:
    env = make_env(max_steps=6)
    # The scripted model has one answer: its second query raises IndexError inside the agent's loop.
    # (Its {"raise": exc} action would too, but then the exception sits in the model's config and the
    # agent's trajectory save, which serializes that config, fails first.)
    with pytest.raises(IndexError):
        run_episode(env, model=scripted("ls"), agent_config=agent_config())
    assert env.unwrapped.task is None  # the episode was released with the env
    assert_no_leftover_sandboxes()
    env.close()


@pytest.mark.parametrize("grade_on_truncation", [True, False])
def test_agent_hitting_its_own_limit_ends_the_episode_truncated(grade_on_truncation: bool) -> None:
    env = make_env(max_steps=6, grade_on_truncation=grade_on_truncation)
    try:
        task = env.unwrapped.tasks[0]
        model = scripted(apply_patch_command(task.patch), "ls", "ls")
        result = run_episode(env, model=model, agent_config=agent_config(step_limit=2))
    finally:
        env.close()
    assert result.exit_status == "LimitsExceeded" and result.truncated and not result.terminated
    if grade_on_truncation:  # graded by a closing submit, as SWEEnv grades a truncated episode
        assert result.reward == 1.0 and result.resolved and result.steps == 3
    else:
        assert result.reward == 0.0 and not result.resolved and result.info["report"] is None and result.steps == 2
    assert_no_leftover_sandboxes()


def test_swe_env_step_limit_stops_the_agent() -> None:
    env = make_env(max_steps=2)
    try:
        task = env.unwrapped.tasks[0]
        model = scripted(apply_patch_command(task.patch), "ls", "ls", "ls")
        result = run_episode(env, model=model, agent_config=agent_config())
    finally:
        env.close()
    assert result.exit_status == "Truncated" and result.truncated and not result.terminated
    assert result.steps == 2 and result.model_calls == 2
    assert result.reward == 1.0 and result.resolved  # SWEEnv grades on truncation by default
    assert_no_leftover_sandboxes()


# -- mini-swe-agent's tool calling (its v2 mini.yaml: one `bash` tool) -----------------------------------


def toolcall_scripted(*turns: list[str]) -> DeterministicToolcallModel:
    """mini-swe-agent's scripted tool-calling model: each turn is one assistant message calling ``bash``
    once per command, in OpenAI's ``tool_calls`` format (what its `LitellmModel` gets from a server), its
    observations rendered by mini.yaml's templates."""
    outputs = []
    for i, commands in enumerate(turns):
        calls = [
            {
                "id": f"call_{i}_{j}",
                "type": "function",
                "function": {"name": "bash", "arguments": json.dumps({"command": command})},
            }
            for j, command in enumerate(commands)
        ]
        actions = [{"command": c, "tool_call_id": f"call_{i}_{j}"} for j, c in enumerate(commands)]
        outputs.append(make_toolcall_output(f"THOUGHT: turn {i}", calls, actions))
    return DeterministicToolcallModel(outputs=outputs, **default_model_config())  # mini.yaml's model templates


@pytest.mark.parametrize("tools", [None, ["bash", "str_replace_editor", "submit"]], ids=["bash-env", "tools-env"])
def test_tool_calling_agent_runs_an_episode_and_is_graded(tools: list[str] | None) -> None:
    env = make_env(max_steps=6, tools=tools)
    infos: list[dict[str, Any]] = []
    real_step = env.step

    def step(action: Any) -> Any:
        result = real_step(action)
        infos.append(result[4])
        return result

    env.step = step  # type: ignore[method-assign]  # see each step's info
    try:
        task = env.unwrapped.tasks[0]
        model = toolcall_scripted([apply_patch_command(task.patch), "git status --short"], [SUBMIT_COMMAND])
        result = run_episode(env, model=model, agent_config=agent_config())
    finally:
        env.close()
    assert result.reward == 1.0 and result.resolved and result.terminated and result.exit_status == "Submitted"
    assert result.steps == 3 and result.model_calls == 2  # two calls of one reply: two steps
    roles = [m["role"] for m in result.messages]
    assert roles == ["system", "user", "assistant", "tool", "tool", "assistant", "exit"]
    answers = result.messages[3:5]
    assert [m["tool_call_id"] for m in answers] == ["call_0_0", "call_0_1"]
    assert "textkit/normalize.py" in json.loads(answers[1]["content"])["output"]  # mini.yaml's JSON observation
    if tools is None:  # a bash-only env: plain commands
        assert all("tool_call_id" not in info for info in infos)
    else:  # an env that takes tool calls: each step is the agent's bash call, its id in the step's info
        assert [(i["tool"], i["tool_call_id"]) for i in infos] == [
            ("bash", "call_0_0"),
            ("bash", "call_0_1"),
            ("bash", "call_1_0"),
        ]
    assert_no_leftover_sandboxes()


def test_tool_calling_agent_on_a_sandbox_environment() -> None:
    config, _ = provider_setup("local")
    model = toolcall_scripted(["printf 'tool\\n' > t.txt", "cat t.txt"], [f"{SUBMIT_COMMAND} && cat t.txt"])
    with SandboxEnvironment(provider=config) as env:
        agent = DefaultAgent(model, env, **default_agent_config())
        exit_info = agent.run("Write t.txt, then submit it.")
    assert exit_info == {"exit_status": "Submitted", "submission": "tool\n"}
    assert [m["role"] for m in agent.messages] == ["system", "user", "assistant", "tool", "tool", "assistant", "exit"]
    assert agent.messages[4]["tool_call_id"] == "call_0_1" and '"output": "tool\\n"' in agent.messages[4]["content"]
    assert_no_leftover_sandboxes()


def test_mini_swe_agents_litellm_tool_calling_model_through_a_server(monkeypatch: pytest.MonkeyPatch) -> None:
    """mini.yaml's own model class (`LitellmModel`: litellm, ``tools=[bash]``) against the FAKE scripted
    OpenAI server (real HTTP, OpenAI's wire format, the tool-call protocol checked), graded for real."""
    monkeypatch.setenv("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # no fetch of litellm's price list
    from minisweagent.models.litellm_model import LitellmModel

    from tests.policies.fake_openai_tool_server import MODEL, Reply, call, fake_tool_server

    env = make_env(max_steps=6, tools=["bash"])
    try:
        task = env.unwrapped.tasks[0]
        script = [
            Reply("Apply the fix.", [call("bash", None, command=apply_patch_command(task.patch))]),
            Reply("Done.", [call("bash", None, command=SUBMIT_COMMAND)]),
        ]
        with fake_tool_server(script) as server:
            model_config = default_model_config()
            kwargs = {**model_config.get("model_kwargs", {}), "api_base": server.base_url, "api_key": "none"}
            model = LitellmModel(
                model_name=f"openai/{MODEL}", **{**model_config, "model_kwargs": kwargs}, cost_tracking="ignore_errors"
            )
            result = run_episode(env, model=model, agent_config=agent_config())
    finally:
        env.close()
    assert result.reward == 1.0 and result.resolved and result.exit_status == "Submitted" and result.steps == 2
    assert not server.violations and len(server.requests) == 2
    assert [t["function"]["name"] for t in server.requests[0]["tools"]] == ["bash"]  # mini-swe-agent's own tool
    answered = server.requests[1]["messages"][-1]
    assert answered["role"] == "tool" and answered["tool_call_id"] == "call_1_0"
    assert_no_leftover_sandboxes()
