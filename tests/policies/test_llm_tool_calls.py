"""`LLMPolicy` with native function calling (``tool_calling``), on real envs made with ``tools=``.

Two kinds of endpoint:

- the FAKE scripted server of `tests.policies.fake_openai_tool_server` (real HTTP, the real OpenAI wire
  format, the protocol checked as OpenAI's API checks it), for what a 135M model cannot be made to do: a
  graded episode that views a file, edits it with ``str_replace`` and submits, several calls in one
  reply, bad calls, an endpoint that refuses ``tools=``;
- the REAL SmolLM2 behind llama.cpp's servers (``.ci/provision_llm.sh``): the tool-calling one
  (``chatml-function-calling``) returns real ``tool_calls``, the plain one takes ``tools=`` and answers
  in text, where ``auto`` falls back to the bash block.
"""

from __future__ import annotations

import json
import os
import urllib.request
from pathlib import Path
from typing import Any

import gymnasium as gym
import pytest

from swe_gym.errors import ConfigError, PolicyError
from swe_gym.policies import LLMPolicy
from swe_gym.policies.llm.history import fit_history
from swe_gym.settings import read_env_file
from swe_gym.tasks import load_tasks
from swe_gym.tools import TOOL_NAMES, tool_schemas
from swe_gym.wrappers import TrajectoryRecorder, read_trajectories
from tests.conftest import IN_CI, leftover_sandboxes, provider_setup
from tests.policies.fake_openai_tool_server import (
    MODEL,
    VLLM_NO_TOOLS,
    Reply,
    call,
    fake_tool_server,
    protocol_problem,
    raw_call,
)
from tests.policies.test_llm_policy import LLM_ENV_FILE, REAL, _fixed_server, _llm_problem

TASK_ID = "swe-gym__globmatch-1"  # its gold patch is one hunk of one file: one str_replace
TOOLS = list(TOOL_NAMES)


def hunk_edit(patch: str) -> tuple[str, str, str]:
    """``(path, old, new)`` of a one-hunk, one-file patch: the hunk's old and new text, context included."""
    lines = patch.splitlines()
    path = next(line[len("+++ b/") :] for line in lines if line.startswith("+++ b/"))
    body = lines[next(i for i, line in enumerate(lines) if line.startswith("@@")) + 1 :]
    assert not any(line.startswith(("@@", "diff --git")) for line in body), "more than one hunk"
    old = [line[1:] for line in body if line[:1] in (" ", "-")]
    new = [line[1:] for line in body if line[:1] in (" ", "+")]
    return path, "\n".join(old), "\n".join(new)


def make_env(tmp_path: Path | None = None, **options: Any) -> gym.Env:
    config, _ = provider_setup("local")
    options = {"provider": config, "instance_ids": [TASK_ID], "max_steps": 8, "tools": TOOLS, **options}
    env = gym.make("swe_gym/SWE-v0", **options)
    return TrajectoryRecorder(env, tmp_path / "t.jsonl") if tmp_path is not None else env


def make_policy(base_url: str, **config: Any) -> LLMPolicy:
    defaults = {"model": MODEL, "max_retries": 0, "request_timeout_s": 10.0}
    return LLMPolicy({"base_url": base_url, **defaults, **config})


def run(env: gym.Env, policy: LLMPolicy) -> tuple[list[Any], list[dict[str, Any]], float]:
    """One episode: the actions, the step infos, the reward."""
    observation, info = env.reset()
    policy.reset(observation, info)
    actions, infos, reward, done = [], [], 0.0, False
    while not done:
        action = policy.act(observation, info)
        observation, reward, terminated, truncated, info = env.step(action)
        actions.append(action)
        infos.append(info)
        done = terminated or truncated
    return actions, infos, float(reward)


def last_messages(request: dict[str, Any], n: int) -> list[dict[str, Any]]:
    return request["messages"][-n:]


