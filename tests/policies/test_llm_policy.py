"""`LLMPolicy`: reply parsing, a REAL small model (SmolLM2 behind llama.cpp's OpenAI-compatible server,
started by .ci/provision_llm.sh), and endpoints that are down, slow or answer garbage.

The misbehaving endpoints are tiny real HTTP servers written here (`_slow_server`, `_fixed_server`,
`_scripted_server`): the policy's real `openai` client talks to them over a socket; nothing is mocked.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
import time
import urllib.request
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import gymnasium as gym
import pytest

from swe_gym.envs.actions import ActionFormatError, parse_action
from swe_gym.envs.prompt import SUBMIT
from swe_gym.errors import ConfigError, PolicyError
from swe_gym.policies import LLMConfig, LLMPolicy, PolicyInfo, make_policy
from swe_gym.settings import read_env_file
from swe_gym.tasks import load_tasks
from swe_gym.wrappers import Trajectory, TrajectoryRecorder, read_trajectories
from tests.conftest import IN_CI, leftover_sandboxes, provider_setup

#: Written by .ci/provision_llm.sh.
LLM_ENV_FILE = Path("/etc/swe-gym/llm.env")
FORMAT_ERROR_ACTION = "printf '%s\\n' 'FORMAT ERROR: "
TASK_IDS = [t.instance_id for t in load_tasks("bundled")[:2]]


# -- parsing -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("reply", "command"),
    [
        ("THOUGHT: look around.\n\n```bash\nls -la\n```\n", "ls -la"),
        ("THOUGHT: x\n```sh\ngrep -rn foo .\n```", "grep -rn foo ."),
        ("THOUGHT: x\n```shell\ncat a.py\n```", "cat a.py"),
        ("THOUGHT: x\n```\nfind . -name '*.py'\n```", "find . -name '*.py'"),
        (
            "THOUGHT: x\n```bash\ncat <<'EOF' > f.py\nprint(1)\nEOF\npython3 f.py\n```",
            "cat <<'EOF' > f.py\nprint(1)\nEOF\npython3 f.py",
        ),
        ("THOUGHT: done.\n```bash\nsubmit\n```", SUBMIT),
        (
            "THOUGHT: done.\n```bash\necho COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT\n```",
            "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT",
        ),
        (
            "Here is the code:\n```python\nx = 1\n```\nand the command:\n```bash\npython3 -m pytest -q\n```",
            "python3 -m pytest -q",
        ),
        ("  ```bash\n  ls\n  ```", "ls"),
    ],
)
def test_one_command_block_is_the_action(reply: str, command: str) -> None:
    assert parse_action(reply) == command


@pytest.mark.parametrize(
    ("reply", "reason"),
    [
        ("I would list the files first and then read them.", "no bash block"),
        ("", "empty"),
        ("   \n", "empty"),
        ("```bash\nls\n```\nthen\n```bash\npwd\n```", "2 bash blocks"),
        ("```bash\n\n```", "block is empty"),
        ("```python\nprint(1)\n```", "```python block is not a command"),
        ("THOUGHT: x\n```bash\nls -la\n", "not closed"),
        ("inline `ls` is not a block", "no bash block"),
    ],
)
def test_unusable_replies_are_format_errors(reply: str, reason: str) -> None:
    with pytest.raises(ActionFormatError, match=reason):
        parse_action(reply)


def test_a_reply_cut_at_the_token_limit_says_so() -> None:
    with pytest.raises(ActionFormatError, match="cut off at the token limit"):
        parse_action("THOUGHT: x\n```bash\ncat <<'EOF' > big.py\n", truncated=True)


def test_config_needs_a_model_and_reads_the_env_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SWE_GYM_LLM_MODEL", raising=False)
    monkeypatch.delenv("SWE_GYM_LLM_BASE_URL", raising=False)
    monkeypatch.delenv("SWE_GYM_LLM_ENV_FILE", raising=False)
    with pytest.raises(ConfigError, match="needs a model name"):
        LLMPolicy()
    env_file = tmp_path / "llm.env"
    env_file.write_text("# comment\nSWE_GYM_LLM_BASE_URL=http://127.0.0.1:9/v1\nSWE_GYM_LLM_MODEL=tiny\n")
    monkeypatch.setenv("SWE_GYM_LLM_ENV_FILE", str(env_file))
    config = LLMConfig()
    assert (config.base_url, config.model) == ("http://127.0.0.1:9/v1", "tiny")
    assert "api_key" not in repr(config)
    assert isinstance(make_policy("llm", llm={"model": "m", "base_url": "http://127.0.0.1:9/v1"}), LLMPolicy)


def test_history_keeps_task_and_recent_turns_within_budget() -> None:
    policy = LLMPolicy({"base_url": "http://127.0.0.1:9/v1", "model": "m", "context_budget_chars": 3000})
    policy.reset("TASK: fix the bug", {"instance_id": "t"})
    for i in range(40):
        policy.messages += [
            {"role": "assistant", "content": f"THOUGHT: {i}\n```bash\necho {i}\n```" + "." * 100},
            {"role": "user", "content": f"<output>{i}</output>" + "x" * 200},
        ]
    history = policy._history()
    assert sum(len(m["content"]) for m in history) <= 3000
    assert [m["role"] for m in history[:2]] == ["system", "user"] and "TASK: fix the bug" in history[1]["content"]
    assert "earlier messages of this conversation were omitted" in history[1]["content"]
    assert history[-1]["content"].startswith("<output>39</output>")
    roles = [m["role"] for m in history[2:]]
    assert roles == ["assistant", "user"] * (len(roles) // 2)  # still alternating
    policy.messages.append({"role": "assistant", "content": "y" * 20000})
    assert len(policy._history()[-1]["content"]) < 3000  # one huge turn is cut, not sent whole


# -- tiny real HTTP servers that misbehave -------------------------------------------------------


@contextmanager
def _http_server(respond: Callable[[BaseHTTPRequestHandler, dict[str, Any]], None]) -> Iterator[dict[str, Any]]:
    """A real HTTP server on 127.0.0.1 whose POSTs are answered by ``respond``; yields its state."""
    state: dict[str, Any] = {"requests": 0, "bodies": [], "stop": threading.Event()}

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            state["requests"] += 1
            state["bodies"].append(json.loads(body or b"{}"))
            respond(self, state)

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    state["base_url"] = f"http://127.0.0.1:{server.server_address[1]}/v1"
    try:
        yield state
    finally:
        state["stop"].set()
        server.shutdown()
        server.server_close()


def _send(handler: BaseHTTPRequestHandler, status: int, body: bytes, content_type: str = "application/json") -> None:
    handler.send_response(status)
    handler.send_header("Content-Type", content_type)
    handler.send_header("Content-Length", str(len(body)))
    handler.end_headers()
    handler.wfile.write(body)


def _completion(content: str | None, *, choices: bool = True) -> bytes:
    choice = {"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}
    return json.dumps(
        {
            "id": "x",
            "object": "chat.completion",
            "created": 0,
            "model": "m",
            "choices": [choice] if choices else [],
            "usage": {"prompt_tokens": 11, "completion_tokens": 7, "total_tokens": 18},
        }
    ).encode()


@contextmanager
def _slow_server(delay_s: float) -> Iterator[dict[str, Any]]:
    """Accepts the request, then says nothing for ``delay_s`` (or until the test ends)."""

    def respond(handler: BaseHTTPRequestHandler, state: dict[str, Any]) -> None:
        if not state["stop"].wait(delay_s):
            _send(handler, 200, _completion("```bash\nls\n```"))

    with _http_server(respond) as state:
        yield state


@contextmanager
def _fixed_server(status: int, body: bytes, content_type: str = "application/json") -> Iterator[dict[str, Any]]:
    """Answers every request with the same status and body."""
    with _http_server(lambda handler, state: _send(handler, status, body, content_type)) as state:
        yield state


@contextmanager
def _scripted_server(replies: list[str]) -> Iterator[dict[str, Any]]:
    """Answers request i with a chat completion whose content is ``replies[i]`` (the last one repeats)."""

    def respond(handler: BaseHTTPRequestHandler, state: dict[str, Any]) -> None:
        _send(handler, 200, _completion(replies[min(state["requests"], len(replies)) - 1]))

    with _http_server(respond) as state:
        yield state


def _policy(base_url: str, **config: Any) -> LLMPolicy:
    defaults = {"model": "m", "max_retries": 1, "retry_backoff_s": 0.05, "request_timeout_s": 5.0}
    policy = LLMPolicy({"base_url": base_url, **defaults, **config})
    policy.reset("TASK: fix the bug", {"instance_id": "t"})
    return policy


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_endpoint_down_is_a_clear_policy_error_and_no_sandbox_leaks(tmp_path: Path) -> None:
    provider_setup("local")
    policy = _policy(f"http://127.0.0.1:{_closed_port()}/v1", max_retries=2)
    env = TrajectoryRecorder(
        gym.make("swe_gym/SWE-v0", max_steps=3), tmp_path / "t.jsonl", policy=policy, policy_stats=policy.episode_stats
    )
    started = time.monotonic()
    try:
        observation, info = env.reset(seed=0)
        policy.reset(observation, info)
        with pytest.raises(PolicyError, match=r"failed 3 time\(s\); last error: cannot connect"):
            env.step(policy.act(observation, info))
    finally:
        env.close()
    assert time.monotonic() - started < 30
    assert info["sandbox_id"] not in leftover_sandboxes()["local"]
    (record,) = read_trajectories(tmp_path / "t.jsonl")
    assert record.unfinished and record.actions == []
    assert record.policy == PolicyInfo(name="llm", model="m") and record.run_id
    assert record.policy_stats["retries"] == 2 and len(record.policy_stats["errors"]) == 3


def test_endpoint_down_through_the_cli_is_one_line_and_leaves_no_sandbox(tmp_path: Path) -> None:
    provider_setup("local")
    run_id = f"llmdown{uuid.uuid4().hex[:8]}"
    result = _swe_gym(
        "rollout", "--policy", "llm", "--episodes", "1", "--max-steps", "2", "--out", str(tmp_path / "t.jsonl"),
        "--llm-base-url", f"http://127.0.0.1:{_closed_port()}/v1", "--llm-model", "m", "--llm-max-retries", "1",
        env={"SWE_GYM_RUN_ID": run_id},
    )  # fmt: skip
    assert result.returncode == 2, result.stderr
    assert result.stderr.strip().splitlines()[-1].startswith("error: the model endpoint http://127.0.0.1:")
    assert "Traceback" not in result.stderr
    assert not leftover_sandboxes(run_id)["local"]


def test_slow_endpoint_times_out_within_bounds() -> None:
    with _slow_server(60) as server:
        policy = _policy(server["base_url"], request_timeout_s=1.0, max_retries=1)
        started = time.monotonic()
        with pytest.raises(PolicyError, match="timed out"):
            policy.act("TASK", {})
        assert time.monotonic() - started < 10
        assert server["requests"] == 2


@contextmanager
def _trickle_server() -> Iterator[dict[str, Any]]:
    """Answers 200 with headers at once, then one byte of body every 0.2 s, never finishing: no read ever
    times out, so only a deadline on the whole request ends it."""

    def respond(handler: BaseHTTPRequestHandler, state: dict[str, Any]) -> None:
        handler.send_response(200)
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Content-Length", "1000000")
        handler.end_headers()
        try:
            while not state["stop"].wait(0.2):
                handler.wfile.write(b" ")
                handler.wfile.flush()
        except OSError:  # the client gave up and closed the connection
            state["closed"] = state.get("closed", 0) + 1

    with _http_server(respond) as state:
        yield state


def _client_threads() -> set[threading.Thread]:
    """Live threads, but the test servers' own (their serving loop, and one per request they serve)."""
    return {t for t in threading.enumerate() if not any(n in t.name for n in ("process_request", "serve_forever"))}


