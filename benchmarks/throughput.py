"""Batched step throughput of `SWEVectorEnv` on Docker as the number of sub-envs N grows, and its client cost.

What is compared
----------------
For each N (default 1, 4, 16, 64) one ``SWEVectorEnv`` with N sub-envs is made with
``gymnasium.make_vec("swe_gym/SWE-v0", num_envs=N, vectorization_mode="vector_entry_point", provider="docker",
pool_size=0)``, reset once (the batched create of N containers, timed), then stepped: 2 uncounted warm-up steps, then
S timed steps (default 20) in which every sub-env runs ``sleep 0.05; echo ok``. Reported per N:

* steps/s = N * S / elapsed, and its ratio to N x (the N=1 rate): 1.0 means perfect scaling (a batch costs what one
  step costs), lower means the batch is serialised somewhere. Target: ratio >= 0.8 at N=16.
* reset time of the batch and create failures (sub-envs whose reset info says ``masked``). Target: 0 at N=64.
* client memory: this process's RSS (VmRSS) before making the env and after the reset, and the growth divided by N
  (client memory per sub-env), with the thread and open-fd counts at the same two points.

Why it is fair
--------------
* The same process, image and command for every N; each N gets a fresh env and a fresh set of containers, closed
  (and its containers removed) before the next N starts, so no N pays for another's containers.
* The command sleeps 50 ms, so perfect scaling is well defined: a batch can never take less than 50 ms, and at N=1
  the fixed per-step overhead is included in the baseline rate the others are compared with.
* Every counted step is checked: exit status 0, output ``ok``, no episode ended (``max_steps`` is set above S + 2).
* The machine caps throughput for large N (every step spawns a bash and a sleep; 2 cores here). To separate that
  from swe_gym's overhead, the same command is also run N at a time as bare host processes (``subprocess.Popen``,
  no sandbox, no env), measured in the same run: its own scaling ratio is the machine's ceiling, and "vs bare"
  is swe_gym's steps/s divided by the bare rate at the same N.

Run: ``python benchmarks/throughput.py [--ns 1,4,16,64] [--steps S] [--image IMG] [--json OUT]``.
Each env is closed in ``finally``; the run ends with a leak check of ``swe_gym.managed=true`` containers.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass

import gymnasium as gym
import numpy as np
from bench_common import (
    BenchmarkError,
    docker_parser,
    leak_check,
    leaked,
    proc_sample,
    start_docker_benchmark,
    write_json,
)

import swe_gym  # noqa: F401  (registers swe_gym/SWE-v0)

COMMAND = "sleep 0.05; echo ok"
WARMUP_STEPS = 2
SCALING_TARGET = 0.8
SCALING_TARGET_N = 16
FAIL_TARGET_N = 64


@dataclass
class Row:
    n: int
    reset_s: float
    failed_creates: int
    elapsed_s: float
    steps: int
    steps_per_s: float
    rss_before_mib: float
    rss_after_mib: float
    rss_per_env_mib: float
    threads_before: int
    threads_after: int
    fds_before: int
    fds_after: int
    step_errors: int
    bare_steps_per_s: float = float("nan")
    scaling: float = float("nan")
    bare_scaling: float = float("nan")


def masked_count(infos: dict[str, object], n: int) -> int:
    masked = infos.get("masked")
    if masked is None:
        return 0
    present = infos.get("_masked", np.ones(n, dtype=bool))
    return int(np.sum(np.asarray(masked, dtype=bool) & np.asarray(present, dtype=bool)))


def check_step(n: int, obs: Sequence[str], term: np.ndarray, trunc: np.ndarray, infos: dict[str, object]) -> int:
    """Number of sub-envs whose step did not succeed (raises if an episode ended: max_steps too low)."""
    if term.any() or trunc.any():
        raise BenchmarkError("an episode ended during the timed steps; raise max_steps")
    codes = np.asarray(infos.get("exit_code", np.full(n, -1)))
    return sum(1 for i in range(n) if codes[i] != 0 or obs[i].strip() != "ok")


def bare_rate(n: int, steps: int) -> float:
    """Steps/s of the same command run N at a time as plain host processes: the machine's ceiling."""

    def batch() -> None:
        procs = [
            subprocess.Popen(
                ["bash", "-c", COMMAND], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, start_new_session=True
            )
            for _ in range(n)
        ]
        for proc in procs:
            proc.communicate()

    for _ in range(WARMUP_STEPS):
        batch()
    started = time.perf_counter()
    for _ in range(steps):
        batch()
    return n * steps / (time.perf_counter() - started)


