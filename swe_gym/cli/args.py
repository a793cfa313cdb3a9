"""Arguments more than one subcommand takes, and what they share in handling them."""

from __future__ import annotations

import argparse
import os

from swe_gym.errors import ConfigError
from swe_gym.tasks import SWETask, load_tasks


def add_instance_ids(parser: argparse.ArgumentParser, help_text: str) -> None:
    """``--instance-id ID [ID ...]``, repeatable, into ``args.instance_ids``."""
    parser.add_argument("--instance-id", dest="instance_ids", nargs="+", action="extend", metavar="ID", help=help_text)


def add_dataset(parser: argparse.ArgumentParser) -> None:
    """``--dataset`` and ``--split``: what `load_dataset` reads."""
    parser.add_argument("--dataset", required=True, help="'bundled', a .json/.jsonl task file, or another task source")
    parser.add_argument(
        "--split", default=None, help="dataset split, for sources that have splits (their default: test)"
    )


def load_dataset(args: argparse.Namespace) -> list[SWETask]:
    if args.split is None:
        return load_tasks(args.dataset, instance_ids=args.instance_ids)
    return load_tasks(args.dataset, instance_ids=args.instance_ids, split=args.split)


def add_grading(parser: argparse.ArgumentParser, workers_help: str) -> None:
    """Where and how gradings run: ``--provider --image --workers --timeout --harness`` (`check_grading`)."""
    parser.add_argument(
        "--provider", default="local", help="sandbox provider: local, docker, apptainer, opensandbox (default: local)"
    )
    parser.add_argument("--image", default=None, help="image for tasks that name none (container providers)")
    parser.add_argument(
        "--workers", type=int, default=min(4, os.cpu_count() or 1), help=f"{workers_help} (default: min(4, CPUs))"
    )
    parser.add_argument(
        "--timeout",
        type=float,
        default=None,
        metavar="S",
        help="eval timeout per grading in seconds (default: the task's)",
    )
    parser.add_argument(
        "--harness",
        choices=("safe", "official"),
        default="safe",
        help="safe: swe_gym's grader (integrity checks; the default). official: run_evaluation's rules exactly "
        "(its apply order and log checks, none of ours), for leaderboard-comparable numbers",
    )


def check_grading(args: argparse.Namespace) -> None:
    if args.workers < 1:
        raise ConfigError(f"--workers must be >= 1, got {args.workers}")
    if args.timeout is not None and args.timeout <= 0:
        raise ConfigError(f"--timeout must be > 0, got {args.timeout}")


def duration(seconds: float) -> str:
    """``1m05s`` / ``42s``, for ETAs."""
    minutes, secs = divmod(round(seconds), 60)
    return f"{minutes}m{secs:02d}s" if minutes else f"{secs}s"
