"""``swe-gym cleanup``: remove sandboxes this library left behind, images it prepared, and checkpoints."""

from __future__ import annotations

import argparse
import re
from typing import Any

from swe_gym.errors import ConfigError, ProviderUnavailableError
from swe_gym.sandbox.loop import run_sync
from swe_gym.sandbox.protocol import SandboxCheckpointer
from swe_gym.sandbox.registry import available_providers, get_provider

_UNITS = {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400}
_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smhd]?)\s*$")


def parse_duration(text: str) -> float:
    """Seconds in ``90s``, ``30m``, ``2h``, ``1d`` or a bare number of seconds."""
    match = _DURATION.match(text.lower())
    if not match:
        raise argparse.ArgumentTypeError(f"not a duration: {text!r} (use e.g. 90s, 30m, 2h, 1d)")
    return float(match.group(1)) * _UNITS[match.group(2)]


def add_parser(commands: Any) -> None:
    p = commands.add_parser(
        "cleanup",
        help="remove sandboxes swe_gym created, by run, by age, or all",
        description="Remove sandboxes labelled as created by swe_gym, and the prepared images (tasks' images made "
        "once with their repository, setup and scrubbed history: docker's no container still uses, local's saved "
        "homes) of the selection. Say which: --run-id, --older-than, "
        "or --all (which also removes live sandboxes of other swe_gym processes). Checkpoints (durable episodes) "
        "go with their run (--run-id, --all); an age sweep (--older-than) takes only those past their TTL, and "
        "--expired removes expired checkpoints alone.",
    )
    p.add_argument("--provider", default="all", help="docker, local, another provider, or all (default: all)")
    p.add_argument("--run-id", default=None, help="only sandboxes of this run (see SWE_GYM_RUN_ID)")
    p.add_argument(
        "--older-than",
        type=parse_duration,
        default=None,
        metavar="DURATION",
        help="only sandboxes older than this (e.g. 90s, 30m, 2h, 1d)",
    )
    p.add_argument("--all", action="store_true", help="every swe_gym sandbox, including live ones")
    p.add_argument(
        "--expired",
        action="store_true",
        help="only checkpoints past their TTL (of --run-id's run, older than --older-than), no sandbox",
    )
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Clean each selected provider; an unavailable one is skipped under ``all``, an error when named."""
    if not (args.all or args.run_id or args.older_than is not None or args.expired):
        raise ConfigError("say which sandboxes to remove: --run-id ID, --older-than AGE, --expired, or --all")
    names = available_providers() if args.provider == "all" else [args.provider]
    for name in names:
        try:
            provider = get_provider(name)
            if args.expired:
                if not isinstance(provider, SandboxCheckpointer):
                    continue
                older = 0.0 if args.older_than is None else args.older_than  # an age filter: expired ones only
                removed = run_sync(provider.cleanup_checkpoints(run_id=args.run_id, older_than_s=older))
            else:
                removed = run_sync(provider.cleanup(run_id=args.run_id, older_than_s=args.older_than))
        except ProviderUnavailableError as exc:
            if args.provider != "all":
                raise
            print(f"{name}: skipped ({exc})")
            continue
        shown = ", ".join(removed[:10]) + (f", ... (+{len(removed) - 10})" if len(removed) > 10 else "")
        print(f"{name}: removed {len(removed)}" + (f" ({shown})" if removed else ""))
    return 0
