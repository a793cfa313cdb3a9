"""The ``swe-gym`` command line: ``rollout``, ``evaluate``, ``validate``, ``report``, ``cleanup``, ``export``,
``serve``, ``capture-proxy`` and ``--version``."""

from swe_gym.cli.main import build_parser, main

__all__ = ["build_parser", "main"]
