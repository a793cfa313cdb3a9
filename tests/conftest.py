"""Shared fixtures: the providers under test and a leak check over the whole session.

Docker tests need a running engine and the test image (``.ci/run`` provides both).
On a developer machine without them they skip with the reason; under CI
(``CI=true``) a missing engine or image is a failure, never a skip.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from swe_gym.sandbox import DEFAULT_RUN_ID, Sandbox, SandboxSpec, get_provider
from swe_gym.sandbox.providers.local import bwrap_works

IN_CI = os.environ.get("CI", "").lower() in ("1", "true", "yes")
TEST_IMAGE = os.environ.get("SWE_GYM_TEST_IMAGE", "swe-gym-test:bookworm")


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


def require_docker() -> None:
    if _DOCKER_PROBLEM is None:
        return
    if IN_CI:
        pytest.fail(f"CI must run the docker tests: {_DOCKER_PROBLEM}")
    pytest.skip(_DOCKER_PROBLEM)


def require_bwrap() -> None:
    if bwrap_works():
        return
    if IN_CI:
        pytest.fail("CI must run the local tests isolated: bubblewrap is missing")
    pytest.skip("bubblewrap (bwrap) is not available")


#: name -> (provider config, image). "local" is bwrap-isolated; "local-unisolated" is the fallback.
PROVIDERS: dict[str, tuple[dict[str, Any], str | None]] = {
    "local": ({"type": "local", "isolation": "bwrap"}, None),
    "local-unisolated": ({"type": "local", "isolation": "none"}, None),
    "docker": ({"type": "docker"}, TEST_IMAGE),
}
ISOLATED = ["local", "docker"]


def provider_setup(name: str) -> tuple[dict[str, Any], str | None]:
    if name == "docker":
        require_docker()
    if name == "local":
        require_bwrap()
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


def leftover_sandboxes() -> dict[str, list[str]]:
    """Sandboxes of this test run still present, per provider (by label)."""
    found: dict[str, list[str]] = {}
    local = get_provider("local")
    found["local"] = [
        home.name
        for home in (local.config.root.iterdir() if local.config.root.is_dir() else [])
        if DEFAULT_RUN_ID in _read(home / "meta.json")
    ]
    if _DOCKER_PROBLEM is None:
        import docker

        containers = docker.from_env().containers.list(all=True, filters={"label": f"swe_gym.run_id={DEFAULT_RUN_ID}"})
        found["docker"] = [c.short_id for c in containers]
    return found


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
