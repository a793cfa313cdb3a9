"""Shared fixtures: the providers under test and a leak check over the whole session.

Every provider runs on its real runtime: Docker tests need a running engine and
the test image; Apptainer tests an ``apptainer`` on PATH (and the test image, to
build their SIF from); OpenSandbox tests a running ``opensandbox-server`` whose
connection settings are in the environment or in the file ``.ci/provision_opensandbox.sh``
writes. ``.ci/run`` provides all of them. On a developer machine without one, its
tests skip with the reason; under CI (``CI=true``) a missing runtime is a failure, never a skip.
"""

from __future__ import annotations

import json
import os
import urllib.request
from collections.abc import Iterator
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from swe_gym.errors import ProviderUnavailableError
from swe_gym.sandbox import AsyncSandbox, Sandbox, SandboxSpec, current_run_id, get_provider
from swe_gym.sandbox.checkpoints import CHECKPOINT_DIR
from swe_gym.sandbox.providers.local import bwrap_works

IN_CI = os.environ.get("CI", "").lower() in ("1", "true", "yes")
TEST_IMAGE = os.environ.get("SWE_GYM_TEST_IMAGE", "swe-gym-test:bookworm")
#: Written by .ci/provision_opensandbox.sh; the provider reads it through SWE_GYM_OPENSANDBOX_ENV_FILE.
OPENSANDBOX_ENV_FILE = Path("/etc/swe-gym/opensandbox.env")
if OPENSANDBOX_ENV_FILE.is_file():
    os.environ.setdefault("SWE_GYM_OPENSANDBOX_ENV_FILE", str(OPENSANDBOX_ENV_FILE))


def _docker_problem() -> str | None:
    try:
        import docker

        client = docker.from_env()
        client.ping()
    except Exception as exc:
        return f"no Docker engine ({exc})"
    try:
        client.images.get(TEST_IMAGE)
    except Exception:
        return f"test image {TEST_IMAGE} missing (run .ci/build_test_image.sh)"
    return None


_DOCKER_PROBLEM = _docker_problem()


@cache
def _apptainer_problem() -> str | None:
    try:
        get_provider("apptainer").binary  # noqa: B018 - finds the runtime or says why not
    except ProviderUnavailableError as exc:
        return f"{exc} (run .ci/provision_apptainer.sh)"
    return _DOCKER_PROBLEM  # the test SIF is built from the Docker test image


@cache
def _opensandbox_problem() -> str | None:
    try:
        domain = get_provider("opensandbox").config.domain
    except ProviderUnavailableError as exc:
        return str(exc)
    if not domain:
        return (
            f"no OpenSandbox server configured (run .ci/provision_opensandbox.sh, which writes {OPENSANDBOX_ENV_FILE})"
        )
    try:
        urllib.request.urlopen(f"http://{domain}/health", timeout=5).read()
    except OSError as exc:
        return f"the OpenSandbox server at {domain} does not answer ({exc})"
    return _DOCKER_PROBLEM  # its sandboxes run the Docker test image


@cache
def _delegating_problem() -> str | None:
    """Never missing: installs the Protocol-only provider's entry point (as ``pip install`` of a plugin would)."""
    import atexit
    import shutil
    import tempfile

    from tests.sandbox.delegating_provider import install_entry_point

    directory = Path(tempfile.mkdtemp(prefix="swe_gym-plugin-"))
    atexit.register(shutil.rmtree, directory, True)
    install_entry_point(directory)
    return None


_PROBLEMS = {
    "local": lambda: None if bwrap_works() else "bubblewrap (bwrap) is not available",
    "local-unisolated": lambda: None,
    "delegating": _delegating_problem,
    "docker": lambda: _DOCKER_PROBLEM,
    "apptainer": _apptainer_problem,
    "opensandbox": _opensandbox_problem,
}


def require(name: str) -> None:
    """Skip without the provider's runtime; under CI its absence is a failure."""
    problem = _PROBLEMS[name]()
    if problem is None:
        return
    if IN_CI:
        pytest.fail(f"CI must run the {name} tests: {problem}")
    pytest.skip(problem)


def require_docker() -> None:
    require("docker")


#: name -> (provider config, image). "local" is bwrap-isolated; "local-unisolated" is the fallback; "delegating"
#: is a third-party provider written to the Protocols alone, found by its entry point
#: (tests/sandbox/delegating_provider.py).
#: OpenSandbox's connection (and, in CI, network_policy=server-default: its deny-all egress policy
#: needs the server's egress sidecar, an image CI cannot obtain) comes from SWE_GYM_OPENSANDBOX_*.
PROVIDERS: dict[str, tuple[dict[str, Any], str | None]] = {
    "local": ({"type": "local", "isolation": "bwrap"}, None),
    "local-unisolated": ({"type": "local", "isolation": "none"}, None),
    "delegating": ({"type": "delegating"}, None),
    "docker": ({"type": "docker"}, TEST_IMAGE),
    "apptainer": ({"type": "apptainer"}, TEST_IMAGE),
    "opensandbox": ({"type": "opensandbox"}, TEST_IMAGE),
}
#: Providers that isolate the sandbox from the host.
ISOLATED = ["local", "docker", "apptainer", "opensandbox"]
#: Where the runner is the sandbox's PID 1, so `kill -9 -1` inside cannot stop it (``runner_protected``).
RUNNER_IS_PID1 = {"local", "docker", "apptainer"}


def provider_setup(name: str) -> tuple[dict[str, Any], str | None]:
    require(name)
    return PROVIDERS[name]


@pytest.fixture(params=list(PROVIDERS))
def provider_name(request: pytest.FixtureRequest) -> str:
    provider_setup(request.param)
    return request.param