def run_n(image: str, n: int, steps: int) -> Row:
    before = proc_sample()
    env = gym.make_vec(
        "swe_gym/SWE-v0",
        num_envs=n,
        vectorization_mode="vector_entry_point",
        provider="docker",
        image=image,
        max_steps=steps + WARMUP_STEPS + 10,
        pool_size=0,
    )
    try:
        started = time.perf_counter()
        _, infos = env.reset(seed=0)
        reset_s = time.perf_counter() - started
        failed = masked_count(infos, n)
        after = proc_sample()
        actions = [COMMAND] * n
        for _ in range(WARMUP_STEPS):
            env.step(actions)
        errors = 0
        started = time.perf_counter()
        for _ in range(steps):
            obs, _, term, trunc, infos = env.step(actions)
            errors += check_step(n, obs, term, trunc, infos)
        elapsed = time.perf_counter() - started
    finally:
        env.close()
    return Row(
        n=n,
        reset_s=reset_s,
        failed_creates=failed,
        elapsed_s=elapsed,
        steps=n * steps,
        steps_per_s=n * steps / elapsed,
        rss_before_mib=before["rss_mib"],
        rss_after_mib=after["rss_mib"],
        rss_per_env_mib=(after["rss_mib"] - before["rss_mib"]) / n,
        threads_before=int(before["threads"]),
        threads_after=int(after["threads"]),
        fds_before=int(before["fds"]),
        fds_after=int(after["fds"]),
        step_errors=errors,
        bare_steps_per_s=bare_rate(n, steps),
    )


def print_rows(rows: Sequence[Row]) -> None:
    print(
        f"\n{'N':>4}{'reset s':>9}{'failed':>8}{'steps/s':>10}{'vs N*N1':>9}{'bare/s':>9}{'bare vs':>9}"
        f"{'ours/bare':>10}{'step errs':>11}"
        f"{'RSS before':>12}{'RSS after':>11}{'MiB/env':>9}{'threads':>10}{'fds':>10}"
    )
    for r in rows:
        print(
            f"{r.n:>4}{r.reset_s:>9.2f}{r.failed_creates:>8}{r.steps_per_s:>10.1f}{r.scaling:>9.2f}"
            f"{r.bare_steps_per_s:>9.1f}{r.bare_scaling:>9.2f}{r.steps_per_s / r.bare_steps_per_s:>10.2f}"
            f"{r.step_errors:>11}"
            f"{r.rss_before_mib:>12.1f}{r.rss_after_mib:>11.1f}{r.rss_per_env_mib:>9.2f}"
            f"{f'{r.threads_before}->{r.threads_after}':>10}{f'{r.fds_before}->{r.fds_after}':>10}"
        )


def verdicts(rows: Sequence[Row]) -> list[str]:
    by_n = {r.n: r for r in rows}
    lines = []
    if SCALING_TARGET_N in by_n and 1 in by_n:
        r = by_n[SCALING_TARGET_N]
        ok = "MET" if r.scaling >= SCALING_TARGET else "MISSED"
        lines.append(
            f"target N={SCALING_TARGET_N} scaling ratio >= {SCALING_TARGET}: {ok} ({r.scaling:.2f}; "
            f"bare host processes reach {r.bare_scaling:.2f} on this machine, swe_gym runs at "
            f"{r.steps_per_s / r.bare_steps_per_s:.2f} of their rate)"
        )
    if FAIL_TARGET_N in by_n:
        r = by_n[FAIL_TARGET_N]
        ok = "MET" if r.failed_creates == 0 else "MISSED"
        lines.append(f"target N={FAIL_TARGET_N} zero failed creates: {ok} ({r.failed_creates} failed)")
    return lines


def parse_ns(text: str) -> list[int]:
    ns = sorted({int(part) for part in text.split(",") if part.strip()})
    if not ns or ns[0] < 1:
        raise argparse.ArgumentTypeError("--ns needs positive integers, e.g. 1,4,16,64")
    return ns


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = docker_parser(__doc__)
    parser.add_argument("--ns", type=parse_ns, default=[1, 4, 16, 64], help="sub-env counts (default: 1,4,16,64)")
    parser.add_argument("--steps", type=int, default=20, help="timed batched steps per N (default: 20)")
    args = parser.parse_args(argv)
    if args.steps < 1:
        parser.error("--steps must be at least 1")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    info = start_docker_benchmark(args.image)
    if info is None:
        return 2
    print(f"command: {COMMAND!r}; {args.steps} timed steps after {WARMUP_STEPS} warm-up, per N in {args.ns}")
    rows: list[Row] = []
    try:
        for n in args.ns:
            row = run_n(args.image, n, args.steps)
            rows.append(row)
            print(f"N={n}: reset {row.reset_s:.2f} s, {row.steps_per_s:.1f} steps/s", flush=True)
    finally:
        base = next((r for r in rows if r.n == 1), None)
        for r in rows:
            r.scaling = r.steps_per_s / (r.n * base.steps_per_s) if base else float("nan")
            r.bare_scaling = r.bare_steps_per_s / (r.n * base.bare_steps_per_s) if base else float("nan")
        if rows:
            print_rows(rows)
            print(
                "  (vs N*N1: steps/s divided by N x the N=1 rate; bare: the same command as N plain host "
                "processes, whose 'bare vs' is the machine's ceiling for that ratio;\n   ours/bare: swe_gym's rate "
                "over the bare rate; MiB/env: RSS growth from make_vec to after reset / N)"
            )
            for line in verdicts(rows):
                print(f"  {line}")
    leftover = leak_check()
    write_json(args.json, {"machine": info, "rows": [asdict(r) for r in rows], "leftover": leftover})
    failed_steps = any(r.step_errors for r in rows)
    return 1 if leaked(leftover) or failed_steps else 0


if __name__ == "__main__":
    sys.exit(main())
