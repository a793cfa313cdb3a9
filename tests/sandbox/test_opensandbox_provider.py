"""OpenSandbox specifics against the real opensandbox-server (execd is the test stand-in, see tests/standins/).

Metadata and limits as the server applies them, connecting to a sandbox by id,
and clear, permanent errors for a missing image, a wrong key or a server that is down.
"""

from __future__ import annotations

import os
import time

import pytest

from swe_gym.errors import ConfigError, ImageNotFoundError, ProviderUnavailableError, SandboxDiedError
from swe_gym.sandbox import Sandbox, SandboxSpec, current_run_id, get_provider
from swe_gym.sandbox.loop import run_sync
from tests.conftest import PROVIDERS, TEST_IMAGE, make_sandbox, require

CONFIG = PROVIDERS["opensandbox"][0]


@pytest.fixture(autouse=True)
def _server() -> None:
    require("opensandbox")


def _container(sandbox_id: str):
    import docker

    (container,) = docker.from_env().containers.list(filters={"label": f"opensandbox.io/id={sandbox_id}"})
    return container


def test_metadata_limits_and_ttl_reach_the_server() -> None:
    spec = {"labels": {"task_id": "django__django-11099"}, "resources": {"cpus": 1.5, "memory_mb": 512}}
    with make_sandbox("opensandbox", ttl_s=600, **spec) as box:
        attrs = _container(box.aio.backend.id).attrs
        labels = attrs["Config"]["Labels"]
        assert labels["swe_gym.managed"] == "true" and labels["swe_gym.run_id"] == current_run_id()
        assert labels["swe_gym.task_id"] == "django__django-11099"
        assert 590 < float(labels["swe_gym.expires_at"]) - time.time() <= 600
        assert (attrs["HostConfig"]["NanoCpus"], attrs["HostConfig"]["Memory"]) == (1_500_000_000, 512 << 20)
        assert box.exec("echo $HOME; echo ok >&2").output.endswith("ok\n")


def test_connect_to_a_running_sandbox_by_id() -> None:
    with make_sandbox("opensandbox") as box:
        box.write_file("note.txt", "written by the first client")
        provider = get_provider(CONFIG)
        other = run_sync(provider.connect(box.aio.backend.id, box.aio.backend.spec))
        result = run_sync(other.exec("cat note.txt"))
        assert result.output == "written by the first client"
        assert (run_sync(other.exec("sleep 30", timeout=1))).timed_out
        run_sync(other.close())  # a connected handle owns the sandbox too: closing it kills it
        assert box.status().value == "dead"


def test_no_network_asks_the_server_for_a_deny_all_egress_policy() -> None:
    """What we send; enforcing it is the server's egress sidecar (not available to CI)."""
    provider = get_provider("opensandbox", network_policy="deny")  # the default outside CI
    policy = provider._create_kwargs(SandboxSpec(image=TEST_IMAGE))["network_policy"]
    assert policy.default_action == "deny" and policy.egress == []
    assert "network_policy" not in provider._create_kwargs(SandboxSpec(image=TEST_IMAGE, network=True))


def test_missing_image_wrong_key_and_dead_server_are_clear_errors() -> None:
    """Each is one of the permanent error types, which creation never retries."""
    with pytest.raises(ImageNotFoundError, match="swe-gym-no-such-image:0"):
        Sandbox.create(SandboxSpec(image="swe-gym-no-such-image:0"), CONFIG)
    with pytest.raises(ProviderUnavailableError, match="API key"):
        Sandbox.create(SandboxSpec(image=TEST_IMAGE), {**CONFIG, "api_key": "wrong"})
    with pytest.raises(ProviderUnavailableError, match="cannot reach the OpenSandbox server"):
        Sandbox.create(SandboxSpec(image=TEST_IMAGE), {**CONFIG, "domain": "127.0.0.1:9"})


def test_unconfigured_provider_says_what_to_set(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in [k for k in os.environ if k.startswith("SWE_GYM_OPENSANDBOX_")]:
        monkeypatch.delenv(name)
    with pytest.raises(ProviderUnavailableError, match="SWE_GYM_OPENSANDBOX_DOMAIN"):
        Sandbox.create(SandboxSpec(image=TEST_IMAGE), "opensandbox")


def test_an_unreadable_settings_file_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SWE_GYM_OPENSANDBOX_DOMAIN", raising=False)
    monkeypatch.setenv("SWE_GYM_OPENSANDBOX_ENV_FILE", "/nonexistent/opensandbox.env")
    with pytest.raises(ConfigError, match=r"cannot read the settings file /nonexistent/opensandbox\.env"):
        get_provider("opensandbox")


def test_the_runner_daemon_is_restarted_and_never_runs_a_command_twice() -> None:
    """Steps go to a runner daemon in the sandbox; losing it never re-sends a command."""
    with make_sandbox("opensandbox") as box:
        channel = box.aio.backend.channel
        assert channel._daemon  # started at create
        # Its FIFO wiped by the command it runs: that reply still arrives; the daemon then goes, the next
        # call finds none before sending, runs a one-shot runner instead, and the daemon is back after.
        assert box.exec("rm -rf /tmp/.swe_gym-requests; echo wiped", timeout=10).output == "wiped\n"
        time.sleep(2.5)  # its watchdog notices the FIFO is gone
        assert box.exec("echo 2 >> counter; cat counter").output == "2\n"
        assert box.exec("pgrep -fc 'serve-[f]ifo'").output == "1\n"
        # Killed by the very command it runs: that step is lost (the sandbox reported dead), not repeated.
        with pytest.raises(SandboxDiedError):
            box.exec("echo once >> log; pkill -f 'serve-[f]ifo'", timeout=10)
        assert box.exec("cat log").output == "once\n"
        assert channel._daemon