@pytest.fixture(params=ISOLATED)
def isolated_provider(request: pytest.FixtureRequest) -> str:
    provider_setup(request.param)
    return request.param


def make_sandbox(name: str, **spec: Any) -> Sandbox:
    config, image = provider_setup(name)
    return Sandbox.create(SandboxSpec(image=image, **spec), config)


@pytest.fixture
def sandbox(provider_name: str) -> Iterator[Sandbox]:
    box = make_sandbox(provider_name)
    yield box
    box.close()


def _read(path: Path) -> str:
    try:
        return path.read_text(errors="ignore")
    except OSError:  # removed meanwhile
        return ""


def leftover_sandboxes(run_id: str | None = None) -> dict[str, list[str]]:
    """Sandboxes of this test run (or ``run_id``) still present, per provider (by label)."""
    run_id = run_id or current_run_id()
    found: dict[str, list[str]] = {}
    local = get_provider("local")
    found["local"] = [
        home.name
        for home in (local.config.root.iterdir() if local.config.root.is_dir() else [])
        if run_id in _read(home / "meta.json")
    ]
    apptainer_root = get_provider("apptainer").config.root
    found["apptainer"] = [
        home.name
        for home in (apptainer_root.iterdir() if apptainer_root.is_dir() else [])
        if run_id in _read(home / "meta.json")
    ]
    if _DOCKER_PROBLEM is None:  # OpenSandbox's Docker runtime turns metadata into container labels
        import docker

        containers = docker.from_env().containers.list(all=True, filters={"label": f"swe_gym.run_id={run_id}"})
        found["docker"] = [c.short_id for c in containers if "opensandbox.io/id" not in c.labels]
        found["opensandbox"] = [c.labels["opensandbox.io/id"] for c in containers if "opensandbox.io/id" in c.labels]
        fork_images = {"label": [f"swe_gym.run_id={run_id}", "swe_gym.forked_from"]}  # docker forks by commit
        found["docker-fork-images"] = [image.short_id for image in docker.from_env().images.list(filters=fork_images)]
        checkpoints = {"label": [f"swe_gym.run_id={run_id}", "swe_gym.checkpoint"]}
        found["docker-checkpoints"] = [image.short_id for image in docker.from_env().images.list(filters=checkpoints)]
    for name, root in (("local", local.config.root), ("apptainer", apptainer_root)):
        saved = root / CHECKPOINT_DIR
        found[f"{name}-checkpoints"] = [
            d.name for d in (saved.iterdir() if saved.is_dir() else []) if run_id in _read(d / "meta.json")
        ]
    if _opensandbox_problem() is None:
        from swe_gym.sandbox.providers.opensandbox import CHECKPOINT_PREFIX

        found["opensandbox-snapshots"] = _fork_snapshots(run_id)
        found["opensandbox-checkpoints"] = _fork_snapshots(run_id, CHECKPOINT_PREFIX)
    return found


def _fork_snapshots(run_id: str, prefix: str | None = None) -> list[str]:
    """The OpenSandbox snapshots forks of ``run_id`` made (named ``swe_gym.fork.<run id>.<time>``), or with
    ``prefix`` its checkpoints (``swe_gym.checkpoint.<run id>.<created>.<expires>``)."""
    from opensandbox import SandboxManager
    from opensandbox.models.sandboxes import SnapshotFilter

    from swe_gym.sandbox.loop import run_sync
    from swe_gym.sandbox.providers.opensandbox import SNAPSHOT_PREFIX

    named = f"{prefix or SNAPSHOT_PREFIX}.{run_id}."

    async def listing() -> list[str]:
        manager = await SandboxManager.create(get_provider("opensandbox").connection())
        try:
            found = await manager.list_snapshots(SnapshotFilter(page_size=200))
            return [s.id for s in found.snapshot_infos if (s.name or "").startswith(named)]
        finally:
            await manager.close()

    return run_sync(listing())


def kill_from_outside(box: Sandbox | AsyncSandbox) -> None:
    """What a crash, an OOM killer or an operator does to an idle sandbox: kill it without asking us.

    Returns once the host has seen it dead (a status ping fails), so the next call finds it dead
    before sending anything: an infrastructure failure (masked), not one the agent's command caused.
    """
    import signal
    import time

    from swe_gym.sandbox import SandboxStatus
    from swe_gym.sandbox.loop import run_sync

    aio = box.aio if isinstance(box, Sandbox) else box
    backend = aio.backend
    if backend.provider_name in ("local", "apptainer"):
        meta = json.loads((backend.home / "meta.json").read_text())
        os.kill(meta["runner_pid"], signal.SIGKILL)
    else:
        import docker

        client = docker.from_env()
        if backend.provider_name == "docker":
            client.containers.get(backend.container_id).kill()
        else:  # opensandbox on its Docker runtime
            (container,) = client.containers.list(filters={"label": f"opensandbox.io/id={backend.id}"})
            container.kill()
    deadline = time.monotonic() + 30
    while run_sync(aio.status()) != SandboxStatus.DEAD:
        assert time.monotonic() < deadline, "the killed sandbox still answers"
        time.sleep(0.1)


@pytest.fixture(scope="session", autouse=True)
def no_leaked_sandboxes() -> Iterator[None]:
    """After the whole suite, no sandbox of this run may be left (counted by label)."""
    yield
    import time

    for _ in range(50):  # auto-removal by the engine is asynchronous
        leaks = {k: v for k, v in leftover_sandboxes().items() if v}
        if not leaks:
            return
        time.sleep(0.2)
    pytest.fail(f"sandboxes leaked by the test suite: {leaks}")
