"""Fixtures of the env tests."""

from __future__ import annotations

from collections.abc import Iterator

import gymnasium as gym
import pytest

from tests.conftest import provider_setup


@pytest.fixture
def env() -> Iterator[gym.Env]:
    """``swe_gym/SWE-v0`` on the bwrap-isolated local provider, bundled tasks, ``max_steps=5``; closed after."""
    provider_setup("local")
    environment = gym.make("swe_gym/SWE-v0", max_steps=5)
    yield environment
    environment.close()
