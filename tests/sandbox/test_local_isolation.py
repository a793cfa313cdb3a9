"""`local` under bubblewrap as a boundary: probes run from inside, as root and as an ordinary user.

Each probe run is a fresh host process (``PROBE``) that starts two sandboxes under a sandbox root outside /tmp,
leaves a marker in one and runs the probe commands in the other. Canary secrets are planted where host secrets
live (root's home, a home directory under /home) and must stay out of reach; /etc must show only
`ETC_ENTRIES`; no gold or test patch of the installed package may be found. Also: the unisolated fallback
warns once per process, and ``swe-gym rollout`` refuses untrusted policies on it unless told otherwise.
"""

from __future__ import annotations

import json
import logging
import os
import pwd
import shutil
import subprocess
import sys
import tempfile
import uuid
import xmlrpc
from collections.abc import Iterator
from pathlib import Path

import pytest

from swe_gym.sandbox.providers import local
from swe_gym.tasks import load_tasks
from tests.conftest import make_sandbox, provider_setup

TEST_USER = os.environ.get("SWE_GYM_APPTAINER_TEST_USER", "swegymtest")
CANARY = f"swe-gym-canary-{uuid.uuid4().hex}"

PROBE = """
import json, sys
from swe_gym.sandbox import Sandbox, SandboxSpec
config, commands, canaries = json.loads(sys.argv[1]), json.loads(sys.argv[2]), json.loads(sys.argv[3])
other = Sandbox.create(SandboxSpec(), config)
assert other.exec("echo marker > other-marker").ok
box = Sandbox.create(SandboxSpec(), config)
fill = {"other": str(other.aio.backend.home), "root": config["root"]}
results = {name: box.exec(command.format(**fill), timeout=120).model_dump() for name, command in commands.items()}
results["host_reads_canaries"] = all(open(path).read() == canaries[path] for path in canaries)
box.close(); other.close()
print(json.dumps(results))
"""


@pytest.fixture(scope="module")
def canaries() -> Iterator[dict[str, str]]:
    """Secret files in root's home and in a home directory under /home, readable by anyone on the host."""
    if os.geteuid() != 0:
        pytest.skip("planting canaries in /root and probing as another user need root")
    dirs = [Path(tempfile.mkdtemp(prefix=".swe_gym-canary-", dir=parent)) for parent in ("/root", "/home")]
    files = {}
    for directory in dirs:
        directory.chmod(0o755)
        (directory / "secret.env").write_text(CANARY)
        (directory / "secret.env").chmod(0o644)
        files[str(directory / "secret.env")] = CANARY
    yield files
    for directory in dirs:
        shutil.rmtree(directory)


@pytest.fixture
def sandbox_root() -> Iterator[Path]:
    """A sandbox root outside /tmp (so the sandbox's private /tmp does not hide it), open to the test user."""
    path = Path(tempfile.mkdtemp(prefix="swe_gym-isolation-", dir="/var/tmp"))
    path.chmod(0o755)
    yield path
    shutil.rmtree(path, ignore_errors=True)


def _host_dirs() -> list[Path]:
    """Directories the sandbox shows from the host (and the sandbox's own read-only /)."""
    return [Path(p) for p in ("/", "/usr", "/usr/bin", "/etc", "/etc/ssl/certs")] + local._interpreter_dirs()