def test_a_trickling_endpoint_is_cut_at_the_deadline_and_leaves_no_thread() -> None:
    with _scripted_server(["```bash\nls\n```"]) as warm:  # the loop and the client's pools exist from here on
        assert _policy(warm["base_url"]).act("TASK", {}) == "ls"
    before = _client_threads()
    with _trickle_server() as server:
        for _ in range(3):
            policy = _policy(server["base_url"], request_timeout_s=1.0, max_retries=1, retry_backoff_s=0.1)
            started = time.monotonic()
            with pytest.raises(PolicyError, match=r"timed out \(no complete answer within 2.1 s\)"):
                policy.act("TASK", {})
            assert time.monotonic() - started < 10
            policy.close()
        assert server["requests"] == 3  # the deadline spans the client's tries: the first one used it all
        deadline = time.monotonic() + 10
        while server.get("closed", 0) < 3 and time.monotonic() < deadline:  # each abandoned request hung up
            time.sleep(0.05)
        assert server.get("closed", 0) == 3
        assert _client_threads() <= before, "a request given up on left a thread behind"  # the server still trickles


def test_retries_are_the_clients_and_wait_the_configured_backoff() -> None:
    with _fixed_server(503, b'{"error": {"message": "loading model"}}') as server:
        policy = _policy(server["base_url"], max_retries=2, retry_backoff_s=0.5)
        started = time.monotonic()
        with pytest.raises(PolicyError, match=r"failed 3 time\(s\); last error: HTTP 503"):
            policy.act("TASK", {})
        assert time.monotonic() - started >= 0.5 + 1.0  # 0.5 s, then doubled
    stats = policy.episode_stats()
    assert server["requests"] == 3 and stats["retries"] == 2
    assert stats["errors"][:2] == ["HTTP 503", "HTTP 503"] and stats["errors"][2].startswith("HTTP 503 (")


