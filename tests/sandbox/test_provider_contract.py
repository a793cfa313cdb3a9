"""The exec and file semantics every provider must honour, run against each real provider and against a
third-party one written to the Protocols alone (``delegating``, registered by its entry point)."""

from __future__ import annotations

import io
import tarfile
import time

import pytest

from swe_gym.errors import ConfigError, ForkNotSupportedError, SandboxDiedError, SandboxError
from swe_gym.sandbox import AsyncSandbox, Sandbox, SandboxSpec, SandboxStatus
from swe_gym.shown_text import to_bytes
from tests.conftest import ISOLATED, PROVIDERS, kill_from_outside, leftover_sandboxes, make_sandbox, provider_setup


def test_a_provider_written_to_the_protocols_alone_is_found_by_its_entry_point() -> None:
    """``delegating`` subclasses nothing of swe_gym's and is registered only as an installed plugin is: the
    rest of this suite, run against it, checks that swe_gym reads nothing the Protocols do not declare."""
    from importlib.metadata import entry_points

    from swe_gym.sandbox import SandboxBackend, SandboxProvider, available_providers, get_provider, registry
    from tests.sandbox.delegating_provider import DelegatingProvider, DelegatingSandbox

    config, _ = provider_setup("delegating")
    assert "delegating" not in registry._registered and "delegating" in available_providers()
    (found,) = [ep for ep in entry_points(group=registry.ENTRY_POINT_GROUP) if ep.name == "delegating"]
    assert found.value == "tests.sandbox.delegating_provider:DelegatingProvider"
    assert DelegatingProvider.__mro__[1:] == (object,) and DelegatingSandbox.__mro__[1:] == (object,)
    provider = get_provider(config)
    assert type(provider) is DelegatingProvider and isinstance(provider, SandboxProvider)
    with Sandbox.create(SandboxSpec(), config) as box:
        assert isinstance(box.aio.backend, DelegatingSandbox) and isinstance(box.aio.backend, SandboxBackend)
        assert (
            box.aio.provider_name == "delegating"
            and box.aio.backend.network_isolated == box.aio.backend.inner.network_isolated
        )
        assert box.exec("echo via-entry-point").output == "via-entry-point\n"


def test_output_merges_stdout_and_stderr_in_order(sandbox: Sandbox) -> None:
    result = sandbox.exec("echo one; echo two >&2; echo three; exit 3")
    assert result.output == "one\ntwo\nthree\n"
    assert result.exit_code == 3 and not result.timed_out and not result.output_truncated
    assert result.duration_s > 0


def test_runs_in_workdir_with_spec_env(provider_name: str) -> None:
    tricky = 'a $HOME `echo run` $(id -u) back\\slash "quoted" ünï'  # no runtime may expand or run any of it
    with make_sandbox(provider_name, env={"SWE_GYM_PROBE": "probe-value", "SWE_GYM_TRICKY": tricky}) as box:
        result = box.exec('pwd; echo "$SWE_GYM_PROBE"')
        assert result.output.split() == [box.workdir, "probe-value"]
        assert box.exec('printf %s "$SWE_GYM_TRICKY"').output == tricky


def test_timeout_kills_whole_process_group_and_sandbox_stays_usable(sandbox: Sandbox) -> None:
    command = "sleep 987.65 & (trap '' TERM; exec sleep 987.65) & trap '' TERM; echo started; sleep 987.65"
    result = sandbox.exec(command, timeout=1.5)
    assert result.timed_out and result.exit_code == 124
    assert result.output == "started\n"
    assert result.duration_s < 1.5 + 1.0
    survivors = sandbox.exec("pgrep -f 'sleep 98[7].65' || echo none")
    assert survivors.output.strip() == "none"
    assert sandbox.exec("echo again").output == "again\n"


def test_background_job_does_not_hold_the_step(sandbox: Sandbox) -> None:
    result = sandbox.exec("sleep 876.5 & echo started", timeout=30)
    assert not result.timed_out and result.output == "started\n"
    assert sandbox.exec("pgrep -f 'sleep 87[6].5' || echo none").output.strip() == "none"


def test_stdin_is_closed(sandbox: Sandbox) -> None:
    result = sandbox.exec('cat; read -r line; echo "read-exit=$?"', timeout=30)
    assert not result.timed_out
    assert result.output == "read-exit=1\n"


def test_pagers_are_disabled(sandbox: Sandbox) -> None:
    assert sandbox.exec('echo "$PAGER $GIT_PAGER $MANPAGER"').output == "cat cat cat\n"