def _commands(canaries: dict[str, str], tag: str) -> dict[str, str]:
    shown = [str(p) for p in local._interpreter_dirs()]
    gold = sorted(local.PACKAGE_DIR.glob("tasks/bundled/*/gold.patch"))[0]
    writable = " ".join(str(p) for p in _host_dirs())
    return {
        "caps": "grep -E '^Cap(Inh|Prm|Eff|Bnd|Amb)' /proc/self/status",
        "remount": (
            f"for p in / /usr /etc/passwd {' '.join(shown)}; do mount -o remount,bind,rw $p 2>/dev/null && echo $p;"
            " done; mount -t tmpfs none /usr 2>/dev/null && echo tmpfs; unshare -Ur true 2>/dev/null && echo userns"
            "; true"
        ),
        "writes": (
            f"for p in {writable}; do touch $p/{tag} 2>/dev/null && echo $p; done; "
            "(echo x >> /etc/passwd) 2>/dev/null && echo passwd; true"
        ),
        "secrets": f"cat {' '.join(canaries)} /etc/shadow /etc/swe-gym/* 2>/dev/null; ls -A /home 2>/dev/null; true",
        "etc": "ls -A /etc",
        "root_home": "find /root -mindepth 1 -maxdepth 4 -print 2>/dev/null; true",
        "patches": (
            r"find / -path /proc -prune -o \( -name gold.patch -o -name test.patch \) -print 2>/dev/null; "
            f"ls {local.PACKAGE_DIR}/tasks/bundled 2>/dev/null; cat {gold} 2>/dev/null; true"
        ),
        "others": (
            "ls -A {root} {other} 2>/dev/null; "
            r"find / -path /proc -prune -o -name other-marker -print 2>/dev/null; true"
        ),
        "tools": "git --version && bash -c true && ls / > /dev/null && python3 -m pytest --version",
    }


def _reach(paths: list[Path]) -> list[str]:
    """An outer (root) bwrap view of the host in which an ordinary user can reach ``paths``.

    The first directory on the way to a path that others cannot enter (root's 0700 home, where pyenv, the venv
    or the checkout may live) becomes a tmpfs that holds only the paths below it; the rest is the host as it is.
    """
    closed = {path: next((p for p in reversed(path.parents) if not p.stat().st_mode & 0o001), None) for path in paths}
    argv = ["bwrap", "--dev-bind", "/", "/"]
    for directory in sorted({d for d in closed.values() if d is not None}):
        argv += ["--perms", "0755", "--tmpfs", str(directory)]
    for path, directory in closed.items():
        if directory is not None:  # the way down open to all (bwrap would make it 0700), then the path
            for step in reversed(path.parents[: path.parents.index(directory)]):
                argv += ["--perms", "0755", "--dir", str(step)]
            argv += ["--bind", str(path), str(path)]
    return argv


