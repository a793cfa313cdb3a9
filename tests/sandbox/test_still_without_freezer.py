"""Where no cgroup freezer can stop a sandbox's processes (no usable cgroups: an ordinary user without a delegated
subtree), a fork or checkpoint stops them with signals while it copies the sandbox's files (`ProcessSandbox.still`,
`process_stop`), a daemon detached with setsid included, and continues them after. Run on the process-tree
providers with cgroups made unusable."""

from __future__ import annotations

import asyncio
import os
import uuid

import pytest

from swe_gym.sandbox import Sandbox, SandboxSpec
from swe_gym.sandbox.loop import run_sync
from swe_gym.sandbox.providers.cgroups import Cgroup
from tests.conftest import provider_setup


def states(marker: str) -> list[str]:
    """The kernel's state letter of each host process whose command line holds ``marker``."""
    found = []
    for name in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{name}/cmdline", "rb") as cmdline:
                if marker.encode() not in cmdline.read():
                    continue
            with open(f"/proc/{name}/stat", "rb") as stat:
                found.append(stat.read().rsplit(b")", 1)[1].split()[0].decode())
        except OSError:
            continue
    return found


@pytest.mark.parametrize("provider", ["local", "apptainer"])
def test_without_a_freezer_the_copy_stops_every_process_of_the_sandbox(
    provider: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    config, image = provider_setup(provider)
    monkeypatch.setattr(Cgroup, "create", classmethod(lambda cls, name, resources: None))
    marker = f"swe-gym-daemon-{uuid.uuid4().hex[:12]}"
    with Sandbox.create(SandboxSpec(image=image), config) as box:
        backend = box.aio.backend
        assert backend._cgroup is None
        # A daemon in a session of its own and its child, both spinning (never asleep: stopped means the signal
        # did it). The sleep: the command's process group is killed as it ends, before setsid has run otherwise.
        spin = f"bash -c '(while :; do :; done) & while :; do echo x >> /tmp/grow; done' {marker}"
        assert box.exec(f"(setsid {spin} >/dev/null 2>&1 &); sleep 0.5").ok
        assert box.exec("sleep 0.2; test -s /tmp/grow").ok

        async def held() -> tuple[list[str], list[str]]:
            async with backend.still():
                inside = states(marker)
            await asyncio.sleep(0.1)
            return inside, states(marker)

        inside, after = run_sync(held())
        assert len(inside) == 2 and set(inside) == {"T"}, inside  # both stopped while the files are copied
        assert len(after) == 2 and "T" not in after, after  # both running again
        with box.fork() as fork:
            copied = fork.read_file("/tmp/grow")
            assert copied.endswith(b"x\n") and set(copied) <= set(b"x\n")  # no torn line
        assert box.exec("echo alive").output == "alive\n"  # the runner answers as before
