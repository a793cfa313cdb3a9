"""`local` specifics: bwrap isolation, workspace removal, cleanup of leftovers, the unisolated warning."""

from __future__ import annotations

import logging
import os
from pathlib import Path

import pytest

from swe_gym.sandbox import current_run_id
from swe_gym.sandbox.loop import run_sync
from swe_gym.sandbox.providers.local import warn_unisolated
from swe_gym.sandbox.registry import get_provider
from tests.conftest import make_sandbox


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