def test_output_is_capped_keeping_head_and_tail(sandbox: Sandbox) -> None:
    total = 100_000_000
    result = sandbox.exec(f"yes | head -c {total}; echo END", max_output_bytes=1000, timeout=120)
    assert result.output_truncated
    assert result.dropped_bytes == total + len("END\n") - 1000
    head, _, tail = result.output.partition("\n[... ")
    assert head.startswith("y\ny\n") and tail.endswith("y\nEND\n")
    assert len(result.output) < 1200


def test_non_utf8_output_is_shown_byte_by_byte_not_raised(sandbox: Sandbox) -> None:
    result = sandbox.exec(r"printf 'a\xff\xfe\x80b\n'")
    assert result.output == "a\ufffdxff\ufffdxfe\ufffdx80b\n"
    assert to_bytes(result.output) == b"a\xff\xfe\x80b\n"


def test_huge_and_nul_commands_run(sandbox: Sandbox) -> None:
    payload = "x" * 1_000_000
    assert sandbox.exec(f"printf '%s' '{payload}' | wc -c").output.strip() == "1000000"
    result = sandbox.exec("echo before\0echo after")  # bash's own verdict on a NUL byte comes back
    assert result.exit_code == 126 and "cannot execute binary file" in result.output


def test_files_round_trip(sandbox: Sandbox) -> None:
    blob = bytes(range(256)) * 100
    sandbox.write_file("sub/dir/blob.bin", blob)
    assert sandbox.read_file("sub/dir/blob.bin") == blob
    assert sandbox.exec("wc -c < sub/dir/blob.bin").output.strip() == str(len(blob))
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as archive:
        info = tarfile.TarInfo("pkg/mod.py")
        data = b"print('hi')\n"
        info.size = len(data)
        archive.addfile(info, io.BytesIO(data))
    sandbox.aio.backend  # noqa: B018 - the facade exposes its backend
    from swe_gym.sandbox.loop import run_sync

    run_sync(sandbox.aio.upload_tar(buffer.getvalue()))
    assert sandbox.exec("cat pkg/mod.py").output == "print('hi')\n"
    with pytest.raises(SandboxError, match="No such file"):
        sandbox.read_file("does/not/exist")


def test_status_and_close(provider_name: str) -> None:
    box = make_sandbox(provider_name)
    assert box.status() is SandboxStatus.RUNNING
    box.close()
    box.close()  # idempotent
    assert box.status() is SandboxStatus.CLOSED
    with pytest.raises(SandboxError, match="closed"):
        box.exec("true")


# Not opensandbox: there the deny-all egress policy is enforced by the server's egress sidecar,
# an image CI cannot obtain (see tests/sandbox/test_opensandbox_provider.py for what we ask for).
@pytest.mark.parametrize("provider", [name for name in ISOLATED if name != "opensandbox"])
def test_network_is_off_by_default(provider: str) -> None:
    with make_sandbox(provider) as box:
        interfaces = box.exec("tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' '").output.split()
        assert interfaces == ["lo"]


def test_program_exit_without_close_removes_the_sandbox(provider_name: str) -> None:
    """A trainer that forgets close() (or dies on an exception) leaves nothing behind."""
    import json
    import subprocess
    import sys

    config, image = PROVIDERS[provider_name]
    script = (
        "import json, sys; from swe_gym.sandbox import Sandbox, SandboxSpec;"
        f"box = Sandbox.create(SandboxSpec(image={image!r}), json.loads(sys.argv[1]));"
        "print(box.aio.backend.id)"
    )
    created = subprocess.run(
        [sys.executable, "-c", script, json.dumps(config)], capture_output=True, text=True, check=True
    ).stdout.strip()
    kind = {"delegating": "local"}.get(config["type"], config["type"])  # its sandboxes are local's
    deadline = time.monotonic() + 30  # docker's auto-removal is asynchronous
    while time.monotonic() < deadline and created in leftover_sandboxes()[kind]:
        time.sleep(0.2)
    assert created and created not in leftover_sandboxes()[kind]


