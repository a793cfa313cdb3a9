"""Evaluation throughput: ``swe-gym evaluate`` against swebench 4.x's own ``run_evaluation`` on the same instances.

What is compared
----------------
Both grade the same gold predictions (one JSON file both read) of N instances with the same number of workers, on
the same local images, in this process, one after the other, and the wall time of each whole run is measured
(reading the dataset and predictions, every container started, patched, tested and removed, the reports written):

* ``swe_gym``: ``swe_gym.grading.evaluation.evaluate(tasks, predictions, provider="docker", workers=W)`` (what
  ``swe-gym evaluate --provider docker --workers W`` runs), tasks from the rows (``toolkit: "swebench"``, so the
  official eval script, log parser and resolution rule; ``--harness`` picks swe_gym's grading mode where the
  installed swe_gym has one).
* ``swebench``: ``swebench.harness.run_evaluation.main(dataset_name=ROWS.json, predictions_path=PREDS.json,
  max_workers=W, namespace="swebench", cache_level="instance", ...)``: for each instance it creates a container of
  ``swebench/sweb.eval.x86_64.<id, "__" as "_1776_">:latest`` (``TestSpec.instance_image_key``; with a namespace
  ``is_remote_image`` is true, so ``build_container`` only looks the image up and, found, neither builds nor pulls),
  copies the patch in, applies it, runs the eval script, parses the log, and stops and removes the container.

The instances are the Django row of ``real_image.py`` (django__django-11099) under N distinct instance ids: the
first is the row itself, the others ``django__django-11099-benchK``, each with its own tag of the same image
(``swebench/sweb.eval.x86_64.django_1776_django-11099-benchK:latest``); every task's ``image`` is that tag, so both
sides start containers of the very same tags. Tags this run added are removed at the end (the image stays).

Why it is fair, and what differs
--------------------------------
* Same machine, process, images, predictions, instance count and worker count; the order of the two runs
  alternates per round (``--rounds``), and each side's first run on a fresh process is preceded by an untimed
  one-instance warm-up (imports, docker client, caches).
* Verdicts must agree: both must report every gold instance resolved; a mismatch fails the run.
* swebench's ``make_test_spec`` builds each instance's environment-image script too, and for django that fetches
  ``requirements.txt`` from GitHub (unreachable here). In this benchmark process only,
  ``swebench.harness.test_spec.python.get_requirements`` is replaced with a function returning ``""``: the script it
  feeds builds the env image, which is never used because the instance image exists. Nothing else of swebench is
  changed.
* run_evaluation's containers use Docker's default bridge network (swebench sets none), where PyPI is reachable
  only through a TLS-intercepting proxy whose CA they lack. Its eval script's ``python -m pip install -e .`` needs
  no network here (the dependencies are installed and Django 3.0 has no pyproject.toml, so no build isolation);
  pip's self version check may try PyPI and fail its TLS handshake, which pip ignores. swe_gym's sandboxes have no
  network at all.
* run_evaluation stops each container with ``container.stop(timeout=15)``; its ``tail -f /dev/null`` runs as PID 1
  and ignores SIGTERM, so each stop waits the full 15 s before the kill. That is how run_evaluation behaves on
  SWE-bench images too (they have no init either), so it is measured as is; the wait is printed (read from
  run_evaluation's own ``run_instance.log`` lines), with an estimate of swebench's rate were the stops instant
  (wall time less the waits spread over the workers), so that the rest of the gap can be told apart.

Printed: instances/minute for both and the ratio swe_gym / swebench (target >= 4x).

Run: ``python benchmarks/real_image.py`` once, then ``python benchmarks/evaluate_vs_official.py [--instances 8]
[--workers 2] [--rounds 1] [--harness safe] [--json OUT]`` (about 2 minutes with the defaults). Everything either
side writes (swebench's ``logs/`` and report JSON, which go to the working directory, and swe_gym's run directory)
goes to a temporary directory, removed at the end (``--keep-logs`` keeps it). Containers of either side left behind
are removed; the run ends with a leak check.
"""

from __future__ import annotations

import argparse
import contextlib
import inspect
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from bench_common import (
    BenchmarkError,
    Summary,
    image_present,
    leak_check,
    leaked,
    machine_info,
    print_machine,
    write_json,
)
from real_image import DEFAULT_ROW

