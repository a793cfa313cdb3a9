"""Image references split into repository and tag by the docker SDK's parser (digests, registry ports)."""

from __future__ import annotations

import uuid

import pytest

from swe_gym.sandbox import get_provider
from swe_gym.sandbox.images import split_tag
from swe_gym.sandbox.loop import run_sync
from tests.conftest import make_sandbox, require_docker

DIGEST = "sha256:" + "0123456789abcdef" * 4


@pytest.mark.parametrize(
    ("image", "parts"),
    [
        ("python", ("python", "latest")),
        ("python:3.11", ("python", "3.11")),
        ("host:5000/name", ("host:5000/name", "latest")),
        ("host:5000/name:tag", ("host:5000/name", "tag")),
        ("host:5000/team/name:1.0-rc", ("host:5000/team/name", "1.0-rc")),
        (f"name@{DIGEST}", ("name", DIGEST)),  # the old split on the last ':' gave ("name@sha256", "0123...")
        (f"host:5000/name@{DIGEST}", ("host:5000/name", DIGEST)),
        (
            f"docker.io/swebench/sweb.eval.x86_64.django_1776_django-11099@{DIGEST}",
            (
                "docker.io/swebench/sweb.eval.x86_64.django_1776_django-11099",
                DIGEST,
            ),
        ),
    ],
)
def test_split_tag(image: str, parts: tuple[str, str]) -> None:
    assert split_tag(image) == parts


@pytest.mark.parametrize("tag", [":t1", ""])
def test_docker_commits_to_a_registry_name_with_a_port(tag: str) -> None:
    """The docker provider names what it commits through `split_tag`: the port stays in the repository."""
    require_docker()
    import docker

    name = f"localhost:5000/swe-gym-tag-test-{uuid.uuid4().hex[:8]}"
    provider = get_provider("docker")
    client = docker.from_env()
    with make_sandbox("docker") as box:
        info = run_sync(provider.commit(box.aio.backend, name + tag, {"purpose": "tag-test"}))
    try:
        assert f"{name}{tag or ':latest'}" in client.images.get(info.id).tags
    finally:
        client.images.remove(info.id, force=True)