@pytest.mark.parametrize(
    ("body", "content_type"),
    [(b"{not json", "application/json"), (b"<html>502 proxy</html>", "text/html"), (b'"a string"', "application/json")],
)
def test_garbage_answers_are_retried_then_a_clear_error(body: bytes, content_type: str) -> None:
    with _fixed_server(200, body, content_type) as server:
        policy = _policy(server["base_url"], max_retries=1)
        with pytest.raises(PolicyError, match="not a chat completion"):
            policy.act("TASK", {})
        assert server["requests"] == 2


def test_server_errors_are_retried_and_client_errors_are_not() -> None:
    with _fixed_server(503, b'{"error": {"message": "loading model"}}') as server:
        with pytest.raises(PolicyError, match="HTTP 503"):
            _policy(server["base_url"], max_retries=2).act("TASK", {})
        assert server["requests"] == 3
    with _fixed_server(404, b'{"error": {"message": "model nope not found"}}') as server:
        with pytest.raises(PolicyError, match=r"refused the request: NotFoundError.*model nope not found"):
            _policy(server["base_url"], max_retries=2).act("TASK", {})
        assert server["requests"] == 1


def test_empty_choices_take_the_format_error_path(tmp_path: Path) -> None:
    with _fixed_server(200, _completion(None, choices=False)) as server:
        policy = _policy(server["base_url"], max_format_errors=2)
        action = policy.act("TASK", {})
    assert action.startswith(FORMAT_ERROR_ACTION) and server["requests"] == 3
    output = subprocess.run(["bash", "-c", action], capture_output=True, text=True, cwd=tmp_path).stdout
    assert output.startswith("FORMAT ERROR: your reply is empty. Nothing was run.")
    stats = policy.episode_stats()
    assert stats["format_errors"] == 3 and stats["action_sources"] == ["format_error"]
    assert stats["prompt_tokens"] == 33 and stats["model_calls"] == 3


