"""``swe-gym export``: tasks written in another framework's format (Harbor task directories)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from swe_gym.cli.args import add_dataset, add_instance_ids, load_dataset
from swe_gym.progress import say

DESCRIPTION = """\
Write each task of --dataset as a Harbor task directory under --out (<out>/<instance_id>/: task.toml,
instruction.md, environment/Dockerfile, tests/ with the hidden tests and the verifier swe_gym grades
by, solution/solve.sh with the gold patch), which `harbor run -p <out> -a oracle` runs. The exported
tests/test.sh runs tests/verify.py, which writes the reward itself from per-test results, after every
test process is gone; bundled tasks carry the safe grader's canaries and twins (two passes, the split
drawn at run time, the tests run as an unprivileged user). Bundled and SWE-bench-format tasks; a task
whose log parser an exported verifier does not carry is refused with the reason before anything is
written. See docs/harbor.md for what each side enforces."""


def add_parser(commands: Any) -> None:
    p = commands.add_parser(
        "export",
        help="write tasks as Harbor task directories",
        description=DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_dataset(p)
    add_instance_ids(p, "only these instances (repeatable)")
    p.add_argument("--format", choices=["harbor"], default="harbor", help="the task format written (harbor)")
    p.add_argument("--out", required=True, metavar="DIR", help="where the task directories go (made if missing)")
    p.add_argument(
        "--image", default=None, help="the image tasks that name none start FROM (bundled tasks: the test image)"
    )
    p.add_argument(
        "--provider",
        default="docker",
        help="where the gold run that validates a bundled task's twins runs, in the task's image (default: docker)",
    )
    p.add_argument(
        "--no-twins",
        dest="twins",
        action="store_false",
        help="export bundled tasks without twins (and without the gold run); canaries and the rest remain",
    )
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from swe_gym.tasks.harbor_export import export_tasks

    written = export_tasks(
        load_dataset(args), Path(args.out), image=args.image, provider=args.provider, twins=args.twins
    )
    say(f"wrote {len(written)} Harbor task director{'y' if len(written) == 1 else 'ies'} under {args.out}")
    return 0
