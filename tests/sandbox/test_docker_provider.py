"""Docker specifics: labels, limits, removal, orphans removing themselves, death from outside."""

from __future__ import annotations

import subprocess
import sys
import time

import pytest

from swe_gym.errors import ImageNotFoundError, SandboxDiedError
from swe_gym.sandbox import SandboxStatus, current_run_id
from swe_gym.sandbox.loop import run_sync
from swe_gym.sandbox.registry import get_provider
from tests.conftest import TEST_IMAGE, make_sandbox, require_docker


@pytest.fixture
def docker_client():
    require_docker()
    import docker

    return docker.from_env()


def _gone(client, container_id: str, wait_s: float = 30.0) -> bool:
    import docker

    deadline = time.monotonic() + wait_s
    while time.monotonic() < deadline:
        try:
            client.containers.get(container_id)
        except docker.errors.NotFound:
            return True
        time.sleep(0.2)
    return False


def test_labels_limits_and_removal(docker_client) -> None:
    box = make_sandbox("docker", labels={"task_id": "t-1"}, resources={"cpus": 1.5, "memory_mb": 512, "pids": 256})
    container_id = box.aio.backend.container_id
    attrs = docker_client.containers.get(container_id).attrs
    labels = attrs["Config"]["Labels"]
    assert labels["swe_gym.managed"] == "true"
    assert labels["swe_gym.run_id"] == current_run_id()
    assert labels["swe_gym.task_id"] == "t-1"
    assert float(labels["swe_gym.expires_at"]) > time.time()
    host = attrs["HostConfig"]
    assert (host["NanoCpus"], host["Memory"], host["PidsLimit"]) == (1_500_000_000, 512 << 20, 256)
    assert host["NetworkMode"] == "none"
    box.close()
    assert _gone(docker_client, container_id)


def test_orphan_removes_itself_when_its_owner_dies(docker_client) -> None:
    script = (
        "import os, sys; from swe_gym.sandbox import Sandbox, SandboxSpec;"
        f"box = Sandbox.create(SandboxSpec(image={TEST_IMAGE!r}), 'docker');"
        "print(box.aio.backend.container_id, flush=True); os._exit(0)"
    )
    container_id = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True).stdout
    assert _gone(docker_client, container_id.strip())


def test_ttl_expiry_removes_the_container(docker_client) -> None:
    box = make_sandbox("docker", ttl_s=1.0)
    assert _gone(docker_client, box.aio.backend.container_id)
    assert box.status() is SandboxStatus.DEAD
    box.close()


def test_killed_from_outside_is_reported_as_dead(docker_client) -> None:
    box = make_sandbox("docker")
    docker_client.containers.get(box.aio.backend.container_id).kill()
    with pytest.raises(SandboxDiedError, match="docker container"):
        box.exec("true")
    assert box.status() is SandboxStatus.DEAD
    box.close()


def test_missing_image_is_a_clear_error_and_leaves_nothing(docker_client) -> None:
    before = len(docker_client.containers.list(all=True))
    with pytest.raises(ImageNotFoundError, match="swe-gym-no-such-image:1"):
        from swe_gym.sandbox import Sandbox, SandboxSpec

        Sandbox.create(SandboxSpec(image="swe-gym-no-such-image:1"), "docker")
    assert len(docker_client.containers.list(all=True)) == before


def test_image_rewrite_rules_apply(docker_client, monkeypatch: pytest.MonkeyPatch) -> None:
    repo, _, tag = TEST_IMAGE.partition(":")
    monkeypatch.setenv("SWE_GYM_IMAGE_REWRITE", f"mirror.invalid/{repo}={repo}")
    from swe_gym.sandbox import Sandbox, SandboxSpec

    with Sandbox.create(SandboxSpec(image=f"mirror.invalid/{repo}:{tag}"), "docker") as box:
        assert box.aio.backend.spec.image == TEST_IMAGE


def test_cleanup_removes_our_containers_by_run(docker_client) -> None:
    box = make_sandbox("docker")
    container_id = box.aio.backend.container_id
    provider = get_provider("docker")
    assert run_sync(provider.cleanup(run_id="some-other-run")) == []
    assert container_id[:12] in run_sync(provider.cleanup(run_id=current_run_id()))
    assert _gone(docker_client, container_id)
    box.close()  # already gone: still fine


def test_pulling_a_missing_image_is_explicit(caplog: pytest.LogCaptureFixture) -> None:
    """Off by default (a clear error says how to pull); on, the engine really tries and its reason comes back."""
    require_docker()
    from swe_gym.sandbox import Sandbox, SandboxSpec

    spec = SandboxSpec(image="swe-gym-no-such-image:0")
    with pytest.raises(ImageNotFoundError, match="SWE_GYM_PULL=missing"):
        Sandbox.create(spec, "docker")
    with caplog.at_level("INFO", logger="swe_gym.sandbox.providers.docker"):
        with pytest.raises(ImageNotFoundError, match="could not pull swe-gym-no-such-image:0"):
            Sandbox.create(spec, {"type": "docker", "pull": "missing"})
    assert "pulling swe-gym-no-such-image:0" in caplog.text