# -- the fake scripted endpoint ----------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["native", "auto"])
def test_an_episode_of_tool_calls_views_edits_submits_and_is_resolved(mode: str, tmp_path: Path) -> None:
    task = next(t for t in load_tasks("bundled") if t.instance_id == TASK_ID)
    path, old, new = hunk_edit(task.patch)
    script = [
        Reply("I will read the file first.", [call("str_replace_editor", "view-1", command="view", path=path)]),
        Reply(None, [call("str_replace_editor", None, command="str_replace", path=path, old_str=old, new_str=new)]),
        Reply("The fix is in; submitting.", [call("submit", "done-1")]),
    ]
    env = make_env(tmp_path)
    with fake_tool_server(script) as server:
        policy = make_policy(server.base_url, tool_calling=mode)
        env.policy, env.policy_stats = policy, policy.episode_stats
        try:
            actions, infos, reward = run(env, policy)
        finally:
            env.close()
            policy.close()
    assert reward == 1.0 and infos[-1]["resolved"] and path in infos[-1]["patch"]
    assert not server.violations and len(server.requests) == 3
    # Each request offered the env's tools, and every action was the reply's OpenAI entry, passed on as is.
    for request in server.requests:
        assert request["tools"] == tool_schemas(TOOLS) and request["tool_choice"] == "auto"
    assert [a["function"]["name"] for a in actions] == ["str_replace_editor", "str_replace_editor", "submit"]
    assert [a["id"] for a in actions] == ["view-1", "call_2_0", "done-1"]  # the server's ids, kept
    assert json.loads(actions[1]["function"]["arguments"]) == {
        "command": "str_replace",
        "path": path,
        "old_str": old,
        "new_str": new,
    }
    assert [i["tool_call_id"] for i in infos] == [a["id"] for a in actions]  # the env answered each call
    # Each result went back as a tool message with its call's id, right after the assistant's call.
    call_message, result = last_messages(server.requests[1], 2)
    assert call_message == {"role": "assistant", "content": "I will read the file first.", "tool_calls": [actions[0]]}
    assert result["role"] == "tool" and result["tool_call_id"] == "view-1"
    assert "with line numbers" in result["content"] and old.splitlines()[0] in result["content"]
    call_message, result = last_messages(server.requests[2], 2)
    assert call_message["content"] == "" and call_message["tool_calls"] == [actions[1]]  # "" where it sent null
    assert result["tool_call_id"] == "call_2_0" and f"Edited /testbed/{path}" in result["content"]
    assert server.requests[0]["messages"][0]["content"].startswith("You are a software engineer who resolves")
    stats = policy.episode_stats()
    assert stats["tool_calling"] == "native" and stats["tool_calls"] == 3 and stats["format_errors"] == 0
    assert stats["action_sources"] == ["tool_call"] * 3 and stats["model_calls"] == 3
    (record,) = read_trajectories(tmp_path / "t.jsonl")
    assert record.reward == 1.0 and record.policy_stats is not None and record.policy_stats["tool_calls"] == 3
    assert record.policy is not None and record.policy.label() == f"llm ({policy.config.model})"
    assert not leftover_sandboxes()["local"]


def test_several_calls_of_one_reply_run_one_per_step_and_each_is_answered_before_the_next_request() -> None:
    script = [
        Reply(
            "Three things at once.",
            [
                call("bash", None, command="echo one > one.txt && echo one"),
                raw_call("bash", '{"command": "echo two'),  # arguments that are not JSON
                call("grep", None, pattern="x"),  # no such tool
                call("bash", None, command="cat one.txt"),
            ],
        ),
        Reply(None, [call("submit")]),
    ]
    env = make_env()
    with fake_tool_server(script) as server:
        policy = make_policy(server.base_url, tool_calling="native")
        try:
            actions, infos, reward = run(env, policy)
        finally:
            env.close()
    assert not server.violations and len(server.requests) == 2  # no request until all four were answered
    assert [i["step"] for i in infos] == [1, 2, 3, 4, 5] and infos[-1]["report"] is not None
    assert [i["exit_code"] for i in infos[:4]] == [0, 2, 2, 0]
    assert "not valid JSON" in infos[1]["tool_error"] and "unknown tool 'grep'" in infos[2]["tool_error"]
    answers = last_messages(server.requests[1], 4)
    assert [m["role"] for m in answers] == ["tool"] * 4
    assert [m["tool_call_id"] for m in answers] == [a["id"] for a in actions[:4]]
    assert len({a["id"] for a in actions}) == 5
    assert "one" in answers[0]["content"] and "bad tool call" in answers[1]["content"]
    assert "unknown tool 'grep'" in answers[2]["content"] and "one" in answers[3]["content"]
    assert server.requests[1]["messages"][-5]["tool_calls"] == actions[:4]
    assert policy.episode_stats()["model_calls"] == 2


def test_auto_falls_back_to_the_bash_block_when_the_endpoint_refuses_tools() -> None:
    env = make_env(max_steps=3)
    replies = ["THOUGHT: look.\n```bash\nls\n```", "```bash\nsubmit\n```", "```bash\npwd\n```"]
    with fake_tool_server(replies, reject_tools=True) as server:
        policy = make_policy(server.base_url)  # tool_calling defaults to auto
        try:
            actions, _, _ = run(env, policy)
            assert actions == ["ls", "submit"]
            stats = policy.episode_stats()
            assert stats["tool_calling"] == "text" and "refused tools=" in stats["tool_calling_fallback"]
            assert VLLM_NO_TOOLS in stats["tool_calling_fallback"] and stats["action_sources"] == ["block"] * 2
            requests = list(server.requests)
            assert "tools" in requests[0] and all("tools" not in r for r in requests[1:])
            # The next episode knows the endpoint: text from the start, the text-mode system message.
            observation, info = env.reset()
            policy.reset(observation, info)
            assert policy.act(observation, info) == "pwd"
            assert "tools" not in server.requests[-1]
            assert "Exactly ONE bash code block" in server.requests[-1]["messages"][0]["content"]
        finally:
            env.close()