from swe_gym.grading.evaluation import evaluate, read_predictions
from swe_gym.tasks import SWETask

TARGET_RATIO = 4.0
MODEL = "gold"


def swebench_image(instance_id: str) -> str:
    """The tag swebench 4.x's ``TestSpec.instance_image_key`` gives an instance with ``namespace="swebench"``."""
    return f"swebench/sweb.eval.x86_64.{instance_id.lower()}:latest".replace("__", "_1776_")


@dataclass
class Instances:
    rows: list[dict[str, Any]]
    added_tags: list[str]
    rows_path: Path
    predictions_path: Path


def make_instances(row: dict[str, Any], count: int, source_image: str, scratch: Path) -> Instances:
    """``count`` copies of ``row`` under distinct ids, each with its own tag of ``source_image``; rows and
    gold predictions written to ``scratch``."""
    rows, added = [], []
    for index in range(count):
        instance_id = row["instance_id"] if index == 0 else f"{row['instance_id']}-bench{index}"
        tag = swebench_image(instance_id)
        if not image_present(tag):
            subprocess.run(["docker", "tag", source_image, tag], check=True, capture_output=True)
            added.append(tag)
        rows.append({**row, "instance_id": instance_id, "image": tag})
    rows_path = scratch / "dataset.json"
    rows_path.write_text(json.dumps(rows, indent=1))
    predictions = [
        {"instance_id": r["instance_id"], "model_name_or_path": MODEL, "model_patch": r["patch"]} for r in rows
    ]
    predictions_path = scratch / "predictions.json"
    predictions_path.write_text(json.dumps(predictions, indent=1))
    return Instances(rows, added, rows_path, predictions_path)


def untag(tags: Sequence[str]) -> None:
    """Remove tags this run added (``docker rmi`` of a tag whose image has other tags only untags it)."""
    for tag in tags:
        subprocess.run(["docker", "image", "rm", tag], capture_output=True, check=False)


@contextlib.contextmanager
def working_directory(path: Path) -> Iterator[None]:
    previous = Path.cwd()
    os.chdir(path)
    try:
        yield
    finally:
        os.chdir(previous)


# -- the two sides -------------------------------------------------------------------------------------------------


@dataclass
class Outcome:
    seconds: float
    resolved: set[str]
    unresolved: set[str] = field(default_factory=set)
    errors: set[str] = field(default_factory=set)
    stop_s: list[float] = field(default_factory=list)  # swebench: per instance, container.stop() to its removal


def stop_waits(log_root: Path) -> list[float]:
    """Seconds each instance of a run_evaluation run spent stopping its container, from its run_instance.log."""
    waits = []
    for path in sorted(log_root.glob("*/*/run_instance.log")):
        stamps: dict[str, datetime] = {}
        for line in path.read_text(errors="replace").splitlines():
            for key, marker in (("stop", "Attempting to stop container"), ("remove", "Attempting to remove container")):
                if marker in line and key not in stamps:
                    stamps[key] = datetime.strptime(line[:23], "%Y-%m-%d %H:%M:%S,%f")
        if len(stamps) == 2:
            waits.append((stamps["remove"] - stamps["stop"]).total_seconds())
    return waits


def run_swe_gym(inst: Instances, workers: int, run_dir: Path, harness: str | None) -> Outcome:
    started = time.perf_counter()
    tasks = [SWETask.model_validate(row) for row in json.loads(inst.rows_path.read_text())]
    predictions, invalid = read_predictions(inst.predictions_path)
    extra: dict[str, Any] = {}
    if harness is not None:
        extra["harness"] = harness
    report = evaluate(
        tasks,
        predictions,
        provider="docker",
        workers=workers,
        run_dir=run_dir,
        run_id=f"bench-{uuid.uuid4().hex[:8]}",
        invalid=invalid,
        **extra,
    )
    elapsed = time.perf_counter() - started
    return Outcome(elapsed, set(report.resolved_ids), set(report.unresolved_ids), set(report.error_ids))


def offline_requirements() -> None:
    """In this process only: swebench's django requirements fetcher (GitHub) returns "" (see the docstring)."""
    from swebench.harness.test_spec import python as swebench_python

    swebench_python.get_requirements = lambda instance: ""  # type: ignore[assignment]


