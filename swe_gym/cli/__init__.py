"""The ``swe-gym`` command line: ``rollout``, ``evaluate``, ``validate``, ``report``, ``cleanup`` and ``--version``."""

from swe_gym.cli.main import build_parser, main

__all__ = ["build_parser", "main"]
