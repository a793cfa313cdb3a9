"""``swe-gym validate``: the fidelity certificate of a dataset (gold and empty patch, k times each)."""

from __future__ import annotations

import argparse
import re
import sys
import time
from pathlib import Path
from typing import Any

from swe_gym.cli.args import add_dataset, add_grading, add_instance_ids, check_grading, duration, load_dataset
from swe_gym.errors import ConfigError
from swe_gym.grading.certificate import Certificate, RunEvent, validate
from swe_gym.progress import Progress, say
from swe_gym.sandbox import SandboxSpec
from swe_gym.sandbox.registry import get_provider

DESCRIPTION = """\
Grade every instance's gold patch and the empty patch K times each, in fresh sandboxes, and write
the fidelity certificate: per instance, gold resolved k/k, empty unresolved k/k, masked runs and
why, the tests whose status varied between runs of the same patch (flaky), the image's digest and
each run's duration; plus a summary. An instance passes when gold resolved every time, the empty
patch never did, nothing was masked or raised, and no graded test is flaky.

`swe-gym evaluate --certificate FILE` and the envs' certificate= option use it to skip or flag the
instances that failed it. Exit status 0 when the validation ran, whatever it found; 2 for a usage
error; 130 on Ctrl-C (gradings cancelled, sandboxes closed, nothing written)."""


def add_parser(commands: Any) -> None:
    p = commands.add_parser(
        "validate",
        help="grade gold and empty patches k times: a dataset's fidelity certificate",
        description=DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_dataset(p)
    add_instance_ids(p, "only these instances (repeatable)")
    p.add_argument("--k", type=int, default=3, help="gradings of each patch per instance (default: 3)")
    add_grading(p, "gradings at a time, over all instances")
    p.add_argument(
        "--out",
        default=None,
        metavar="FILE",
        help="where the certificate goes (default: runs/validate/DATASET-NAME.TIME.json)",
    )
    p.set_defaults(func=run)


def dataset_name(source: str) -> str:
    """A file-name-safe name for ``source``: a file's stem, or the dataset name with '/' as '__'."""
    path = Path(source)
    name = path.name.split(".")[0] if path.exists() else source.replace("/", "__")
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", name).strip(".") or "dataset"


class _Progress:
    """A bar of the runs with instances passed and failed so far (a terminal); a line per finished instance."""

    def __init__(self, bar: Progress) -> None:
        self.bar = bar
        self.started = time.perf_counter()
        self.passed = 0
        self.failed = 0

    def __call__(self, event: RunEvent, done: int, total: int) -> None:
        elapsed = time.perf_counter() - self.started
        eta = elapsed / done * (total - done)
        entry = event.instance
        if entry is not None:
            if entry.passed:
                self.passed += 1
            else:
                self.failed += 1
        so_far = f"passed {self.passed}  failed {self.failed}"
        self.bar.set_total(total)
        if entry is None:
            self.bar.advance(postfix=f"{so_far}  {event.instance_id}: {event.patch} run {event.run}")
            return
        counts = f"gold {entry.gold_resolved}/{entry.k}, empty {entry.empty_unresolved}/{entry.k}"
        verdict = "passed" if entry.passed else f"FAILED: {entry.problems[0]}"
        self.bar.advance(
            postfix=so_far,
            line=f"[runs {done}/{total}] {so_far}  eta {duration(eta)}  {entry.instance_id}: {verdict} ({counts})",
        )


def _default_out(dataset: str) -> Path:
    return Path("runs") / "validate" / f"{dataset_name(dataset)}.{time.strftime('%Y%m%d-%H%M%S')}.json"


def run(args: argparse.Namespace) -> int:
    """Validate; write the certificate; print a summary. Ctrl-C cancels the gradings and returns 130."""
    if args.k < 1:
        raise ConfigError(f"--k must be >= 1, got {args.k}")
    check_grading(args)
    out = Path(args.out) if args.out else _default_out(args.dataset)
    if out.is_dir():
        raise ConfigError(f"--out {out} is a directory; name a file")
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ConfigError(f"cannot write the certificate under {out.parent}: {exc}") from None
    provider = get_provider(args.provider)
    tasks = load_dataset(args)
    bar = Progress(2 * args.k * len(tasks), "validating", "grading")
    say(
        f"validating {len(tasks)} instances: gold and empty patch {args.k} times each "
        f"({2 * args.k * len(tasks)} gradings, {args.workers} at a time)"
    )
    try:
        certificate = validate(
            tasks,
            k=args.k,
            provider=provider,
            spec=SandboxSpec(image=args.image),
            workers=args.workers,
            on_progress=_Progress(bar),
            timeout_s=args.timeout,
            dataset=args.dataset,
            split=args.split,
            harness=args.harness,
        )
    except KeyboardInterrupt:
        bar.close()
        print("interrupted: gradings cancelled and their sandboxes closed; no certificate written", file=sys.stderr)
        return 130
    finally:
        bar.close()
    try:
        certificate.write(out)
    except OSError as exc:
        raise ConfigError(f"could not write the certificate to {out}: {exc}") from None
    summary(certificate)
    return 0


def summary(certificate: Certificate) -> None:
    """The certificate's summary as a table on stdout, then each failed instance's problems."""
    s = certificate.summary
    rate = f" ({s.passed / s.total:.1%})" if s.total else ""
    rows = [
        ("instances", f"{s.total}"),
        ("passed", f"{s.passed}{rate}"),
        ("failed", f"{s.failed}"),
        ("flaky", f"{len(s.flaky_ids)}"),
        ("masked", f"{len(s.masked_ids)}"),
        ("runs", f"{2 * certificate.k * s.total} (k={certificate.k}, provider {certificate.provider})"),
        ("wall time s", f"{s.wall_s:.1f}"),
        ("certificate", f"{certificate.path}"),
    ]
    for name, value in rows:
        print(f"{name:<14} {value}")
    for iid in s.failed_ids:
        for problem in certificate.instances[iid].problems:
            print(f"failed         {iid}: {problem}")
    for iid, entry in sorted(certificate.instances.items()):
        if entry.weakly_checked:
            print(f"weakly checked {iid}: {entry.weakly_checked} (report.uncovered_tests says why)")
