"""A step's request and reply go over the runner's channel right in the caller's thread (`RunnerChannel.call_here`,
`RunnerSandbox.exec_here`): what it observes is what the loop's path observes, it never waits on another call (it
gives way), and a runner that stops answering, or a Ctrl-C midway, ends the channel as on the loop. Real providers."""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Iterator
from typing import Any

import gymnasium as gym
import pytest

import swe_gym  # noqa: F401  (registers swe_gym/SWE-v0)
from swe_gym.envs.swe_env import SLOT
from swe_gym.errors import SandboxDiedError
from swe_gym.sandbox import Sandbox
from swe_gym.sandbox.backend import RunnerSandbox
from tests.conftest import leftover_sandboxes, make_sandbox, provider_setup

STREAM_PROVIDERS = ["local", "docker", "apptainer"]
COMMANDS = [
    "echo out; echo err >&2",
    "printf 'no newline'",
    "exit 3",
    "cd /tmp && pwd",
    "head -c 300000 /dev/zero | tr '\\0' x",
    "echo \"$0 $SHLVL\" ${BASH_EXECUTION_STRING:0:4}",
    "sleep 5",
]


def _loop_calls(backend: RunnerSandbox) -> list[str]:
    """The ops of every call ``backend`` makes through swe_gym's loop from now on (its ``_call`` wrapped)."""
    ops: list[str] = []
    inner = backend._call

    async def counted(header: dict[str, Any], payload: bytes = b"", **kw: Any) -> Any:
        ops.append(header["op"])
        return await inner(header, payload, **kw)

    backend._call = counted  # type: ignore[method-assign]
    return ops


@pytest.fixture(params=STREAM_PROVIDERS)
def env(request: pytest.FixtureRequest) -> Iterator[gym.Env[str, str]]:
    config, image = provider_setup(request.param)
    made = gym.make("swe_gym/SWE-v0", provider=config, step_timeout=1.0, **({"image": image} if image else {}))
    made.reset(seed=0)
    yield made
    made.close()


def test_a_step_skips_the_loop_and_observes_what_the_loop_path_observes(env: gym.Env[str, str]) -> None:
    host = env.unwrapped.host  # type: ignore[attr-defined]
    backend = env.unwrapped.sandbox.backend  # type: ignore[attr-defined]
    assert isinstance(backend, RunnerSandbox)
    through_loop = _loop_calls(backend)
    for command in COMMANDS:
        here = env.step(command)
        assert through_loop == [], f"{command!r} went through the loop"
        loop = host.call(host.act(SLOT, command))
        assert through_loop == ["exec"]
        through_loop.clear()
        assert here[0] == loop[0], command
        assert {k: v for k, v in here[4].items() if k not in ("step", "duration_s")} == {
            k: v for k, v in loop[4].items() if k not in ("step", "duration_s")
        }, command
        assert here[1:4] == loop[1:4] and here[4]["step"] + 1 == loop[4]["step"]
    assert here[4]["timed_out"] and "timed out after 1s" in here[0]


def _runner_pid(box: Sandbox) -> int:
    return int(box.exec("echo $PPID").output)


def test_a_runner_that_stops_answering_times_out_in_the_callers_thread() -> None:
    with make_sandbox("local-unisolated") as box:
        backend = box.aio.backend
        assert isinstance(backend, RunnerSandbox)
        pid = _runner_pid(box)
        os.kill(pid, signal.SIGSTOP)
        try:
            started = time.monotonic()
            with pytest.raises(SandboxDiedError, match=r"did not answer within 0\.5s") as caught:
                backend._call_here({"op": "ping"}, b"", timeout=0.5)
            assert caught.value.during_call and time.monotonic() - started < 5
        finally:
            os.kill(pid, signal.SIGCONT)
        for _ in range(2):  # dead for good, either way: its reply may still come
            with pytest.raises(SandboxDiedError):
                backend.exec_here("echo late")
            with pytest.raises(SandboxDiedError):
                box.exec("echo late")
    assert not any(leftover_sandboxes().values())


