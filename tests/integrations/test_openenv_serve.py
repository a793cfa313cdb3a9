"""``swe-gym serve`` run as a user runs it (a child process), driven by OpenEnv's own client.

Episodes on bundled tasks on the bwrap-isolated local provider: the gold patch resolves (reward 1.0), a wrong
submission scores 0.0, a task whose setup fails is masked in the step result; the token is refused when
wrong or missing; a session past the bound is refused; a session idle past the timeout, a client killed
with SIGKILL and a stopped server leave no sandbox behind (found by the server's run id label).
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from websockets.exceptions import ConnectionClosed

from swe_gym.policies.oracle import apply_patch_command
from swe_gym.shown_text import to_bytes
from swe_gym.tasks import load_tasks
from tests.conftest import IN_CI, leftover_sandboxes, provider_setup

try:
    from openenv.core import GenericEnvClient

    from swe_gym.integrations.openenv import ServedEnv, client_url
except ImportError:
    if IN_CI:
        raise
    pytest.skip("openenv-core is not installed (pip install 'swe_gym[openenv]')", allow_module_level=True)

GOOD = load_tasks("bundled")[0]
#: The same task with a setup script that fails: the environment's failure, so its episode is masked.
BROKEN = GOOD.model_copy(update={"instance_id": "swe-gym__broken-1", "setup_script": "echo no-setup; exit 3"})


def wait_for(condition: Callable[[], bool], what: str, timeout_s: float = 90.0) -> None:
    """Poll ``condition`` until it holds; a failure naming ``what`` if it never does."""
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            pytest.fail(f"never happened: {what}")
        time.sleep(0.1)


def sessions(served: ServedEnv) -> dict[str, Any]:
    return served.get("/sessions")


def no_sandboxes(run_id: str) -> bool:
    return not any(leftover_sandboxes(run_id).values())


class Server:
    """A served env and the run id its sandboxes carry."""

    def __init__(self, tmp: Path, *args: str) -> None:
        self.run_id = f"serve{uuid.uuid4().hex[:8]}"
        tasks = tmp / f"{self.run_id}.jsonl"
        tasks.write_text("".join(json.dumps(t.model_dump(mode="json")) + "\n" for t in (GOOD, BROKEN)))
        self.served = ServedEnv("--tasks", str(tasks), *args, env={"SWE_GYM_RUN_ID": self.run_id})

    def client(self) -> Any:
        """OpenEnv's own client (its sync form), connected to this server with its token."""
        return GenericEnvClient(base_url=self.served.base_url).sync()

    def idle(self) -> bool:
        return sessions(self.served)["active_sessions"] == 0 and no_sandboxes(self.run_id)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    provider_setup("local")
    server = Server(tmp_path_factory.mktemp("serve"), "--max-sessions", "3", "--max-steps", "5")
    with server.served:
        yield server
    assert no_sandboxes(server.run_id)


@pytest.fixture
def quiet(server: Server) -> Server:
    """``server`` once the sessions of earlier tests are gone (a client's close is answered asynchronously)."""
    wait_for(server.idle, "the earlier sessions closed")
    return server


def test_the_gold_patch_resolves_over_tool_calls_and_bash(quiet: Server) -> None:
    with quiet.client() as env:
        result = env.reset(task_id=GOOD.instance_id)
        assert not result.done and result.reward is None
        assert result.observation["info"]["instance_id"] == GOOD.instance_id
        state = env.state()
        assert state["instance_id"] == GOOD.instance_id and state["session_id"] in {
            s["session_id"] for s in sessions(quiet.served)["sessions"]
        }
        result = env.step({"command": apply_patch_command(GOOD.patch)})
        assert not result.done and result.observation["info"]["exit_code"] == 0
        echo = {"id": "call_1", "type": "function", "function": {"name": "bash", "arguments": '{"command": "echo hi"}'}}
        result = env.step({"tool_call": echo})
        assert result.observation["output"] == "hi\n" and result.observation["info"]["tool_call_id"] == "call_1"
        result = env.step({"tool_call": {"name": "submit", "arguments": {}}})
        info = result.observation["info"]
        assert result.done and result.observation["terminated"] and result.reward == 1.0
        assert info["resolved"] and not info["masked"] and info["report"]["resolved"]
        assert env.state()["step_count"] == 3


def test_a_wrong_submission_scores_zero(quiet: Server) -> None:
    with quiet.client() as env:
        env.reset(task_id=GOOD.instance_id)
        env.step({"command": "echo wrong >> README.md"})
        result = env.step({"command": "submit"})
        info = result.observation["info"]
        assert result.done and result.reward == 0.0
        assert not info["resolved"] and not info["masked"] and "README.md" in info["patch"]