def run_swebench(inst: Instances, workers: int, cwd: Path) -> Outcome:
    from swebench.harness.run_evaluation import main as run_evaluation

    run_id = f"bench-{uuid.uuid4().hex[:8]}"
    hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    limit = hard if hard != resource.RLIM_INFINITY else 1 << 20
    started = time.perf_counter()
    with working_directory(cwd):
        report_path = run_evaluation(
            dataset_name=str(inst.rows_path),
            split="test",
            instance_ids=[],
            predictions_path=str(inst.predictions_path),
            max_workers=workers,
            force_rebuild=False,
            cache_level="instance",  # never remove an instance image (the default removes ones it did not find)
            clean=False,
            open_file_limit=limit,  # main() sets soft = hard = this; the hard limit as it is keeps both as they are
            run_id=run_id,
            timeout=1800,
            namespace="swebench",
            rewrite_reports=False,
            modal=False,
            instance_image_tag="latest",
            env_image_tag="latest",
            report_dir=str(cwd),
        )
        elapsed = time.perf_counter() - started
        if report_path is None:
            raise BenchmarkError("run_evaluation wrote no report")
        report = json.loads(Path(report_path).read_text())
        waits = stop_waits(cwd / "logs" / "run_evaluation" / run_id)
    argv = ["docker", "ps", "-aq", "--filter", f"name={run_id}"]  # its containers are sweb.eval.<id>.<run_id>
    leftover = subprocess.run(argv, capture_output=True, text=True, check=False).stdout.split()
    if leftover:
        print(f"  removing {len(leftover)} container(s) run_evaluation left behind")
        subprocess.run(["docker", "rm", "-f", *leftover], capture_output=True, check=False)
    resolved, unresolved, errors = (set(report.get(key, [])) for key in ("resolved_ids", "unresolved_ids", "error_ids"))
    return Outcome(elapsed, resolved, unresolved, errors, waits)


# -- the benchmark -------------------------------------------------------------------------------------------------


