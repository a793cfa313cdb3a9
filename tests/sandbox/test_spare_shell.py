"""The agent's commands run in a bash the runner started ahead (the runner's `SpareShell`): what they print and
return is what a fresh ``bash -c`` gives, on every provider; a spare that could be stale (another cwd, its
directory made anew, killed meanwhile) is never used; the library's own commands never run in one."""

from __future__ import annotations

import time
import uuid

import pytest

from swe_gym.sandbox import Sandbox
from swe_gym.sandbox.backend import RunnerSandbox
from tests.conftest import ISOLATED, make_sandbox

#: Commands whose output a spare could get wrong: syntax errors (which must read as ``bash -c`` writes them),
#: what bash sets at start-up, the descriptors and variables it holds, stdin, exits, jobs, large and odd input.
BATTERY = [
    "echo hello; echo err >&2; echo after",
    "if",
    'echo "unterminated',
    "echo a\n(\necho b",
    "true; }; echo injected; { true",
    "foo_not_a_command",
    "fi",  # plain words, but a reserved one: parsed first
    "ls -1a /tmp/..",  # plain words: run without the parse (no -l: /proc's link count is the host's process count)
    "echo $0 $_ $SHLVL $BASH_SUBSHELL $-",
    "echo $((SECONDS <= 1))",  # whole seconds since start: 1 when a second ticks over, on either side
    'echo "$BASH_EXECUTION_STRING"',
    "echo $LINENO\n\necho $LINENO",
    "env | sort",
    "compgen -v | grep -vx PIPESTATUS | sort",  # PIPESTATUS is there before the first pipeline: see SpareShell
    "declare -F",
    "ls /proc/self/fd",
    'read -r x; echo "[$x] $?"',
    "exit 7",
    "set -e; false; echo not reached",
    "trap -p; echo ${FUNCNAME[@]}",
    "shopt -s extglob\necho @(x|y)",
    "cat <<EOF\nunterminated heredoc",
    "sleep 30 & echo started",
    "umask; pwd; ulimit -n",
    "printf 'x%.0s' $(seq 1 20000) | wc -c",
    "echo " + "a" * 60_000 + " | wc -c",
    b"printf '\\xff\\xfe\\n'; echo caf\xc3\xa9",
]


def spares(box: Sandbox) -> list[str]:
    """The spare shells waiting in ``box`` (asked by the library's own exec, which never runs in one)."""
    probe = (
        "for p in /proc/[0-9]*; do tr '\\0' ' ' < $p/cmdline 2>/dev/null"
        " | grep -q '^/bin/bash -c __swe_gym_u' && echo ${p#/proc/}; done"
    )
    return box.exec(probe).output.split()


def test_an_action_in_a_spare_prints_what_bash_c_prints(sandbox: Sandbox, provider_name: str) -> None:
    """On every provider, a third-party backend's included (it has no spare: `exec_action` is its `exec`)."""
    own_pids = provider_name in ISOLATED  # elsewhere /proc shows the host's processes, other sandboxes' spares too
    for command in BATTERY:
        fresh = sandbox.exec(command)
        sandbox.exec_action("true")  # the spare for the next action starts after this one's reply
        if own_pids:
            assert spares(sandbox), "a runner keeps a spare between the agent's commands"
        spared = sandbox.exec_action(command)
        assert (spared.output, spared.exit_code) == (fresh.output, fresh.exit_code), command


def test_seconds_counts_from_the_action_not_from_the_spare_start(sandbox: Sandbox) -> None:
    """A spare that waited longer than the action takes still reads as a bash started for the action."""
    sandbox.exec_action("true")
    time.sleep(2.5)
    assert int(sandbox.exec_action("echo $SECONDS").output) <= 1


@pytest.mark.parametrize("change", ["rm -rf {d} && mkdir {d} && touch {d}/new", "KILL"])
def test_a_stale_spare_is_never_used(isolated_provider: str, change: str) -> None:
    """Its directory removed and made anew, or the spare killed by something the agent left: a fresh bash."""
    sandbox = make_sandbox(isolated_provider)
    try:
        stale_spare_case(sandbox, change)
    finally:
        sandbox.close()


def stale_spare_case(sandbox: Sandbox, change: str) -> None:
    d = f"/tmp/swe-gym-spare-{uuid.uuid4().hex[:8]}"
    sandbox.exec(f"mkdir -p {d}")
    sandbox.exec_action("true", cwd=d)
    if change == "KILL":
        for pid in spares(sandbox):
            sandbox.exec(f"kill -9 {pid}")
        deadline = time.monotonic() + 10
        while spares(sandbox) and time.monotonic() < deadline:  # killed between commands, not while one starts
            time.sleep(0.05)
    else:
        sandbox.exec(change.format(d=d))
    result = sandbox.exec_action("ls; echo done", cwd=d)
    sandbox.exec(f"rm -rf {d}")
    assert (result.output, result.exit_code) == (("new\n" if change != "KILL" else "") + "done\n", 0)


def test_other_cwd_or_env_starts_fresh_and_library_commands_never_use_one(isolated_provider: str) -> None:
    with make_sandbox(isolated_provider) as sandbox:
        assert isinstance(sandbox.aio.backend, RunnerSandbox)
        sandbox.exec_action("true")
        assert sandbox.exec_action("pwd", cwd="/tmp").output == "/tmp\n"
        assert sandbox.exec_action("echo $V", env={"V": "2"}).output == "2\n"
        (spare,) = spares(sandbox)
        assert sandbox.exec("echo $$").output.strip() != spare  # the library's commands: a fresh bash
        assert sandbox.exec_action("echo $$", env={"V": "2"}).output.strip() == spare
