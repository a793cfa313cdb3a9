"""The exec and file semantics every provider must honour, run against each real provider."""

from __future__ import annotations

import io
import tarfile
import time

import pytest

from swe_gym.errors import ConfigError, ForkNotSupportedError, SandboxDiedError, SandboxError
from swe_gym.sandbox import AsyncSandbox, Sandbox, SandboxSpec, SandboxStatus
from tests.conftest import ISOLATED, PROVIDERS, kill_from_outside, leftover_sandboxes, make_sandbox, provider_setup


def test_output_merges_stdout_and_stderr_in_order(sandbox: Sandbox) -> None:
    result = sandbox.exec("echo one; echo two >&2; echo three; exit 3")
    assert result.output == "one\ntwo\nthree\n"
    assert result.exit_code == 3 and not result.timed_out and not result.output_truncated
    assert result.duration_s > 0


def test_runs_in_workdir_with_spec_env(provider_name: str) -> None:
    with make_sandbox(provider_name, env={"SWE_GYM_PROBE": "probe-value"}) as box:
        result = box.exec('pwd; echo "$SWE_GYM_PROBE"')
        assert result.output.split() == [box.workdir, "probe-value"]


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


def test_non_utf8_output_is_replaced_not_raised(sandbox: Sandbox) -> None:
    result = sandbox.exec(r"printf 'a\xff\xfe\x80b\n'")
    assert result.output == "a\ufffd\ufffd\ufffdb\n"


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
    kind = config["type"]
    deadline = time.monotonic() + 30  # docker's auto-removal is asynchronous
    while time.monotonic() < deadline and created in leftover_sandboxes()[kind]:
        time.sleep(0.2)
    assert created and created not in leftover_sandboxes()[kind]


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
