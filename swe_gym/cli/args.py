"""Arguments more than one subcommand takes."""

from __future__ import annotations

import argparse


def add_instance_ids(parser: argparse.ArgumentParser, help_text: str) -> None:
    """``--instance-id ID [ID ...]``, repeatable, into ``args.instance_ids``."""
    parser.add_argument("--instance-id", dest="instance_ids", nargs="+", action="extend", metavar="ID", help=help_text)
