"""``swe-gym evaluate``: grade a predictions file (or the gold patches) against a dataset."""

from __future__ import annotations

import argparse
import os
import sys
import time
from typing import Any

from swe_gym.cli.args import add_dataset, add_grading, add_instance_ids, check_grading, duration, load_dataset
from swe_gym.grading.certificate import load_certificate
from swe_gym.grading.evaluation import (
    EvaluationReport,
    InstanceResult,
    evaluate,
    gold_predictions,
    read_predictions,
)
from swe_gym.progress import Progress, say
from swe_gym.sandbox import SandboxSpec
from swe_gym.sandbox.registry import get_provider

DESCRIPTION = """\
Grade predictions against a dataset, as swebench's run_evaluation does. A prediction is a row
{"instance_id", "model_name_or_path", "model_patch"} in a .jsonl file or a .json file (a list,
or an object keyed by instance id). --gold grades the dataset's own gold patches: every instance
should resolve, which checks the images and the tasks.

Bad rows, unknown instance ids, empty, huge, binary or non-diff patches and failing gradings are
reported per instance; the run goes on. Outputs, under RUN_DIR/RUN_ID/:
  MODEL/INSTANCE_ID/{patch.diff, report.json, eval.log}   per instance
  MODEL.RUN_ID.json   the summary: swebench's run-report keys plus a "swe_gym" section
(swebench writes its summary to the current directory; here it stays with the run's logs).
Exit status 0 when the evaluation ran, whatever it resolved; 2 for a usage error."""


def add_parser(commands: Any) -> None:
    p = commands.add_parser(
        "evaluate",
        help="grade a predictions file (or --gold) against a dataset",
        description=DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_dataset(p)
    which = p.add_mutually_exclusive_group(required=True)
    which.add_argument("--predictions", metavar="FILE", help="predictions (.jsonl or .json)")
    which.add_argument("--gold", action="store_true", help="grade the dataset's gold patches")
    add_instance_ids(p, "only these instances (repeatable)")
    add_grading(p, "gradings at a time")
    p.add_argument("--run-id", default=None, help="names the run's directory (default: the start time)")
    p.add_argument("--run-dir", default="runs/evaluation", help="where runs go (default: runs/evaluation)")
    p.add_argument(
        "--certificate",
        default=None,
        metavar="FILE",
        help="a fidelity certificate (swe-gym validate): instances it does not certify are skipped or flagged",
    )
    p.add_argument(
        "--uncertified",
        choices=("skip", "flag"),
        default="flag",
        help="with --certificate: skip (do not grade) or flag (grade and list) uncertified instances (default: flag)",
    )
    p.set_defaults(func=run)


class _Progress:
    """A bar with the counts per outcome (a terminal), and a line per instance with an ETA."""

    def __init__(self, bar: Progress) -> None:
        self.bar = bar
        self.started = time.perf_counter()
        self.counts = {"resolved": 0, "unresolved": 0, "empty_patch": 0, "error": 0, "skipped": 0}

    def __call__(self, result: InstanceResult, done: int, total: int) -> None:
        key = "error" if result.status == "masked" else result.status
        self.counts[key] += 1
        eta = (time.perf_counter() - self.started) / done * (total - done)
        c = self.counts
        skipped = f"  skipped {c['skipped']}" if c["skipped"] else ""
        counts = (
            f"resolved {c['resolved']}  unresolved {c['unresolved']}  empty {c['empty_patch']}  error {c['error']}"
            f"{skipped}"
        )
        self.bar.set_total(total)
        self.bar.advance(
            postfix=counts,
            line=f"[{done}/{total}] {counts}  eta {duration(eta)}  {result.instance_id}: "
            f"{result.status.replace('_', ' ')}",
        )


def run(args: argparse.Namespace) -> int:
    """Grade; print a summary to stdout. Ctrl-C cancels the gradings, closes their sandboxes and returns 130."""
    check_grading(args)
    run_id = args.run_id or time.strftime("%Y%m%d-%H%M%S")
    certificate = load_certificate(args.certificate) if args.certificate else None
    provider = get_provider(args.provider)
    tasks = load_dataset(args)
    if args.gold:
        predictions, invalid = gold_predictions(tasks), []
    else:
        predictions, invalid = read_predictions(args.predictions)
        if args.instance_ids:
            wanted = set(args.instance_ids)
            predictions = [p for p in predictions if p.instance_id in wanted]
            invalid = [e for e in invalid if e.instance_id is None or e.instance_id in wanted]
    say(f"grading {len(predictions)} predictions against {len(tasks)} instances with {args.workers} workers")
    bar = Progress(None, "grading", "instance")
    try:
        report = evaluate(
            tasks,
            predictions,
            provider=provider,
            spec=SandboxSpec(image=args.image),
            workers=args.workers,
            run_dir=args.run_dir,
            run_id=run_id,
            invalid=invalid,
            on_result=_Progress(bar),
            timeout_s=args.timeout,
            harness=args.harness,
            certificate=certificate,
            uncertified=args.uncertified,
        )
    except KeyboardInterrupt:
        bar.close()
        print(
            f"interrupted: gradings cancelled and their sandboxes closed; finished instances are in "
            f"{os.path.join(args.run_dir, run_id)}",
            file=sys.stderr,
        )
        return 130
    finally:
        bar.close()
    _summary(report)
    return 0


def _summary(report: EvaluationReport) -> None:
    extra = report.swe_gym
    submitted = report.submitted_instances
    rate = f" ({report.resolved_instances / submitted:.1%} of submitted)" if submitted else ""
    rows = [
        ("instances", f"{report.total_instances}"),
        ("submitted", f"{submitted}"),
        ("resolved", f"{report.resolved_instances}{rate}"),
        ("unresolved", f"{report.unresolved_instances}"),
        ("empty patch", f"{report.empty_patch_instances}"),
        ("error", f"{report.error_instances} ({len(extra.masked)} masked)"),
        ("no prediction", f"{len(report.incomplete_ids)}"),
        ("invalid rows", f"{len(extra.invalid_predictions)}"),
        ("unknown ids", f"{len(extra.unknown_instance_ids)}"),
    ]
    if extra.uncertified_mode is not None:
        treated = "not graded" if extra.uncertified_mode == "skip" else "graded, flagged"
        rows.append(("uncertified", f"{len(extra.uncertified)} ({treated}; certificate {extra.certificate})"))
    rows += [
        ("wall time s", f"{extra.wall_s:.1f}"),
        ("report", f"{report.path}"),
        ("logs", extra.log_dir),
    ]
    for name, value in rows:
        print(f"{name:<14} {value}")
    for error in extra.invalid_predictions:
        print(f"invalid row    {error.where}: {error.error}")
    for iid, reason in {**extra.errors, **extra.masked}.items():
        print(f"error          {iid}: {reason}")
    for iid, reason in extra.uncertified.items():
        print(f"uncertified    {iid}: {reason}")