def test_fork_by_commit_labels_its_images_and_removes_them(docker_client) -> None:
    """``fork="commit"`` (remote engines, other storage drivers): the image is ours and goes with its last user."""
    from swe_gym.sandbox import Sandbox, SandboxSpec

    def fork_images() -> list[str]:
        found = docker_client.images.list(
            filters={"label": [f"swe_gym.run_id={current_run_id()}", "swe_gym.forked_from"]}
        )
        return [image.id for image in found]

    with Sandbox.create(SandboxSpec(image=TEST_IMAGE), {"type": "docker", "fork": "commit"}) as source:
        source.exec("echo source > f")
        fork = source.fork()
        labels = docker_client.images.get(fork.aio.spec.image).labels
        assert labels["swe_gym.managed"] == "true" and labels["swe_gym.forked_from"] == source.aio.id
        fork.exec("echo fork > f")
        grandchild = fork.fork()  # its image is a child of the fork's: that one waits for it
        assert grandchild.read_file("f") == b"fork\n" and source.read_file("f") == b"source\n"
        fork.close()
        assert len(fork_images()) == 2
        grandchild.close()
        assert fork_images() == []
        orphan = source.fork()  # as if its owner died: `cleanup` removes container and image
        removed = run_sync(get_provider("docker").cleanup(labels={"forked_from": source.aio.id}))
        assert orphan.aio.id in removed and fork_images() == []
        orphan.close()


#: Run in the container: whether anything can still connect to the host's channel socket, and the sockets a
#: command holds (none of the runner's).
CHANNEL_PROBE = (
    "python3 -c \"import socket; s = socket.socket(socket.AF_UNIX)\n"
    "try:\n    s.connect('/.swe_gym_channel/s'); print('connected')\n"
    "except OSError as exc:\n    print('refused', type(exc).__name__)\"; "
    "ls -l /proc/$$/fd | grep -c socket: || true"
)


def test_a_local_engine_channel_is_a_socket_nothing_else_can_reach(docker_client) -> None:
    """On a local engine the runner's frames go over a Unix socket of this host (`direct_channel`), not through
    the daemon: once the runner connected, the socket and its host directory are gone (no process in the
    container can connect again), commands hold none of the runner's descriptors, and the engine logs nothing."""
    from swe_gym.sandbox.providers import direct_channel

    box = make_sandbox("docker")
    try:
        backend = box.aio.backend
        assert backend._direct_link is not None
        assert backend._direct is not None and not backend._direct.directory.exists()
        assert direct_channel.ROOT in backend._direct.directory.parents
        out = box.exec(CHANNEL_PROBE).output.split()
        assert out[:1] == ["refused"] and out[-1] == "0", out
        assert docker_client.api.inspect_container(backend.container_id)["HostConfig"]["LogConfig"]["Type"] == "none"
        assert box.exec("echo ok").output == "ok\n"
    finally:
        box.close()


def test_a_runner_that_cannot_reach_the_socket_falls_back_to_attach(
    docker_client, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture, tmp_path
) -> None:
    """An engine that does not share this host's files (simulated: the container gets an empty directory where
    the socket should be): the runner exits, the provider says so once, and the sandbox starts on attach."""
    from swe_gym.sandbox import AsyncSandbox, SandboxSpec
    from swe_gym.sandbox.providers import direct_channel
    from swe_gym.sandbox.providers.docker import DockerProvider

    empty = tmp_path / "empty"
    empty.mkdir()
    monkeypatch.setattr(
        direct_channel.DirectChannel, "bind", property(lambda self: {str(empty): {"bind": direct_channel.MOUNT}})
    )
    made: list[direct_channel.DirectChannel] = []
    opened = direct_channel.DirectChannel.open
    monkeypatch.setattr(direct_channel.DirectChannel, "open", staticmethod(lambda: made.append(opened()) or made[-1]))
    provider = DockerProvider()

    async def scenario() -> None:
        box = await AsyncSandbox.create(SandboxSpec(image=TEST_IMAGE), provider)
        try:
            assert box.backend._direct_link is None and (await box.exec("echo ok")).output == "ok\n"
        finally:
            await box.close()
        again = await AsyncSandbox.create(SandboxSpec(image=TEST_IMAGE), provider)  # attach from now on
        await again.close()

    with caplog.at_level("WARNING"):
        run_sync(scenario())
    assert sum("could not connect to this host's socket" in r.getMessage() for r in caplog.records) == 1
    assert len(made) == 1 and not made[0].directory.exists()  # one refusal; its socket and directory gone


def test_a_host_process_that_connects_first_is_turned_away(docker_client, monkeypatch: pytest.MonkeyPatch) -> None:
    """Another process of this host connecting to the channel's socket before the runner (a local user racing
    for it) is closed unheard: it gets no key, and the runner's own connection becomes the channel."""
    import socket

    from swe_gym.sandbox.providers import direct_channel

    impostors: list[socket.socket] = []
    opened = direct_channel.DirectChannel.open

    def racing() -> direct_channel.DirectChannel:
        channel = opened()
        impostor = socket.socket(socket.AF_UNIX)
        impostor.connect(str(channel.directory / "s"))  # queued before the container even starts
        impostors.append(impostor)
        return channel

    monkeypatch.setattr(direct_channel.DirectChannel, "open", staticmethod(racing))
    box = make_sandbox("docker")
    try:
        assert box.aio.backend._direct_link is not None and box.exec("echo ok").output == "ok\n"
        (impostor,) = impostors
        impostor.settimeout(5)
        assert impostor.recv(4096) == b""  # closed by the host, the key never sent
    finally:
        box.close()