def test_a_script_that_ends_without_env_close_is_quiet_and_leaves_nothing(provider_name: str) -> None:
    """The common quick experiment: make an env, reset, step, end the script. The grading sandbox the episode
    prestarts is still being created then: it is removed too, and nothing prints a traceback."""
    import json
    import os
    import subprocess
    import sys
    import uuid

    config, image = PROVIDERS[provider_name]
    script = (
        "import json, sys; import gymnasium as gym; import swe_gym;"
        "env = gym.make('swe_gym/SWE-v0', provider=json.loads(sys.argv[1]), image=sys.argv[2] or None);"
        "env.reset(seed=0); print(env.step('echo hi')[0].strip())"
    )
    run_id = f"noclose{uuid.uuid4().hex[:8]}"
    ended = subprocess.run(
        [sys.executable, "-c", script, json.dumps(config), image or ""],
        capture_output=True,
        text=True,
        env={**os.environ, "SWE_GYM_RUN_ID": run_id},
        timeout=600,
    )
    assert ended.returncode == 0 and ended.stdout.strip() == "hi", ended.stderr[-3000:]
    assert "Traceback" not in ended.stderr and "never retrieved" not in ended.stderr, ended.stderr[-3000:]
    deadline = time.monotonic() + 30  # docker's auto-removal is asynchronous
    while time.monotonic() < deadline and any(leftover_sandboxes(run_id).values()):
        time.sleep(0.2)
    assert not any(leftover_sandboxes(run_id).values()), leftover_sandboxes(run_id)


def test_cancelling_a_create_at_any_moment_leaves_nothing(provider_name: str) -> None:
    """Ctrl-C or a closed vector env can cancel a create halfway: no orphan container or process."""
    import asyncio

    from swe_gym.sandbox import AsyncSandbox, SandboxSpec
    from swe_gym.sandbox.loop import run_sync

    config, image = PROVIDERS[provider_name]

    async def scenario() -> None:
        for delay in (0.0, 0.01, 0.03, 0.06, 0.1, 0.15, 0.2, 0.3):
            task = asyncio.ensure_future(AsyncSandbox.create(SandboxSpec(image=image), config))
            await asyncio.sleep(delay)
            task.cancel()
            try:
                await (await task).close()
            except asyncio.CancelledError:
                pass

    run_sync(scenario())
    time.sleep(1.0)  # docker's auto-removal is asynchronous
    assert not any(leftover_sandboxes().values())


# -- forks ---------------------------------------------------------------------------------------------------------

#: A daemon a command leaves behind (setsid -f escapes the step's process group), which a fork must not carry.
DAEMON_RUNS = "pgrep -f 'sleep 98[7].65' >/dev/null && echo running || echo none"
#: Waits until it runs: until setsid(1) has made its session, the step's end would kill it with the step's group.
DAEMON = (
    "setsid -f sleep 987.65 >/dev/null 2>&1; "
    f"for _ in $(seq 100); do {DAEMON_RUNS} | grep -q running && break; sleep 0.05; done"
)


def test_fork_copies_the_file_system_not_the_processes_and_is_isolated(isolated_provider: str) -> None:
    """Repository, /tmp and $HOME (where --user installs go) copied; writes never cross; own id, labels, TTL."""
    source = make_sandbox(isolated_provider, labels={"task_id": "t-fork"}, env={"SWE_GYM_PROBE": "probe"})
    deleted = "" if isolated_provider == "local" else "/etc/debian_version"  # a file of the image (an overlay whiteout)
    source.exec(
        f"mkdir -p pkg ~/.local/lib && echo repo > pkg/f.txt && echo tmp > /tmp/t && echo lib > ~/.local/lib/m.py "
        f"&& rm -f {deleted} && {DAEMON}"
    )
    assert source.exec(DAEMON_RUNS).output == "running\n"
    fork = source.fork(labels={"branch": "b1"}, ttl_s=900)
    try:
        assert fork.aio.id != source.aio.id and fork.workdir == source.workdir
        assert fork.aio.spec.labels == {"task_id": "t-fork", "branch": "b1", "forked_from": source.aio.id}
        assert fork.aio.spec.ttl_s == 900 and fork.aio.spec.env == source.aio.spec.env
        assert fork.aio.id in leftover_sandboxes()[PROVIDERS[isolated_provider][0]["type"]]  # labelled as ours
        copied = fork.exec(f'cat pkg/f.txt /tmp/t ~/.local/lib/m.py; echo "$SWE_GYM_PROBE"; {DAEMON_RUNS}')
        assert copied.output.split() == ["repo", "tmp", "lib", "probe", "none"]
        if deleted:
            assert fork.exec(f"test -e {deleted} || echo gone").output == "gone\n"
        assert source.exec(DAEMON_RUNS).output == "running\n"  # the source goes on untouched
        fork.exec("echo fork > pkg/f.txt; echo fork > /tmp/t; echo fork > only-fork")
        source.exec("echo source > pkg/f.txt; echo source > /tmp/t; echo source > only-source")
        assert source.exec("cat pkg/f.txt /tmp/t; ls").output.split() == ["source", "source", "only-source", "pkg"]
        assert fork.exec("cat pkg/f.txt /tmp/t; ls").output.split() == ["fork", "fork", "only-fork", "pkg"]
        again = fork.fork()  # a fork of a fork sees the fork's state, not the source's
        assert again.read_file("pkg/f.txt") == b"fork\n"
        again.close()
        source.close()  # each closes on its own
        assert fork.exec("cat pkg/f.txt").output == "fork\n"
    finally:
        source.close()
        fork.close()
    assert not any(leftover_sandboxes().values())


