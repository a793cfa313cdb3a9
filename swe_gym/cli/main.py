"""``swe-gym``: the entry point; subcommands live in their own modules."""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence

from pydantic import ValidationError

from swe_gym import progress
from swe_gym.cli import capture_proxy, cleanup, evaluate, export, report, rollout, serve, validate
from swe_gym.cli.errors import command_line_message, subcommand
from swe_gym.errors import SWEGymError


def _setup_logging(verbosity: int) -> None:
    level = logging.WARNING if verbosity <= 0 else logging.INFO if verbosity == 1 else logging.DEBUG
    handler = progress.log_handler()  # above the progress bars, never through them
    handler.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level)
    logging.captureWarnings(True)


def build_parser() -> argparse.ArgumentParser:
    from swe_gym import __version__

    parser = argparse.ArgumentParser(prog="swe-gym", description="Software-engineering tasks as Gymnasium envs.")
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    parser.add_argument("-v", "--verbose", action="count", default=0, help="more log output (-vv: debug)")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    rollout.add_parser(commands)
    evaluate.add_parser(commands)
    validate.add_parser(commands)
    report.add_parser(commands)
    cleanup.add_parser(commands)
    export.add_parser(commands)
    serve.add_parser(commands)
    capture_proxy.add_parser(commands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``swe-gym``; returns the exit status (2 on a swe_gym error, 130 on Ctrl-C). An error is one line
    naming the command's flags (`swe_gym.cli.errors`), never the Python API."""
    parser = build_parser()
    args = parser.parse_args(argv)
    _setup_logging(args.verbose)
    try:
        return int(args.func(args))
    except (SWEGymError, ValidationError) as exc:  # a ValidationError: options that reached a model unchecked
        progress.close_all()
        print(f"error: {command_line_message(exc, subcommand(parser, args.command))}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        progress.close_all()
        print("interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
