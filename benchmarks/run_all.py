"""Run every benchmark in this folder, one after another, and fail if any of them failed.

Each script runs as a subprocess of the same interpreter (``sys.executable``), in sequence so they never compete for
the machine, with its output streamed as it comes. Scripts: step_overhead, reset_pool, throughput, grading, soak,
providers (which skips, with the reason, each sandbox provider this machine cannot run), then real_image (builds the
real-size Django image), grading_speed and evaluate_vs_official on it, fork (fork latency per provider, on the
bundled tasks and that image), checkpoint (checkpoint and resume per provider) and step_floor (the step against
its floor on local and docker).

Run: ``python benchmarks/run_all.py [--only NAME ...] [--json-dir DIR]`` (about 12 minutes on 2 cores). With
``--json-dir`` each script also writes its raw numbers to ``DIR/<name>.json``. Exit status: 0 if every script exited
0, else 1 (a summary of each script's status and duration is printed last).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

HERE = Path(__file__).resolve().parent
SCRIPTS = (
    "step_overhead",
    "reset_pool",
    "throughput",
    "grading",
    "soak",
    "providers",
    "real_image",  # builds the real-size image the next two measure on (once; ~70 s, needs PyPI)
    "grading_speed",
    "evaluate_vs_official",
    "fork",
    "checkpoint",
    "step_floor",
)
#: Scripts that prepare rather than measure: no --json.
PREPARES = {"real_image"}


def run_script(name: str, json_dir: Path | None) -> tuple[int, float]:
    argv = [sys.executable, "-u", str(HERE / f"{name}.py")]
    if json_dir is not None and name not in PREPARES:
        argv += ["--json", str(json_dir / f"{name}.json")]
    print(f"\n===== {name}: {' '.join(argv)}", flush=True)
    started = time.perf_counter()
    try:
        returncode = subprocess.run(argv, check=False).returncode  # inherits stdout/stderr: streamed as it comes
    except KeyboardInterrupt:
        print(f"===== {name}: interrupted", flush=True)
        raise
    elapsed = time.perf_counter() - started
    print(f"===== {name}: exit {returncode} after {elapsed:.0f} s", flush=True)
    return returncode, elapsed


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument("--only", nargs="+", choices=SCRIPTS, help="run only these scripts (in the usual order)")
    parser.add_argument("--json-dir", type=Path, metavar="DIR", help="have each script write DIR/<name>.json")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    names = [name for name in SCRIPTS if not args.only or name in args.only]
    if args.json_dir is not None:
        args.json_dir.mkdir(parents=True, exist_ok=True)
    results: dict[str, tuple[int, float]] = {}
    for name in names:
        results[name] = run_script(name, args.json_dir)
    print("\n===== summary")
    for name, (returncode, elapsed) in results.items():
        print(f"{name:<15}{'ok' if returncode == 0 else f'FAILED (exit {returncode})':<20}{elapsed:>6.0f} s")
    failed = [name for name, (returncode, _) in results.items() if returncode != 0]
    print(f"{len(names) - len(failed)}/{len(names)} benchmarks passed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