def test_native_mode_says_what_to_do_when_the_endpoint_refuses_tools() -> None:
    env = make_env()
    with fake_tool_server(["```bash\nls\n```"], reject_tools=True) as server:
        policy = make_policy(server.base_url, tool_calling="native")
        try:
            observation, info = env.reset()
            policy.reset(observation, info)
            with pytest.raises(PolicyError, match=r"refused the request's tools.*set tool_calling='text'"):
                policy.act(observation, info)
        finally:
            env.close()
    assert len(server.requests) == 1


def test_a_context_overflow_that_names_the_functions_is_no_refusal_of_tools() -> None:
    """OpenAI's overflow message counts the tools ("... in the functions"): it shrinks the history, as any
    overflow does, and is never taken for an endpoint without tool calling."""
    overflow = (
        "This model's maximum context length is 4096 tokens. However, your messages resulted in 5000 tokens "
        "(4100 in the messages, 900 in the functions). Please reduce the length of the messages or functions."
    )
    body = json.dumps({"error": {"message": overflow, "type": "invalid_request_error"}}).encode()
    with _fixed_server(400, body) as server:
        policy = make_policy(server["base_url"])
        policy.reset("TASK", {"instance_id": "t", "tools": TOOLS})
        with pytest.raises(PolicyError, match="maximum context length") as raised:
            policy.act("TASK", {})
    assert "refused the request's tools" not in str(raised.value)
    assert policy.episode_stats()["tool_calling_fallback"] is None and "tools" in server["bodies"][0]


def test_auto_takes_a_bash_block_answer_and_writes_text_from_then_on() -> None:
    """What a server that takes tools= but ignores it does (llama.cpp's default chat format)."""
    with fake_tool_server(["THOUGHT: list.\n```bash\nls\n```", "```bash\npwd\n```"]) as server:
        policy = make_policy(server.base_url)
        policy.reset("TASK", {"instance_id": "t", "tools": TOOLS})
        assert policy.act("TASK", {}) == "ls"
        assert policy.act("a.py\n", {"exit_code": 0}) == "pwd"
    assert "tools" in server.requests[0] and "tools" not in server.requests[1]
    assert server.requests[1]["messages"][-1] == {
        "role": "user",
        "content": "<returncode>0</returncode>\n<output>\na.py\n\n</output>",
    }
    assert "answered with a bash block" in policy.episode_stats()["tool_calling_fallback"]


def test_a_reply_without_a_tool_call_is_re_asked_in_native_mode() -> None:
    script = ["I would run ls.\n```bash\nls\n```", Reply(None, [call("bash", "c1", command="ls")])]
    with fake_tool_server(script) as server:
        policy = make_policy(server.base_url, tool_calling="native")
        policy.reset("TASK", {"instance_id": "t", "tools": ["bash"]})
        action = policy.act("TASK", {})
    assert action == {"id": "c1", "type": "function", "function": {"name": "bash", "arguments": '{"command": "ls"}'}}
    error = server.requests[1]["messages"][-1]
    assert error["role"] == "user" and error["content"].startswith("FORMAT ERROR: your reply called no tool.")
    assert "Call one of your tools (bash)" in error["content"] and "run `submit` with the bash tool" in error["content"]
    assert server.requests[1]["tools"] == tool_schemas(["bash"])
    assert policy.episode_stats()["format_errors"] == 1 and not server.violations


def test_the_env_decides_the_mode_and_native_needs_tools() -> None:
    with fake_tool_server(["```bash\nls\n```"]) as server:
        policy = make_policy(server.base_url)
        policy.reset("TASK", {"instance_id": "t"})  # an env without tools: auto writes text
        assert policy.act("TASK", {}) == "ls" and "tools" not in server.requests[0]
        assert policy.episode_stats()["tool_calling"] == "text"
        offered = make_policy(server.base_url, tools=["bash", "submit"])  # the policy's own list wins
        offered.reset("TASK", {"instance_id": "t", "tools": TOOLS})
        offered.act("TASK", {})
        assert server.requests[-1]["tools"] == tool_schemas(["bash", "submit"])
        text = make_policy(server.base_url, tool_calling="text")
        text.reset("TASK", {"instance_id": "t", "tools": TOOLS})
        text.act("TASK", {})
        assert "tools" not in server.requests[-1]
    with pytest.raises(ConfigError, match="needs an env that takes tool calls"):
        make_policy("http://127.0.0.1:9/v1", tool_calling="native").reset("TASK", {"instance_id": "t"})