def test_a_patch_not_utf8_or_too_big_ends_the_served_step_unresolved(quiet: Server) -> None:
    """A diff that is not UTF-8 is graded and comes marked, as observations are (`to_bytes` gives its bytes
    back); a sparse 10 GiB file ends the episode unresolved with ``patch_error``: neither raises."""
    with quiet.client() as env:
        env.reset(task_id=GOOD.instance_id)
        env.step({"command": r"printf 'caf\351\n' > latin1.txt"})
        result = env.step({"command": "submit"})
        info = result.observation["info"]
        assert result.done and result.observation["terminated"] and result.reward == 0.0 and not info["masked"]
        assert info["patch_error"] is None and b"+caf\xe9\n" in to_bytes(info["patch"])
        env.reset(task_id=GOOD.instance_id)
        env.step({"command": "truncate -s 10G sparse.img"})
        result = env.step({"command": "submit"})
        info = result.observation["info"]
        assert result.done and result.observation["terminated"] and result.reward == 0.0 and not info["masked"]
        assert "'sparse.img', a file of 10240.0 MiB: over the patch limit" in info["patch_error"]


def test_a_setup_that_fails_is_masked_in_the_step_result(quiet: Server) -> None:
    with quiet.client() as env:
        result = env.reset(task_id=BROKEN.instance_id)
        assert result.observation["info"]["masked"] and "no-setup" in result.observation["info"]["masked_reason"]
        result = env.step({"command": "ls"})
        assert result.done and result.observation["truncated"] and result.reward == 0.0
        assert result.observation["info"]["masked"] and "episode masked" in result.observation["output"]
        result = env.reset(task_id=GOOD.instance_id)  # the session goes on
        assert env.step({"command": "echo ok"}).observation["output"] == "ok\n"


def test_bad_input_is_a_clear_error(quiet: Server) -> None:
    with quiet.client() as env:
        with pytest.raises(RuntimeError, match="unknown task_id 'nope'"):
            env.reset(task_id="nope")
        with pytest.raises(RuntimeError, match="unknown colour"):
            env.reset(colour="red")
        env.reset(task_id=GOOD.instance_id)
        with pytest.raises(RuntimeError, match="exactly one of 'command'"):
            env.step({"command": "ls", "tool_call": {"name": "submit"}})


def test_the_token_is_required(quiet: Server) -> None:
    served = quiet.served
    for url in (served.url, client_url(served.url, "wrong-token")):
        with pytest.raises(ConnectionError, match="403"):
            GenericEnvClient(base_url=url).sync().connect()
        request = urllib.request.Request(f"{served.url}/sessions", headers={"Authorization": "Bearer wrong"})
        with pytest.raises(urllib.error.HTTPError, match="401"):
            urllib.request.urlopen(request if "wrong" in url else f"{served.url}/sessions", timeout=10)
    assert sessions(served)["active_sessions"] == 0


def test_a_session_past_the_bound_is_refused(quiet: Server) -> None:
    clients = [quiet.client().connect() for _ in range(3)]
    try:
        wait_for(lambda: sessions(quiet.served)["active_sessions"] == 3, "three sessions open")
        with quiet.client() as fourth, pytest.raises(ConnectionClosed, match="server at capacity: 3/3 sessions"):
            fourth.reset(task_id=GOOD.instance_id)
        clients.pop().close()
        wait_for(lambda: sessions(quiet.served)["active_sessions"] == 2, "a slot freed")
        with quiet.client() as again:
            assert not again.reset(task_id=GOOD.instance_id).done
    finally:
        for client in clients:
            client.close()


CLIENT = """
import sys
from openenv.core import GenericEnvClient
env = GenericEnvClient(base_url=sys.argv[1]).sync()
env.connect()
env.reset(task_id=sys.argv[2])
env.step({"command": "echo started > /tmp/mark"})
print("ready", flush=True)
sys.stdin.read()
"""


def test_clients_killed_with_sigkill_leave_no_sandbox(quiet: Server) -> None:
    """Two client processes, each mid-episode (agent and grading sandboxes up), killed at once."""
    argv = [sys.executable, "-c", CLIENT, quiet.served.base_url, GOOD.instance_id]
    clients = [subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True) for _ in range(2)]
    try:
        for client in clients:
            assert client.stdout is not None and client.stdout.readline() == "ready\n"
        assert sessions(quiet.served)["active_sessions"] == 2
        assert len(leftover_sandboxes(quiet.run_id)["local"]) >= 2
    finally:
        for client in clients:
            client.send_signal(signal.SIGKILL)
            client.wait()
    wait_for(quiet.idle, "the killed clients' sessions and sandboxes gone")


def test_an_idle_session_is_closed_and_says_so(tmp_path: Path) -> None:
    provider_setup("local")
    server = Server(tmp_path, "--idle-timeout", "1")
    with server.served, server.client() as env:
        env.reset(task_id=GOOD.instance_id)
        env.step({"command": "sleep 2"})  # a call longer than the timeout: the session is busy, not idle
        assert sessions(server.served)["active_sessions"] == 1
        wait_for(server.idle, "the idle session closed, its sandboxes removed")
        with pytest.raises(RuntimeError, match="sent nothing for 1 s, the server's idle timeout"):
            env.step({"command": "ls"})


def test_stopping_the_server_removes_every_session(tmp_path: Path) -> None:
    provider_setup("local")
    server = Server(tmp_path)
    with server.served:
        clients = [server.client().connect() for _ in range(2)]
        for client in clients:
            client.reset(task_id=GOOD.instance_id)
        assert len(leftover_sandboxes(server.run_id)["local"]) >= 2
        assert server.served.stop() in (0, -signal.SIGTERM)  # uvicorn ends by the signal it handled
    assert no_sandboxes(server.run_id)
