"""The runner channel cannot be forged from inside the sandbox, a corrupted one is never accepted, and
sandboxes die with their owner. Every test drives a real provider; forgeries are what graded code can do."""

from __future__ import annotations

import asyncio
import base64
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
import uuid
from pathlib import Path

import pytest

from swe_gym.errors import ChannelTamperedError, SandboxDiedError
from swe_gym.sandbox import ExecResult, Sandbox, SandboxStatus, get_provider
from tests.conftest import RUNNER_IS_PID1, kill_from_outside, make_sandbox, provider_setup

#: A complete reply as an unkeyed forger would write it: exit 0, "all tests passed", a made-up MAC.
FAKE_REPLY = (
    "0" * 64
    + ' {"ok": true, "id": "x", "exit_code": 0, "timed_out": false, "head_size": 17, "dropped": 0, "size": 17}\n'
    + "all tests passed\n"
)
STREAM_PROVIDERS = ["local", "docker", "apptainer"]


def _sh(text: str) -> str:
    return "'" + text.replace("'", "'\\''") + "'"


@pytest.mark.parametrize("name", [*STREAM_PROVIDERS, "opensandbox"])
def test_commands_cannot_open_the_runners_streams_or_environment(name: str) -> None:
    """The runner is non-dumpable: even root in the sandbox (no CAP_SYS_PTRACE) cannot open its fds or environ."""
    with make_sandbox(name) as box:
        probe = (
            f"for f in fd/0 fd/1 fd/2 environ mem; do "
            f"if printf %s {_sh(FAKE_REPLY)} 2>/dev/null >/proc/$PPID/$f; then echo opened $f; "
            f"elif cat /proc/$PPID/$f >/dev/null 2>&1; then echo read $f; else echo denied $f; fi; done"
        )
        result = box.exec(probe, timeout=30)
        assert result.output.split("\n")[:-1] == [f"denied {f}" for f in ("fd/0", "fd/1", "fd/2", "environ", "mem")]
        assert box.exec("echo next").output == "next\n"  # nothing shifted


#: How a call reaches the runner: through swe_gym's loop (`Sandbox.exec`), or over the channel right in the calling
#: thread (`RunnerSandbox.exec_here`, what a Gymnasium step uses): the same checks either way.
PATHS = ["loop", "here"]


def _exec(box: Sandbox, path: str, command: str, timeout: float = 60) -> ExecResult:
    if path == "loop":
        return box.exec(command, timeout=timeout)
    result = box.aio.backend.exec_here(command, timeout=timeout)
    assert result is not None, "a free channel of a stream provider takes calls in the caller's thread"
    return result


def _forgeable_local() -> str:
    """The unisolated local sandbox runs commands as us: as root (CI) they can write into the runner's stdout."""
    provider_setup("local-unisolated")
    if os.geteuid() != 0:
        pytest.skip("only root (CAP_SYS_PTRACE) can write into a non-dumpable runner's stdout")
    return "local-unisolated"


@pytest.mark.parametrize("path", PATHS)
def test_forged_reply_is_rejected_and_the_channel_stays_dead(path: str) -> None:
    with make_sandbox(_forgeable_local()) as box:
        with pytest.raises(ChannelTamperedError, match=r"MAC|another request") as caught:
            _exec(box, path, f"printf %s {_sh(FAKE_REPLY)} > /proc/$PPID/fd/1; sleep 1", timeout=30)
        assert caught.value.during_call
        for later in PATHS:  # every later call, either way: the same error, never a reply
            with pytest.raises(ChannelTamperedError):
                _exec(box, later, "echo hello")
        assert box.status() is SandboxStatus.DEAD


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("junk", ["garbage\n", "{not json\n", "stray bytes without a newline "])
def test_malformed_bytes_before_the_reply_are_tampering(junk: str, path: str) -> None:
    with make_sandbox(_forgeable_local()) as box:
        with pytest.raises(ChannelTamperedError):
            _exec(box, path, f"printf %s {_sh(junk)} > /proc/$PPID/fd/1", timeout=30)


@pytest.mark.parametrize("path", PATHS)
def test_an_extra_frame_after_a_reply_never_shifts_the_next_one(path: str) -> None:
    with make_sandbox(_forgeable_local()) as box:
        # Escapes the step's process group, then writes once the real reply has gone out.
        late = f"sleep 0.5; printf %s {_sh(FAKE_REPLY)} > /proc/$1/fd/1"
        assert _exec(box, path, f"setsid sh -c {_sh(late)} _ $PPID & sleep 0.2; echo first").output == "first\n"
        time.sleep(1.5)
        for later in PATHS:
            with pytest.raises(ChannelTamperedError):
                _exec(box, later, "echo second")