def test_history_drops_whole_turns_so_every_call_keeps_its_result() -> None:
    head = [{"role": "system", "content": "S"}, {"role": "user", "content": "TASK"}]
    turns: list[dict[str, Any]] = []
    for i in range(30):
        calls = [
            {"id": f"c{i}-{j}", "type": "function", "function": {"name": "bash", "arguments": "{}"}} for j in (0, 1)
        ]
        turns.append({"role": "assistant", "content": "x" * 50, "tool_calls": calls})
        turns += [{"role": "tool", "tool_call_id": c["id"], "content": "y" * 200} for c in calls]
    history, dropped = fit_history(head + turns, 3000)
    assert dropped % 3 == 0 and dropped > 0 and history[2]["role"] == "assistant"
    assert protocol_problem({"messages": history}) is None
    assert history[-1]["tool_call_id"] == "c29-1"


# -- the REAL model: SmolLM2-135M on llama.cpp's servers -------------------------------------------------


def _tools_endpoint() -> tuple[str | None, str]:
    """The tool-calling server's base URL (None: not configured), or why it cannot be used."""
    url = os.environ.get("SWE_GYM_LLM_TOOLS_BASE_URL")
    if not url and LLM_ENV_FILE.is_file():
        url = read_env_file(LLM_ENV_FILE).get("SWE_GYM_LLM_TOOLS_BASE_URL")
    if not url:
        return None, f"no tool-calling LLM endpoint configured (run .ci/provision_llm.sh, which writes {LLM_ENV_FILE})"
    try:
        urllib.request.urlopen(f"{url}/models", timeout=60).read()  # it answers after a generation in progress
    except OSError as exc:
        return None, f"the tool-calling LLM server at {url} does not answer ({exc})"
    return url, ""


def _require(problem: str | None) -> None:
    if problem:
        if IN_CI:
            pytest.fail(f"CI must run the LLM tool-calling tests: {problem}")
        pytest.skip(problem)


def _real_episode(base_url: str, mode: str, max_steps: int) -> tuple[list[Any], list[dict[str, Any]], LLMPolicy]:
    config, _ = provider_setup("local")
    policy = LLMPolicy({**REAL, "base_url": base_url, "model": os.environ["SWE_GYM_LLM_MODEL"], "tool_calling": mode})
    env = gym.make("swe_gym/SWE-v0", provider=config, tools=TOOLS, max_steps=max_steps, instance_ids=[TASK_ID])
    try:
        actions, infos, _ = run(env, policy)
    finally:
        env.close()
        policy.close()
    return actions, infos, policy


@pytest.mark.timeout(600)
def test_real_model_calls_tools_natively() -> None:
    _require(_llm_problem())
    url, problem = _tools_endpoint()
    _require(problem)
    assert url is not None
    actions, infos, policy = _real_episode(url, "native", max_steps=3)
    stats = policy.episode_stats()
    assert stats["tool_calling"] == "native" and stats["tool_calls"] >= 1
    assert 1 <= len(actions) <= 3 and infos[-1]["report"] is not None  # ended by a step, and graded
    for action, info, source in zip(actions, infos, stats["action_sources"], strict=True):
        if source == "tool_call":  # a real OpenAI tool_calls entry from llama.cpp, answered by the env
            assert isinstance(action, dict) and action["type"] == "function" and action["id"]
            assert info["tool_call_id"] in (action["id"], None)  # None: a call the env could not read
        else:
            assert source == "format_error" and isinstance(action, str)
    assert protocol_problem({"messages": policy.messages}) is None  # every call answered before the next request
    assert stats["prompt_tokens"] > 0 and stats["completion_tokens"] > 0
    assert not leftover_sandboxes()["local"]


@pytest.mark.timeout(600)
def test_real_server_without_tool_calling_takes_tools_and_auto_falls_back() -> None:
    _require(_llm_problem())
    actions, infos, policy = _real_episode(os.environ["SWE_GYM_LLM_BASE_URL"], "auto", max_steps=2)
    stats = policy.episode_stats()
    # llama.cpp's plain chat format takes tools= (no error) and answers in text: never a tool call.
    assert stats["tool_calls"] == 0 and all(isinstance(a, str) for a in actions)
    assert set(stats["action_sources"]) <= {"block", "format_error"} and infos[-1]["report"] is not None
    # auto switched to text exactly when a reply held a bash block (SmolLM2 writes one more often than not).
    fell_back = stats["tool_calling_fallback"] is not None
    assert fell_back == ("block" in stats["action_sources"]) and (stats["tool_calling"] == "text") == fell_back
    if fell_back:
        assert stats["tool_calling_fallback"] == "the endpoint answered with a bash block and no tool call"