def per_minute(count: int, seconds: float) -> float:
    return count / seconds * 60.0 if seconds > 0 else float("nan")


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n", 1)[0])
    parser.add_argument("--row", type=Path, default=DEFAULT_ROW, help=f"task row from real_image.py ({DEFAULT_ROW})")
    parser.add_argument("--instances", type=int, default=8, help="instances N (default: 8)")
    parser.add_argument("--workers", type=int, default=2, help="workers on both sides (default: 2)")
    parser.add_argument("--rounds", type=int, default=1, help="timed runs of each side, order alternating (default 1)")
    parser.add_argument("--no-warmup", action="store_true", help="skip the untimed one-instance warm-up of each side")
    parser.add_argument(
        "--harness", default=None, help="swe_gym's grading mode (e.g. safe, official) where evaluate() takes one"
    )
    parser.add_argument("--keep-logs", action="store_true", help="keep the temporary directory with both sides' logs")
    parser.add_argument("--json", type=Path, metavar="OUT", help="also write the raw numbers to this JSON file")
    args = parser.parse_args(argv)
    if args.instances < 1 or args.workers < 1 or args.rounds < 1:
        parser.error("--instances, --workers and --rounds must be at least 1")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    if not args.row.is_file():
        print(f"no task row at {args.row}: run `python benchmarks/real_image.py` first", file=sys.stderr)
        return 2
    row = json.loads(args.row.read_text())
    source = row.get("image") or ""
    if not image_present(source):
        print(f"image {source!r} is not on this Docker engine: run `python benchmarks/real_image.py`", file=sys.stderr)
        return 2
    harness = args.harness
    if harness is not None and "harness" not in inspect.signature(evaluate).parameters:
        print(f"this swe_gym's evaluate() has no harness option: --harness {harness} ignored")
        harness = None
    info = machine_info(source)
    print_machine(info)
    print(
        f"{args.instances} instances (django__django-11099 under distinct ids, one tag each of {source}), gold "
        f"predictions, {args.workers} workers each side, {args.rounds} round(s)"
        + ("" if args.no_warmup else " after an untimed one-instance warm-up of each")
        + (f"; swe_gym harness {harness}" if harness else "")
    )
    offline_requirements()
    scratch = Path(tempfile.mkdtemp(prefix="swe_gym_eval_vs_official."))
    inst: Instances | None = None
    times: dict[str, list[float]] = {"swe_gym": [], "swebench": []}
    stops: list[float] = []
    net_of_stops: list[float] = []  # swebench's wall time less its stop waits spread over the workers (an estimate)
    mismatches: list[str] = []
    error: Exception | None = None
    try:
        inst = make_instances(row, args.instances, source, scratch)
        expected = {r["instance_id"] for r in inst.rows}
        if not args.no_warmup:
            warm_dir = scratch / "warm"
            (warm_dir / "swebench").mkdir(parents=True)
            warm = make_instances(row, 1, source, warm_dir)
            print("\n-- warm-up (untimed): one instance on each side", flush=True)
            run_swe_gym(warm, 1, warm_dir / "swe_gym", harness)
            run_swebench(warm, 1, warm_dir / "swebench")
        for index in range(args.rounds):
            order = ("swe_gym", "swebench") if index % 2 == 0 else ("swebench", "swe_gym")
            for side in order:
                where = scratch / f"round{index}" / side
                where.mkdir(parents=True)
                print(f"\n-- round {index + 1}: {side}", flush=True)
                outcome = (
                    run_swe_gym(inst, args.workers, where, harness)
                    if side == "swe_gym"
                    else run_swebench(inst, args.workers, where)
                )
                times[side].append(outcome.seconds)
                stops.extend(outcome.stop_s)
                if side == "swebench" and outcome.stop_s:
                    net_of_stops.append(outcome.seconds - sum(outcome.stop_s) / args.workers)
                print(
                    f"   {side}: {outcome.seconds:.1f} s, resolved {len(outcome.resolved)}/{len(expected)}"
                    f", unresolved {len(outcome.unresolved)}, errors {len(outcome.errors)}",
                    flush=True,
                )
                if outcome.resolved != expected:
                    missing = sorted(expected - outcome.resolved)
                    mismatches.append(f"round {index + 1}: {side} did not resolve {missing}")
    except (BenchmarkError, subprocess.CalledProcessError, OSError) as exc:
        error = exc
        print(f"benchmark failed: {type(exc).__name__}: {exc}", file=sys.stderr)
    finally:
        if inst is not None:
            untag(inst.added_tags)
        if args.keep_logs:
            print(f"logs kept in {scratch}")
        else:
            shutil.rmtree(scratch, ignore_errors=True)
        leftover = leak_check()
    ratio = float("nan")
    rates: dict[str, float] = {}
    if times["swe_gym"] and times["swebench"]:
        print(f"\n{'side':<12}{'runs':>6}{'p50 s':>10}{'instances/min':>16}")
        for side, samples in times.items():
            s = Summary.of(samples)
            rates[side] = per_minute(args.instances, s.p50)
            print(f"{side:<12}{s.n:>6}{s.p50:>10.1f}{rates[side]:>16.1f}")
        ratio = rates["swe_gym"] / rates["swebench"]
        print(
            f"  swe_gym / swebench = {ratio:.2f}x instances/minute (target >= {TARGET_RATIO:.0f}x): "
            f"{'MET' if ratio >= TARGET_RATIO else 'MISSED'}"
        )
        if stops:
            stop = Summary.of(stops)
            print(
                f"  run_evaluation's container.stop(timeout=15): p50 {stop.p50:.1f} s per instance "
                f"({sum(stops) / len(times['swebench']):.0f} s of container-time per run, {args.workers} workers)"
            )
            net = per_minute(args.instances, Summary.of(net_of_stops).p50)
            print(
                f"  were those stops instant (estimate: wall - stop waits / workers), swebench would do "
                f"{net:.1f} instances/min: swe_gym / that = {rates['swe_gym'] / net:.2f}x"
            )
    same = not mismatches and error is None
    print(f"  verdicts agree (every gold instance resolved by both): {'yes' if same else 'NO'}")
    for line in mismatches:
        print(f"    {line}")
    write_json(
        args.json,
        {
            "machine": info,
            "instances": args.instances,
            "workers": args.workers,
            "harness": harness,
            "seconds": times,
            "instances_per_minute": rates,
            "swebench_stop_wait_s": stops,
            "swebench_seconds_net_of_stop_waits_estimate": net_of_stops,
            "ratio": ratio,
            "target": TARGET_RATIO,
            "verdicts_agree": same,
            "mismatches": mismatches,
            "error": f"{type(error).__name__}: {error}" if error else None,
            "leftover": leftover,
        },
    )
    return 0 if same and not leaked(leftover) else 1


if __name__ == "__main__":
    sys.exit(main())