def test_opensandbox_forged_reply_into_the_client_is_rejected() -> None:
    """On OpenSandbox the reply passes through a shell client any command can write to: the MAC catches it."""
    forged = f"SWE_GYM_REPLY_BEGIN\n{base64.b64encode(FAKE_REPLY.encode()).decode()}\nSWE_GYM_REPLY_END\n"
    with make_sandbox("opensandbox") as box:
        with pytest.raises(ChannelTamperedError) as caught:
            # The client's reader may still be starting when the command runs: wait for it.
            wait = "until pgrep -x sed >/dev/null; do sleep 0.05; done"
            box.exec(f"{wait}; printf %s {_sh(forged)} > /proc/$(pgrep -x sed | head -1)/fd/0; sleep 1", timeout=30)
        assert caught.value.during_call
        with pytest.raises(ChannelTamperedError):
            box.exec("echo hello")


@pytest.mark.parametrize(
    ("name", "path"), [("local-unisolated", "loop"), ("local-unisolated", "here"), ("opensandbox", "loop")]
)
def test_a_command_that_kills_the_runner_is_a_death_during_the_call(name: str, path: str) -> None:
    assert name not in RUNNER_IS_PID1
    with make_sandbox(name) as box:
        with pytest.raises(SandboxDiedError) as caught:
            _exec(box, path, "kill -9 $PPID; sleep 30", timeout=3)
        assert caught.value.during_call and not isinstance(caught.value, ChannelTamperedError)


@pytest.mark.parametrize(
    ("name", "path"), [*((name, path) for name in STREAM_PROVIDERS for path in PATHS), ("opensandbox", "loop")]
)
def test_a_sandbox_found_dead_is_not_a_death_during_the_call(name: str, path: str) -> None:
    with make_sandbox(name) as box:
        kill_from_outside(box)
        time.sleep(0.5)
        with pytest.raises(SandboxDiedError) as caught:
            _exec(box, path, "echo hello", timeout=10)
        assert not caught.value.during_call
        with pytest.raises(SandboxDiedError) as again:
            _exec(box, path, "echo hello", timeout=10)
        assert not again.value.during_call


def test_during_call_survives_pickling() -> None:
    import pickle

    error = pickle.loads(pickle.dumps(SandboxDiedError("gone", during_call=True)))
    assert error.during_call and str(error) == "gone"
    assert pickle.loads(pickle.dumps(ChannelTamperedError("forged"))).during_call
    assert not SandboxDiedError("gone").during_call


_OWNER = textwrap.dedent(
    """
    import json, sys
    from swe_gym.sandbox import Sandbox, SandboxSpec
    config, image = json.loads(sys.argv[1])
    box = Sandbox.create(SandboxSpec(image=image), config)
    backend = box.aio.backend
    home = getattr(backend, "home", None)
    print(json.dumps({"container": getattr(backend, "container_id", None),
                      "meta": str(home / "meta.json") if home else None}), flush=True)
    box.exec("sleep 300", timeout=600)
    """
)


def _gone(info: dict[str, str | None], runner: tuple[int, str] | None) -> bool:
    if info["container"]:
        import docker

        try:
            return docker.from_env().containers.get(info["container"]).status not in ("running", "paused")
        except docker.errors.NotFound:
            return True
    assert runner is not None
    try:
        stat = Path(f"/proc/{runner[0]}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return True
    return stat[19] != runner[1] or stat[0] == "Z"  # another process reusing the pid, or a zombie


@pytest.mark.parametrize("name", STREAM_PROVIDERS)
def test_sandbox_dies_with_its_sigkilled_owner_during_a_long_step(name: str) -> None:
    config, image = provider_setup(name)
    run_id = f"owner-{uuid.uuid4().hex[:8]}"
    owner = subprocess.Popen(
        [sys.executable, "-c", _OWNER, json.dumps([config, image])],
        stdout=subprocess.PIPE,
        env={**os.environ, "SWE_GYM_RUN_ID": run_id},
        cwd=Path(__file__).parents[2],
    )
    try:
        assert owner.stdout is not None
        info = json.loads(owner.stdout.readline())
        runner = None
        if info["meta"]:
            meta = json.loads(Path(info["meta"]).read_text())
            runner = (meta["runner_pid"], meta["runner_start"])
        time.sleep(1.0)  # the step has started
        assert not _gone(info, runner)
        owner.send_signal(signal.SIGKILL)
        owner.wait()
        deadline = time.monotonic() + 10
        while not _gone(info, runner) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert _gone(info, runner), f"{name} sandbox outlived its SIGKILLed owner by 10 s"
    finally:
        owner.kill()
        owner.wait()
        asyncio.run(get_provider(config).cleanup(run_id=run_id))
