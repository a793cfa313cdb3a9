"""Provider lookup (names, configs, entry points) and image-name rewriting."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from swe_gym.errors import ConfigError, ProviderNotFoundError
from swe_gym.sandbox import ImageRewriter, Sandbox, SandboxSpec, available_providers, get_provider, register_provider
from swe_gym.sandbox.providers.local import LocalProvider


def test_unknown_provider_names_the_known_ones() -> None:
    with pytest.raises(ProviderNotFoundError, match=r"unknown sandbox provider 'nope'.*docker.*local"):
        get_provider("nope")
    with pytest.raises(ProviderNotFoundError, match="no 'type'"):
        get_provider({"isolation": "none"})


def test_config_mapping_and_bad_options() -> None:
    provider = get_provider({"type": "local", "isolation": "none"})
    assert isinstance(provider, LocalProvider) and provider.config.isolation == "none"
    with pytest.raises(ValueError, match="isolation"):
        get_provider({"type": "local", "isolation": "sometimes"})


def test_register_provider_programmatically() -> None:
    register_provider("local-alias", LocalProvider)
    assert "local-alias" in available_providers()
    assert isinstance(get_provider("local-alias"), LocalProvider)


def test_third_party_provider_through_entry_points(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A real installed-distribution layout on sys.path, as `pip install` of a plugin would leave."""
    (tmp_path / "acme_sandbox.py").write_text(
        "from swe_gym.sandbox.providers.local import LocalProvider\n"
        "class AcmeProvider(LocalProvider):\n"
        "    name = 'acme'\n"
    )
    dist = tmp_path / "acme_sandbox-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: acme-sandbox\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text("[swe_gym.providers]\nacme = acme_sandbox:AcmeProvider\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    assert "acme" in available_providers()
    provider = get_provider("acme", isolation="none")
    with Sandbox.create(SandboxSpec(), provider) as box:
        assert box.exec("echo via-plugin").output == "via-plugin\n"
    sys.modules.pop("acme_sandbox", None)


def test_image_rewrite_first_matching_prefix_wins() -> None:
    rewriter = ImageRewriter.parse("docker.io/swebench/=mirror.example/sb/; docker.io/=mirror.example/hub/")
    assert rewriter.rewrite("docker.io/swebench/sweb.eval:latest") == "mirror.example/sb/sweb.eval:latest"
    assert rewriter.rewrite("docker.io/library/python:3.11") == "mirror.example/hub/library/python:3.11"
    assert rewriter.rewrite("ghcr.io/x/y:1") == "ghcr.io/x/y:1"
    assert ImageRewriter.parse("").rewrite("a:b") == "a:b"
    with pytest.raises(ConfigError, match="PREFIX=REPLACEMENT"):
        ImageRewriter.parse("no-equals-sign")