def test_a_fork_killed_from_outside_is_cleaned_and_its_source_lives_on(isolated_provider: str) -> None:
    with make_sandbox(isolated_provider) as source:
        source.exec("echo kept > f")
        fork = source.fork()
        kill_from_outside(fork)
        assert fork.status() is SandboxStatus.DEAD
        with pytest.raises(SandboxDiedError):
            fork.fork()
        fork.close()
        assert source.exec("cat f").output == "kept\n" and source.status() is SandboxStatus.RUNNING
    with pytest.raises(SandboxError, match="closed"):
        source.fork()
    assert not any(leftover_sandboxes().values())


def test_a_fork_waits_for_the_running_command() -> None:
    """The copy is taken between commands: one still running when fork() is called is waited for."""
    import asyncio

    from swe_gym.sandbox.loop import run_sync

    async def scenario() -> str:
        config, _ = provider_setup("local")
        source = await AsyncSandbox.create(SandboxSpec(), config)
        try:
            running = asyncio.ensure_future(source.exec("sleep 0.5; echo done > f"))
            await asyncio.sleep(0.1)
            fork = await source.fork()
            await running
            try:
                return (await fork.read_file("f")).decode()
            finally:
                await fork.close()
        finally:
            await source.close()

    assert run_sync(scenario()) == "done\n"


def test_fork_errors_say_what_is_missing() -> None:
    import asyncio

    from swe_gym.sandbox.loop import run_sync

    with make_sandbox("local") as box:
        with pytest.raises(ConfigError, match="ttl_s"):
            box.fork(ttl_s=0)
        orphan = AsyncSandbox(box.aio.backend)  # made without AsyncSandbox.create: no provider to fork with
        with pytest.raises(ForkNotSupportedError, match="provider is unknown"):
            run_sync(orphan.fork())
        assert isinstance(ForkNotSupportedError("x"), NotImplementedError)
    assert asyncio.iscoroutinefunction(AsyncSandbox.fork)


# -- the persistent shell (exec(..., shell="persistent")) ------------------------------------------------------------

#: What `source venv/bin/activate` does, without needing a venv-capable Python in the image.
ACTIVATE = 'VIRTUAL_ENV="$PWD/venv"; export VIRTUAL_ENV; PATH="$VIRTUAL_ENV/bin:$PATH"; deactivate() { :; }\n'
NEW_SHELL = "[swe_gym: new shell ("


def persistent(box: Sandbox, command: str, **options: object):
    return box.exec(command, shell="persistent", **options)