def test_ctrl_c_midway_abandons_the_channel() -> None:
    def interrupt(*_: object) -> None:
        raise KeyboardInterrupt

    with make_sandbox("local") as box:
        backend = box.aio.backend
        assert isinstance(backend, RunnerSandbox)
        previous = signal.signal(signal.SIGALRM, interrupt)
        try:
            signal.setitimer(signal.ITIMER_REAL, 0.3)
            with pytest.raises(KeyboardInterrupt):
                backend.exec_here("sleep 5; echo never")
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, previous)
        with pytest.raises(SandboxDiedError, match="abandoned midway"):
            backend.exec_here("echo next")
        with pytest.raises(SandboxDiedError, match="abandoned midway"):
            box.exec("echo next")
    assert not any(leftover_sandboxes().values())


def test_a_call_in_the_callers_thread_gives_way_and_the_loop_waits_its_turn() -> None:
    """While one call holds the sandbox, another from a caller's thread is refused at once (None: nothing ran; a
    step then goes through the loop), and a call from the loop waits for its turn, then runs."""
    with make_sandbox("local") as box:
        backend = box.aio.backend
        assert isinstance(backend, RunnerSandbox)
        done: dict[str, float] = {}

        def long_call() -> None:
            result = backend.exec_here("sleep 1; echo slow")
            assert result is not None and result.output == "slow\n"
            done["slow"] = time.monotonic()

        thread = threading.Thread(target=long_call)
        thread.start()
        time.sleep(0.3)
        started = time.monotonic()
        assert backend.exec_here("touch /tmp/refused") is None
        assert time.monotonic() - started < 0.5
        assert box.exec("echo waited").output == "waited\n"
        done["waited"] = time.monotonic()
        thread.join(timeout=30)
        assert done["slow"] <= done["waited"]
        assert box.exec("test -e /tmp/refused || echo never-ran").output == "never-ran\n"


def test_a_bash_tool_call_skips_the_loop_too() -> None:
    """With ``tools``, a bash call goes over the channel in the caller's thread; an editor call, a malformed call
    and submit go through the loop (their results as before)."""
    config, _ = provider_setup("local")
    env = gym.make("swe_gym/SWE-v0", provider=config, tools=["bash", "str_replace_editor", "submit"])
    try:
        env.reset(seed=0)
        backend = env.unwrapped.sandbox.backend  # type: ignore[attr-defined]
        through_loop = _loop_calls(backend)
        call = {"id": "c1", "type": "function", "function": {"name": "bash", "arguments": '{"command": "echo hi"}'}}
        observation, _, _, _, info = env.step(call)
        assert observation == "hi\n" and info["tool_call_id"] == "c1" and info["tool"] == "bash"
        assert "exec" not in through_loop
        bad = {"id": "c2", "type": "function", "function": {"name": "bash", "arguments": '{"cmd": 1}'}}
        observation, _, _, _, info = env.step(bad)
        assert "bash takes one argument" in observation and info["tool_call_id"] == "c2"
        view = {"command": "view", "path": "/tmp"}
        edit = {"id": "c3", "type": "function", "function": {"name": "str_replace_editor", "arguments": view}}
        observation, _, _, _, info = env.step(edit)
        assert info["tool_call_id"] == "c3" and through_loop, observation  # the editor's calls went through the loop
    finally:
        env.close()


def test_a_refusal_is_an_answer_and_the_channel_goes_on() -> None:
    """The runner refusing a request (a file that is not there, an op it does not know) is its answer, on either
    path: an error for that call, and the next call is served."""
    from swe_gym.errors import SandboxError

    with make_sandbox("local") as box:
        backend = box.aio.backend
        assert isinstance(backend, RunnerSandbox)
        for _ in range(2):
            with pytest.raises(SandboxError, match="refused 'read'") as caught:
                box.read_file("/nonexistent/file")
            assert not isinstance(caught.value, SandboxDiedError)
            with pytest.raises(SandboxError, match="refused 'no-such-op'") as caught:
                backend._call_here({"op": "no-such-op"}, b"", timeout=10)
            assert not isinstance(caught.value, SandboxDiedError)
        result = backend.exec_here("echo still")
        assert result is not None and result.output == "still\n"
        assert box.exec("echo served").output == "served\n"