def test_prose_is_re_asked_within_the_same_act() -> None:
    replies = ["I will look at the files.", "THOUGHT: list them.\n\n```bash\nls\n```", "```bash\nsubmit\n```"]
    with _scripted_server(replies) as server:
        policy = _policy(server["base_url"])
        assert policy.act("TASK", {}) == "ls"
        assert policy.act("a.py\n", {"exit_code": 0}) == SUBMIT
    second = server["bodies"][1]["messages"]
    assert second[-1]["role"] == "user" and "FORMAT ERROR: your reply holds no bash block" in second[-1]["content"]
    third = server["bodies"][2]["messages"]
    assert third[-1] == {"role": "user", "content": "<returncode>0</returncode>\n<output>\na.py\n\n</output>"}
    assert policy.episode_stats()["action_sources"] == ["block", "block"]


# -- a REAL model: SmolLM2-135M-Instruct on llama.cpp's OpenAI-compatible server ------------------


def _llm_problem() -> str | None:
    base_url, model = os.environ.get("SWE_GYM_LLM_BASE_URL"), os.environ.get("SWE_GYM_LLM_MODEL")
    if not (base_url and model) and LLM_ENV_FILE.is_file():
        values = read_env_file(LLM_ENV_FILE)
        base_url, model = values.get("SWE_GYM_LLM_BASE_URL"), values.get("SWE_GYM_LLM_MODEL")
    if not (base_url and model):
        return f"no LLM endpoint configured (run .ci/provision_llm.sh, which writes {LLM_ENV_FILE})"
    try:
        urllib.request.urlopen(f"{base_url}/models", timeout=60).read()  # it answers after a generation in progress
    except OSError as exc:
        return f"the LLM server at {base_url} does not answer ({exc})"
    os.environ["SWE_GYM_LLM_BASE_URL"], os.environ["SWE_GYM_LLM_MODEL"] = base_url, model
    return None