def test_persistent_shell_keeps_state_with_the_stateless_guarantees(sandbox: Sandbox) -> None:
    sandbox.write_file("sub/venv/bin/activate", ACTIVATE)
    first = persistent(sandbox, "cd sub && export SWE_GYM_X=kept && source venv/bin/activate; sleep 876.5 &")
    assert first.output == "" and first.exit_code == 0
    state = persistent(sandbox, 'pwd; echo "$SWE_GYM_X ${VIRTUAL_ENV#"$PWD"/}"; type -t deactivate; false')
    assert state.output == f"{sandbox.workdir}/sub\nkept venv\nfunction\n" and state.exit_code == 1
    assert sandbox.exec("pgrep -f 'sleep 87[6].5' || echo none").output.strip() == "none"  # its background job went
    stdin = persistent(sandbox, 'cat; read -r line; echo "read-exit=$?"', timeout=30)
    assert stdin.output == "read-exit=1\n" and not stdin.timed_out
    pagers = persistent(
        sandbox,
        'echo "$PAGER $GIT_PAGER $MANPAGER"; git init -q r && cd r && git -c user.name=a -c user.email=a@b '
        "commit -q --allow-empty -m one && git log --format=%s; git --no-pager log -1 --format=%s; cd ..",
        timeout=30,
    )
    assert pagers.output == "cat cat cat\none\none\n" and not pagers.timed_out
    # Lines shaped like the shell's status line (nonce, exit code) do not end the command: it runs on.
    forged = persistent(sandbox, "for n in 0 1 2; do printf '%032x 0\\n' $n; echo $n 0 >&2; done; sleep 0.3; echo end")
    assert forged.output.endswith("2 0\nend\n") and forged.exit_code == 0 and forged.duration_s > 0.3
    capped = persistent(sandbox, "yes | head -c 10000000; echo END", max_output_bytes=1000, timeout=120)
    assert capped.output_truncated and capped.dropped_bytes == 10_000_000 + len("END\n") - 1000
    assert capped.output.startswith("y\ny\n") and capped.output.endswith("y\nEND\n")
    assert persistent(sandbox, "exec >/dev/null; echo hidden").output == ""  # a redirection lasts one command
    assert persistent(sandbox, "echo $SWE_GYM_X; pwd").output == f"kept\n{sandbox.workdir}/sub\n"
    stateless = sandbox.exec('pwd; echo "[$SWE_GYM_X]"')  # the default is untouched by the shell's state
    assert stateless.output == f"{sandbox.workdir}\n[]\n"
    with pytest.raises(ValueError, match="cd and export"):
        persistent(sandbox, "true", cwd="/")
    with pytest.raises(ValueError, match="stateless"):
        sandbox.exec("true", shell="interactive")


def test_persistent_shell_timeout_kills_the_group_and_the_next_command_gets_a_new_shell(sandbox: Sandbox) -> None:
    persistent(sandbox, "mkdir -p sub && cd sub")
    command = "sleep 987.65 & (trap '' TERM; exec sleep 987.65) & trap '' TERM; echo started; sleep 987.65"
    result = persistent(sandbox, command, timeout=1.5)
    assert result.timed_out and result.exit_code == 124 and result.duration_s < 1.5 + 1.0
    assert (
        result.output
        == "started\n[swe_gym: the shell was killed with the timed-out command; the next command gets a new shell]\n"
    )
    assert sandbox.exec("pgrep -f 'sleep 98[7].65' || echo none").output.strip() == "none"
    after = persistent(sandbox, "pwd")
    assert after.output.startswith(NEW_SHELL + "the previous one was killed with its command when it timed out)")
    assert after.output.endswith(f"\n{sandbox.workdir}\n") and after.exit_code == 0


@pytest.mark.parametrize(("command", "code"), [("cd ..; exit", 0), ("exec bash -c 'exit 3'", 3), ("kill -9 $$", 137)])
def test_a_command_that_ends_the_persistent_shell_gets_a_new_one(provider_name: str, command: str, code: int) -> None:
    with make_sandbox(provider_name) as box:
        persistent(box, "mkdir -p sub && cd sub && echo one")
        ended = persistent(box, command)
        assert ended.exit_code == code and not ended.timed_out
        assert ended.output == f"[swe_gym: the shell ended (exit code {code}); the next command gets a new shell]\n"
        after = persistent(box, "pwd")
        assert after.output == (
            f"{NEW_SHELL}the previous one ended with exit code {code}): back in {box.workdir} with the initial "
            f"environment; earlier cd, export and activated environments are gone]\n{box.workdir}\n"
        )
        assert persistent(box, "cd sub && pwd").output == f"{box.workdir}/sub\n"  # and it keeps state again


def test_a_fork_starts_without_the_persistent_shell_and_says_so() -> None:
    with make_sandbox("local") as source:
        persistent(source, "mkdir -p sub && cd sub")
        with source.fork() as fork:
            first = persistent(fork, "pwd")
            assert first.output.startswith(NEW_SHELL + "the previous one is not running here any more)")
            assert first.output.endswith(f"\n{fork.workdir}\n")
        assert persistent(source, "pwd").output == f"{source.workdir}/sub\n"


def test_the_runner_source_survives_apptainers_environment_quoting() -> None:
    """Apptainer hands the runner's source over as a shell reads text between double quotes: ``$...`` and
    backticks would be expanded there, a backslash before a backslash, double quote or line end eaten."""
    from swe_gym.sandbox.backend import runner_source

    source = runner_source().replace("``", "")  # a pair is an empty command substitution: harmless
    assert not [bad for bad in ("$", "`", "\\\\", '\\"', "\\\n") if bad in source]
