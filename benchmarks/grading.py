"""Overhead of `swe_gym.grading.grade` against grading the same patch by hand in a Docker container.

What is compared
----------------
For each of a few bundled tasks (default 3) and its gold patch, the wall time (``time.perf_counter``) of:

* ``grade()``: ``grade(task, task.patch, provider="docker", spec=SandboxSpec(image=IMG))``: a fresh
  container, the repository uploaded, the patch's paths checked, the work tree listed, the patch applied (``git
  apply``, falling back to other methods only if that fails), the tree listed again and the restore set decided
  (and restored), the markers sealed with a nonce and the canary tests written, the hidden tests written and run by
  the eval script, the log checked and parsed into a report, the container removed.
* ``by hand``: the same steps with the plain sandbox API and nothing else: ``Sandbox.create`` (same spec as grade
  uses: the image, the task's workdir), ``.aio.upload_tar(repo_archive(task))``, write the gold patch and run
  ``git apply``, write the test patch and ``build_eval_script(task, [])``, run it with ``bash``, remove the container.
  Timed twice: up to the end of the eval (``start->eval``), and including the removal (``start->removed``), which
  is the same work ``grade()`` does and what the overhead target uses.

Overhead = grade p50 / by-hand (start->removed) p50 - 1; target <= 10 %. By hand does none of the integrity work
(listings, restore, nonce, canaries), so the overhead is what that work costs (before it, grade() was within 1 % of
by hand). The overhead against ``start->eval`` is
shown too (it charges grade() for the container removal as well).

Why it is fair
--------------
* Same machine, image, process, tasks and patches; the repository tarball is built once before timing (it is cached
  for both methods), and both pay one untimed warm-up grade per task first.
* Rounds interleave the methods per task, the order rotating each round, so noise hits both alike (R=5 by default).
* Both verdicts are checked: grade()'s report must be resolved, and the by-hand log (the text between the eval
  markers, parsed with ``parse_pytest``) must show every FAIL_TO_PASS test PASSED; a mismatch fails the run.
* By hand restores no test files (``restore=[]``) and does no log parsing, so it does slightly less work than grade().

Run: ``python benchmarks/grading.py [--tasks 3] [--rounds 5] [--image IMG] [--json OUT]`` (about 1-2 minutes).
Sandboxes are closed in ``finally``; the run ends with a leak check of ``swe_gym.managed=true`` containers.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

from bench_common import (
    BenchmarkError,
    Summary,
    docker_parser,
    leak_check,
    leaked,
    start_docker_benchmark,
    write_json,
)

from swe_gym.grading import grade, parse_pytest
from swe_gym.grading.eval_script import build_eval_script, test_section
from swe_gym.grading.patch import SCRATCH
from swe_gym.sandbox import Sandbox, SandboxSpec
from swe_gym.sandbox.loop import run_sync
from swe_gym.tasks import SWETask, load_tasks, repo_archive, task_spec

TARGET_OVERHEAD = 0.10


@dataclass
class Samples:
    grade_ms: list[float] = field(default_factory=list)
    hand_eval_ms: list[float] = field(default_factory=list)
    hand_total_ms: list[float] = field(default_factory=list)
    mismatches: list[str] = field(default_factory=list)


def time_grade(task: SWETask, image: str) -> tuple[float, bool]:
    started = time.perf_counter()
    report = grade(task, task.patch, provider="docker", spec=SandboxSpec(image=image))
    elapsed_ms = (time.perf_counter() - started) * 1000.0
    if report.masked:
        raise BenchmarkError(f"grade() of {task.instance_id} was masked: {report.masked_reason}")
    return elapsed_ms, report.resolved


def by_hand_resolved(task: SWETask, log: str) -> bool:
    section = test_section(log)
    status = parse_pytest(section if section is not None else log)
    return all(status.get(test) == "PASSED" for test in task.fail_to_pass)


def time_by_hand(task: SWETask, image: str) -> tuple[float, float, bool]:
    """(ms to the end of the eval, ms to the container removed, verdict)."""
    spec = task_spec(task, SandboxSpec(image=image))
    archive, _ = repo_archive(task)
    started = time.perf_counter()
    box = Sandbox.create(spec, "docker")
    try:
        run_sync(box.aio.upload_tar(archive))
        box.write_file(f"{SCRATCH}/gold.patch", task.patch)
        applied = box.exec(f"git apply --binary {SCRATCH}/gold.patch", timeout=300)
        if applied.exit_code != 0:
            raise BenchmarkError(f"git apply of the gold patch failed for {task.instance_id}: {applied.output}")
        box.write_file(f"{SCRATCH}/test.patch", task.test_patch)
        box.write_file(f"{SCRATCH}/eval.sh", build_eval_script(task, []), mode=0o755)
        result = box.exec(f"bash {SCRATCH}/eval.sh", timeout=task.eval.timeout_s, max_output_bytes=64 << 20)
        eval_ms = (time.perf_counter() - started) * 1000.0
    finally:
        box.close()
    total_ms = (time.perf_counter() - started) * 1000.0
    return eval_ms, total_ms, by_hand_resolved(task, result.output)


def measure(tasks: Sequence[SWETask], image: str, rounds: int) -> Samples:
    samples = Samples()
    for task in tasks:  # warm-up: builds the repository archive, loads docker/python caches
        repo_archive(task)
        time_grade(task, image)
        time_by_hand(task, image)
    for index in range(rounds):
        for task in tasks:
            order = ("grade", "hand") if index % 2 == 0 else ("hand", "grade")
            for method in order:
                if method == "grade":
                    ms, resolved = time_grade(task, image)
                    samples.grade_ms.append(ms)
                    label = "grade()"
                else:
                    eval_ms, total_ms, resolved = time_by_hand(task, image)
                    samples.hand_eval_ms.append(eval_ms)
                    samples.hand_total_ms.append(total_ms)
                    label = "by hand"
                if not resolved:
                    samples.mismatches.append(f"{label} did not resolve {task.instance_id} with its gold patch")
    return samples


def report(samples: Samples) -> tuple[float, bool]:
    rows = [
        ("grade()", samples.grade_ms),
        ("by hand, start->removed", samples.hand_total_ms),
        ("by hand, start->eval", samples.hand_eval_ms),
    ]
    print(f"\n{'method':<26}{'n':>5}{'p50 ms':>10}{'p90 ms':>10}{'mean ms':>10}")
    for name, values in rows:
        s = Summary.of(values)
        print(f"{name:<26}{s.n:>5}{s.p50:>10.1f}{s.p90:>10.1f}{s.mean:>10.1f}")
    g = Summary.of(samples.grade_ms)
    total, eval_only = Summary.of(samples.hand_total_ms), Summary.of(samples.hand_eval_ms)
    overhead = g.p50 / total.p50 - 1.0
    print(
        f"  overhead vs by hand (start->removed, same work): p50 {overhead:+.1%}, mean {g.mean / total.mean - 1:+.1%}"
    )
    print(f"  overhead vs by hand (start->eval, no removal):   p50 {g.p50 / eval_only.p50 - 1:+.1%}")
    ok = overhead <= TARGET_OVERHEAD
    print(f"  target overhead <= {TARGET_OVERHEAD:.0%}: {'MET' if ok else 'MISSED'} ({overhead:+.1%})")
    same = not samples.mismatches
    print(f"  verdicts agree (all resolved by both): {'yes' if same else 'NO'}")
    for line in samples.mismatches:
        print(f"    {line}")
    return overhead, same


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = docker_parser(__doc__)
    parser.add_argument("--tasks", type=int, default=3, help="bundled tasks to grade (default: 3)")
    parser.add_argument("--rounds", type=int, default=5, help="timed rounds per method and task (default: 5)")
    args = parser.parse_args(argv)
    if args.tasks < 1 or args.rounds < 1:
        parser.error("--tasks and --rounds must be at least 1")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    info = start_docker_benchmark(args.image)
    if info is None:
        return 2
    tasks = load_tasks("bundled")[: args.tasks]
    print(f"tasks: {', '.join(t.instance_id for t in tasks)}; {args.rounds} rounds after 1 warm-up each")
    samples, error = Samples(), None
    try:
        samples = measure(tasks, args.image, args.rounds)
    except BenchmarkError as exc:
        error = exc
        print(f"benchmark failed: {exc}", file=sys.stderr)
    overhead, same = report(samples) if samples.grade_ms else (float("nan"), False)
    leftover = leak_check()
    write_json(
        args.json,
        {
            "machine": info,
            "tasks": [t.instance_id for t in tasks],
            "samples_ms": {
                "grade": samples.grade_ms,
                "by_hand_start_to_removed": samples.hand_total_ms,
                "by_hand_start_to_eval": samples.hand_eval_ms,
            },
            "overhead_p50": overhead,
            "verdicts_agree": same,
            "leftover": leftover,
        },
    )
    return 1 if leaked(leftover) or not same or error else 0


if __name__ == "__main__":
    sys.exit(main())
