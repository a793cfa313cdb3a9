"""`local` specifics: bwrap isolation, workspace removal, cleanup of leftovers, the unisolated warning, a fork's copy
of a sandbox without a freezer."""

from __future__ import annotations

import asyncio
import logging
import os
import time
from pathlib import Path

import pytest

from swe_gym.sandbox import Sandbox, SandboxSpec, current_run_id
from swe_gym.sandbox.loop import run_sync
from swe_gym.sandbox.providers.cgroups import Cgroup
from swe_gym.sandbox.providers.local import warn_unisolated
from swe_gym.sandbox.registry import get_provider
from tests.conftest import make_sandbox, provider_setup


def test_bwrap_keeps_the_host_read_only() -> None:
    with make_sandbox("local") as box:
        result = box.exec("touch /usr/swe_gym_probe; echo > /etc/swe_gym_probe; ls /root >/dev/null; echo $?")
        assert "Read-only file system" in result.output
        assert not Path("/usr/swe_gym_probe").exists() and not Path("/etc/swe_gym_probe").exists()
        # Own PID namespace: PID 1 is our runner, and no host process is visible.
        assert "SWE_GYM_RUNNER" in box.exec("tr '\\0' ' ' < /proc/1/cmdline").output
        assert box.exec(f"test -e /proc/{os.getpid()} && echo visible || echo hidden").output == "hidden\n"


def test_workspace_is_removed_on_close() -> None:
    box = make_sandbox("local")
    home = box.aio.backend.home
    box.exec("echo data > file.txt; chmod 000 .")
    box.close()
    assert not home.exists()


def test_unisolated_fallback_warns(caplog: pytest.LogCaptureFixture) -> None:
    warn_unisolated.cache_clear()  # said once per process: maybe already, by an earlier test
    with caplog.at_level(logging.WARNING, logger="swe_gym"):
        with make_sandbox("local-unisolated") as box:
            assert Path(box.workdir).is_dir()
    assert "UNISOLATED" in caplog.text


def test_cleanup_removes_leftover_workspaces() -> None:
    box = make_sandbox("local-unisolated")
    home = box.aio.backend.home
    provider = get_provider("local")
    removed = run_sync(provider.cleanup(run_id=current_run_id()))
    assert box.id in removed and not home.exists()
    box.close()


def test_unisolated_fork_copies_workspace_and_home_to_a_new_directory() -> None:
    with make_sandbox("local-unisolated") as source:
        source.exec('echo repo > f; echo cfg > "$HOME/rc"')
        with source.fork() as fork:
            assert fork.workdir != source.workdir  # the workspace is a host directory: absolute paths differ
            assert fork.exec('cat f "$HOME/rc"').output == "repo\ncfg\n"
            fork.exec("echo fork > f")
            assert source.exec("cat f").output == "repo\n"


def test_without_a_freezer_a_fork_stops_the_daemons_it_copies(monkeypatch: pytest.MonkeyPatch) -> None:
    """No usable cgroups (no freezer): `still` stops the sandbox's processes with signals while its files are
    copied, a daemon detached with setsid included, and continues them after; the fork gets a consistent copy."""
    provider_setup("local")
    monkeypatch.setattr(Cgroup, "create", classmethod(lambda cls, name, resources: None))
    with Sandbox.create(SandboxSpec(), "local") as box:
        backend = box.aio.backend
        assert backend._cgroup is None and backend.isolated
        # (the sleep: the command's process group is killed as it ends, before setsid has run otherwise)
        daemon = "(setsid bash -c 'while :; do echo x >> /tmp/grow; done' >/dev/null 2>&1 &); sleep 0.5"
        assert box.exec(daemon).ok
        grow = backend.home / "tmp" / "grow"

        def size() -> int:
            return grow.stat().st_size if grow.exists() else 0

        async def watched() -> tuple[int, int, int]:
            deadline = time.monotonic() + 30
            while size() == 0 and time.monotonic() < deadline:
                await asyncio.sleep(0.01)
            async with backend.still():
                first = size()
                await asyncio.sleep(0.3)
                second = size()
            await asyncio.sleep(0.3)
            return first, second, size()

        first, second, after = run_sync(watched())
        assert 0 < first == second < after  # still while held, running again after
        with box.fork() as fork:
            copied = fork.read_file("/tmp/grow")
            assert copied and copied.endswith(b"x\n") and set(copied) <= set(b"x\n")
        assert size() > after  # the source's daemon still runs
        assert box.exec("echo alive").output == "alive\n"  # and its runner answers as before
