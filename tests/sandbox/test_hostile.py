"""Hostile commands on the isolating providers: the host stays untouched, the sandbox recovers."""

from __future__ import annotations

from pathlib import Path

import pytest

from swe_gym.errors import SandboxDiedError, SandboxError
from swe_gym.sandbox import SandboxStatus
from tests.conftest import RUNNER_IS_PID1, leftover_sandboxes, make_sandbox


@pytest.fixture
def canary(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A host file that must survive everything the sandbox does (outside /tmp, which bwrap hides)."""
    path = Path.cwd() / ".pytest_cache" / "swe_gym_canary"
    path.parent.mkdir(exist_ok=True)
    path.write_text("alive")
    return path


def test_kill_all_processes(isolated_provider: str) -> None:
    """Where the runner is PID 1 it survives; elsewhere the sandbox is reported dead, never hangs, leaves nothing."""
    box = make_sandbox(isolated_provider)
    sandbox_id = box.aio.backend.id
    with box:
        if isolated_provider in RUNNER_IS_PID1:
            result = box.exec("kill -9 -1; echo after-kill", timeout=10)
            assert not result.timed_out
            assert box.exec("echo still-here").output == "still-here\n"
        else:  # OpenSandbox's execd is an ordinary process
            with pytest.raises(SandboxDiedError):
                box.exec("kill -9 -1; sleep 5; echo after-kill", timeout=10)
                box.exec("echo still-here", timeout=10)
            assert box.status() is SandboxStatus.DEAD
    assert sandbox_id not in leftover_sandboxes()[box.aio.backend.provider_name]


@pytest.mark.parametrize(
    "bomb", [":(){ :|:& };:", 'python3 -c "import os\nwhile True: os.fork()"'], ids=["bash", "python"]
)
def test_fork_bomb_is_contained_by_the_pids_limit(isolated_provider: str, bomb: str) -> None:
    with make_sandbox(isolated_provider) as box:
        box.exec(bomb, timeout=5)  # returns: the runner kills the bomb's process group when the step ends
        # ... and nothing of the bomb is left (the runner, its shell, `ls`, `grep`, and an execd's own few).
        left = box.exec("sleep 1; ls /proc | grep -c '^[0-9]'", timeout=60)
        assert left.output.strip().isdigit() and int(left.output) < 20, left.output
        assert box.exec("echo recovered", timeout=30).output == "recovered\n"


def test_rm_rf_root_does_not_touch_the_host(isolated_provider: str, canary: Path) -> None:
    with make_sandbox(isolated_provider) as box:
        try:
            box.exec("rm -rf --no-preserve-root / 2>/dev/null; echo done", timeout=60)
        except SandboxDiedError:
            # Only where the sandbox's own daemon lives on its file system (OpenSandbox's execd).
            assert isolated_provider not in RUNNER_IS_PID1
        try:
            box.exec("true")
        except SandboxError:
            pass  # the sandbox may be unusable now; only the host matters
    assert canary.read_text() == "alive"
    assert Path("/usr/bin/env").exists()


def test_memory_hog_is_limited(isolated_provider: str) -> None:
    with make_sandbox(isolated_provider, resources={"memory_mb": 256}) as box:
        result = box.exec("python3 -c 'b = bytearray(1 << 30); print(len(b))'", timeout=60)
        assert result.exit_code != 0
        assert box.exec("echo fine").output == "fine\n"


def test_a_fifo_or_device_where_the_host_reads_or_writes_is_refused_at_once(provider_name: str) -> None:
    """Code in the sandbox can put a FIFO (or a link to a device) where the library reads a file (a reward file, a
    listing, an editor's view) or writes one: opening it would block the runner until the call's timeout killed
    the sandbox. Refused without waiting; the sandbox goes on. (OpenSandbox's writes go through its execd's file
    API, which is the server's to guard.)"""
    with make_sandbox(provider_name) as box:
        box.exec("mkfifo pipe && ln -s /dev/zero zero && ln -s pipe link", timeout=30)
        for path in ("pipe", "zero", "link"):
            with pytest.raises(SandboxError, match="not a regular file"):
                box.read_file(path)
        if provider_name != "opensandbox":  # its writes go through execd's file API, not our runner
            with pytest.raises(SandboxError):  # a FIFO nobody reads: ENXIO when opened without blocking
                box.write_file("pipe", b"x")
            with pytest.raises(SandboxError, match="not a regular file"):
                box.write_file("zero", b"x")
        box.write_file("plain", b"ok")
        assert box.read_file("plain") == b"ok"
        assert box.exec("echo alive").output == "alive\n"