@pytest.fixture
def llm_endpoint() -> dict[str, str]:
    """The real model's endpoint; skips without it, and fails under CI."""
    problem = _llm_problem()
    if problem is not None:
        if IN_CI:
            pytest.fail(f"CI must run the LLM policy tests: {problem}")
        pytest.skip(problem)
    provider_setup("local")
    return {"base_url": os.environ["SWE_GYM_LLM_BASE_URL"], "model": os.environ["SWE_GYM_LLM_MODEL"]}


#: Small enough for SmolLM2's 4096-token context on 2 CPU cores.
REAL = {"max_tokens": 200, "context_budget_chars": 9000, "max_format_errors": 1, "request_timeout_s": 120}


def _check_record(record: Trajectory, max_steps: int) -> None:
    actions, stats = record.actions, record.policy_stats
    assert stats is not None and record.policy is not None and record.policy.name == "llm"
    assert not record.unfinished and 1 <= len(actions) <= max_steps
    assert record.terminated or record.truncated
    if record.terminated:  # ended by submit (or the marker), else by the step limit
        assert actions[-1] == SUBMIT or "COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT" in actions[-1]
    else:
        assert len(actions) == max_steps
    assert len(stats["action_sources"]) == len(actions)
    for action, source in zip(actions, stats["action_sources"], strict=True):
        assert source in ("block", "format_error")
        assert (source == "format_error") == action.startswith(FORMAT_ERROR_ACTION)
    assert stats["prompt_tokens"] > 0 and stats["completion_tokens"] > 0
    assert len(stats["latencies_s"]) == stats["model_calls"] >= len(actions)
    assert all(latency > 0 for latency in stats["latencies_s"])
    assert isinstance(record.patch, str) and record.report is not None


@pytest.mark.timeout(600)  # a CPU-bound model on a busy 2-core machine
def test_real_model_runs_episodes_and_records_tokens(llm_endpoint: dict[str, str], tmp_path: Path) -> None:
    policy = LLMPolicy({**llm_endpoint, **REAL})
    out, max_steps = tmp_path / "llm.jsonl", 4
    env = TrajectoryRecorder(
        gym.make("swe_gym/SWE-v0", max_steps=max_steps, instance_ids=TASK_IDS),
        out,
        policy=policy,
        policy_stats=policy.episode_stats,
    )
    try:
        for task_id in TASK_IDS:
            observation, info = env.reset(options={"task_id": task_id})
            policy.reset(observation, info)
            done = False
            while not done:
                observation, _, terminated, truncated, info = env.step(policy.act(observation, info))
                assert "step" in info
                done = terminated or truncated
    finally:
        env.close()
        policy.close()
    records = read_trajectories(out)
    assert [r.instance_id for r in records] == TASK_IDS
    for record in records:
        _check_record(record, max_steps)
        assert record.policy == PolicyInfo(name="llm", model=llm_endpoint["model"])


@pytest.mark.timeout(600)
def test_real_model_through_the_cli(llm_endpoint: dict[str, str], tmp_path: Path) -> None:
    out = tmp_path / "cli.jsonl"
    result = _swe_gym(
        "rollout", "--policy", "llm", "--instance-id", TASK_IDS[0], "--max-steps", "3", "--out", str(out),
        "--llm-max-tokens", "200", "--llm-context-chars", "9000",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert "mean tokens" in result.stdout
    (record,) = read_trajectories(out)
    _check_record(record, 3)


def _swe_gym(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "swe_gym.cli.main", *args]
    return subprocess.run(command, capture_output=True, text=True, env={**os.environ, **(env or {})}, timeout=560)