def _probe(canaries: dict[str, str], root: Path, tag: str, user: str | None) -> dict:
    config = {"type": "local", "isolation": "bwrap", "root": str(root)}
    args = [json.dumps(config), json.dumps(_commands(canaries, tag)), json.dumps(canaries)]
    argv = [sys.executable, "-c", PROBE, *args]
    env = {"PATH": os.environ["PATH"], "LANG": "C.UTF-8", "HOME": "/root"}
    if user is not None:
        account = pwd.getpwnam(user)
        os.chown(root, account.pw_uid, account.pw_gid)
        checkout = Path(__file__).resolve().parents[2]
        reachable = [*local._interpreter_dirs(), checkout, *(Path(p).parent for p in canaries)]
        drop = ["setpriv", f"--reuid={account.pw_uid}", f"--regid={account.pw_gid}", "--init-groups", "--"]
        argv = [*_reach(reachable), *drop, *argv]
        env["HOME"] = account.pw_dir
    result = subprocess.run(argv, capture_output=True, text=True, env=env, cwd=root, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(result.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("user", [None, TEST_USER], ids=["root", "ordinary-user"])
def test_sandbox_sees_only_what_commands_need(canaries: dict[str, str], sandbox_root: Path, user: str | None) -> None:
    provider_setup("local")
    if user is not None:
        try:
            pwd.getpwnam(user)
        except KeyError:
            pytest.fail(f"no user {user} (.ci/provision_apptainer.sh creates it)")
    tag = f"swe_gym-probe-{uuid.uuid4().hex[:8]}"
    passwd = Path("/etc/passwd").read_text()
    found = _probe(canaries, sandbox_root, tag, user)
    assert found["host_reads_canaries"]  # the host process could read them: the sandbox is what hides them
    caps = dict(line.split(":") for line in found["caps"]["output"].splitlines())
    assert caps.keys() == {"CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"}
    assert all(int(value, 16) == 0 for value in caps.values()), caps
    # No remount, no new mount; no nested user namespace either where bubblewrap can forbid it.
    allowed = set() if local._hardening() else {"userns"}
    assert set(found["remount"]["output"].split()) <= allowed
    assert found["writes"]["output"] == ""
    assert not any((p / tag).exists() for p in _host_dirs())
    assert Path("/etc/passwd").read_text() == passwd
    assert CANARY not in found["secrets"]["output"] and found["secrets"]["output"] == ""
    assert set(found["etc"]["output"].split()) <= {entry.split("/")[0] for entry in local.ETC_ENTRIES}
    interpreter_parts = {str(p) for d in local._interpreter_dirs() for p in [d, *d.parents]}
    for path in found["root_home"]["output"].split():  # /root holds at most the way to the interpreter
        assert path in interpreter_parts or any(path.startswith(f"{d}/") for d in local._interpreter_dirs()), path
    assert found["patches"]["output"] == ""
    assert found["others"]["output"] == ""
    assert found["tools"]["exit_code"] == 0, found["tools"]["output"]
    assert not list(sandbox_root.iterdir())


def test_package_inside_the_interpreter_dirs_is_masked(monkeypatch: pytest.MonkeyPatch) -> None:
    """A non-editable install puts swe_gym in site-packages, which the sandbox shows: there it is emptied."""
    provider_setup("local")
    inside = Path(xmlrpc.__path__[0]).resolve()  # a package in the interpreter's dirs that the runner never imports
    monkeypatch.setattr(local, "PACKAGE_DIR", inside)
    with make_sandbox("local") as box:
        assert box.exec(f"ls -A {inside}").output == ""
        assert "Read-only file system" in box.exec(f"touch {inside}/planted").output
        assert box.exec("python3 -m pytest --version").ok


def test_unisolated_warning_is_said_once_per_process(caplog: pytest.LogCaptureFixture) -> None:
    local.warn_unisolated.cache_clear()
    with caplog.at_level(logging.WARNING, logger="swe_gym"):
        for _ in range(2):
            with make_sandbox("local-unisolated") as box:
                assert box.exec("true").ok
    assert caplog.text.count("UNISOLATED") == 1


def _rollout(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``swe-gym rollout`` where bubblewrap refuses to start (a stand-in ``bwrap`` that fails)."""
    fake = tmp_path / "bin"
    fake.mkdir(exist_ok=True)
    (fake / "bwrap").write_text("#!/bin/sh\nexit 1\n")
    (fake / "bwrap").chmod(0o755)
    env = {**os.environ, "PATH": f"{fake}:{os.environ['PATH']}"}
    out = tmp_path / f"t{len(list(tmp_path.glob('t*.jsonl')))}.jsonl"  # a new file each run: rollout never appends
    command = [sys.executable, "-m", "swe_gym.cli.main", "rollout", "--out", str(out), *args]
    return subprocess.run(command, capture_output=True, text=True, env=env, timeout=600)


def test_rollout_refuses_untrusted_policies_unisolated(tmp_path: Path) -> None:
    refused = _rollout(tmp_path, "--policy", "random", "--episodes", "1")
    assert refused.returncode == 2
    assert refused.stderr.strip().splitlines()[-1] == (
        "error: refusing to run policy 'random' on unisolated local sandboxes (bubblewrap is not available): "
        "install bubblewrap, use --provider docker, or pass --allow-unisolated"
    )
    assert "Traceback" not in refused.stderr and "UNISOLATED" not in refused.stderr
    allowed = _rollout(tmp_path, "--policy", "random", "--episodes", "1", "--max-steps", "2", "--allow-unisolated")
    assert allowed.returncode == 0, allowed.stderr
    assert allowed.stderr.count("UNISOLATED") == 1  # the episode's and the grading's sandbox: said once
    oracle = _rollout(tmp_path, "--policy", "oracle", "--instance-id", load_tasks("bundled")[0].instance_id)
    assert oracle.returncode == 0, oracle.stderr  # the gold patch is trusted: no opt-in needed
    assert oracle.stdout.startswith("episodes      1\n")
