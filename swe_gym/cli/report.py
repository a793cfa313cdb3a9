"""``swe-gym report``: an HTML report (charts, one page per episode) of a rollout, evaluation or certificate."""

from __future__ import annotations

import argparse
from typing import Any

DESCRIPTION = """\
Write a self-contained HTML report: OUT/index.html (summary, charts: outcomes, resolve rate per
repository and family, and per run and policy where the input holds several, reward, episode length,
step latency, reset and grade times, masked reasons; a table of episodes) and
OUT/episodes/<n>-<id>.html per episode (actions and observations in order, the patch as a diff, the
verdict, the eval log). No script, no network: open it from disk.

INPUT is told apart by what it holds:
  FILE.jsonl                trajectories (swe-gym rollout --out FILE)
  RUN_DIR or its summary    an evaluation (swe-gym evaluate: runs/evaluation/RUN_ID/)
  CERT.json                 a fidelity certificate (swe-gym validate)
OUT defaults to RUN_DIR/report for an evaluation, else <INPUT's directory>/report/<INPUT's name>."""


def add_parser(commands: Any) -> None:
    p = commands.add_parser(
        "report",
        help="write an HTML report of a rollout, an evaluation or a certificate",
        description=DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("input", metavar="INPUT", help="a rollout's .jsonl, an evaluation run directory, a certificate")
    p.add_argument("--out", default=None, metavar="DIR", help="where the report goes (default: see above)")
    p.add_argument(
        "--tasks",
        default=None,
        metavar="SOURCE",
        help="a task source ('bundled', a file, a dataset) to take each instance's repo and family from "
        "(default: what the input records; else the repo from a SWE-bench-style id)",
    )
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from swe_gym.report import write_report

    tasks = None
    if args.tasks:
        from swe_gym.tasks import load_tasks

        tasks = {t.instance_id: (t.repo, t.family) for t in load_tasks(args.tasks)}
    index = write_report(args.input, args.out, tasks=tasks)
    print(index)
    return 0
