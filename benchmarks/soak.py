"""Soak test: many short episodes through `SWEVectorEnv` on the ``local`` provider, watching for unbounded growth.

What is measured
----------------
``SWEVectorEnv(num_envs=8, provider="local", max_steps=2, grade_on_truncation=False, pool_size=2)`` (the default
``NEXT_STEP`` autoreset) is stepped with ``echo hi`` in every sub-env until the requested number of episodes has
ended (default 1,000): every episode creates a sandbox (from the pool), uploads the repository, snapshots it, runs
two commands, extracts the patch and removes the sandbox. After every 100 ended episodes this process's RSS, thread
count and open-fd count are sampled, with the number of sandbox directories under the local provider's root
(``swe_gym.settings.settings().local_root``) and of Docker containers labelled ``swe_gym.managed=true``.

Verdict: the last sample is compared with the one taken after the first 100 episodes (by then caches, thread pools
and the pool are warm). Growth within the noise allowance (RSS 8 MiB, 2 threads, 4 fds, 2 sandbox dirs, 0 containers)
is "flat"; more is reported as growth and fails the run. The sandbox directories counted are this process's own plus
any other process's on the same root; the run's own start count is shown.

Why it is fair
--------------
* Nothing else runs in the process; the same action and env for the whole run; samples are taken at the same point
  of the cycle (right after a batched step), so the live-sandbox count is comparable between samples.
* Every step is checked: ``echo hi`` must exit 0 (masked episodes are counted and reported).

Run: ``python benchmarks/soak.py [--episodes 1000] [--every 100] [--json OUT]``. On a 2-core machine 1,000 episodes
take about 1-2 minutes (the measured rate is printed). The env is closed in ``finally``; the run ends by checking that
no sandbox directory of this process and no ``swe_gym.managed=true`` container of this run is left.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
from bench_common import docker_ids, leak_check, leaked, machine_info, print_machine, proc_sample, write_json

from swe_gym.sandbox import labels as lbl
from swe_gym.settings import settings
from swe_gym.vector.swe_vector_env import SWEVectorEnv

NUM_ENVS = 8
ACTION = "echo hi"
#: How much a counter may grow between the sample after the first interval and the last one and still count as flat.
ALLOWANCE = {"rss_mib": 8.0, "threads": 2, "fds": 4, "sandbox_dirs": 2, "containers": 0}


@dataclass
class Sample:
    episodes: int
    elapsed_s: float
    rss_mib: float
    threads: int
    fds: int
    sandbox_dirs: int
    containers: int


def sandbox_dirs(root: Path | None = None, *, this_run_only: bool = False) -> int:
    """Sandbox homes under the local provider's root (optionally only this process's run)."""
    root = root or settings().local_root
    if not root.is_dir():
        return 0
    if not this_run_only:
        return sum(1 for p in root.iterdir() if p.is_dir())
    count = 0
    for home in root.iterdir():
        try:
            labels = json.loads((home / "meta.json").read_text()).get("labels", {})
        except (OSError, ValueError):
            continue
        count += labels.get(lbl.RUN_ID) == lbl.current_run_id()
    return count


def take_sample(episodes: int, started: float) -> Sample:
    proc = proc_sample()
    return Sample(
        episodes=episodes,
        elapsed_s=time.perf_counter() - started,
        rss_mib=proc["rss_mib"],
        threads=int(proc["threads"]),
        fds=int(proc["fds"]),
        sandbox_dirs=sandbox_dirs(),
        containers=len(docker_ids(f"{lbl.MANAGED}=true")),
    )


def soak(env: SWEVectorEnv, episodes: int, every: int) -> tuple[list[Sample], int, int]:
    """Step until ``episodes`` have ended; returns (samples, masked episodes, failed steps)."""
    started = time.perf_counter()
    samples = [take_sample(0, started)]
    env.reset(seed=0)
    actions = [ACTION] * env.num_envs
    ended = masked = failed = 0
    next_sample = every
    while ended < episodes:
        _, _, terminated, truncated, infos = env.step(actions)
        done = terminated | truncated
        ended += int(done.sum())
        if "masked" in infos:
            masked += int(np.sum(np.asarray(infos["masked"], dtype=bool) & np.asarray(infos["_masked"], dtype=bool)))
        if "exit_code" in infos:
            codes, present = np.asarray(infos["exit_code"]), np.asarray(infos["_exit_code"], dtype=bool)
            failed += int(np.sum(present & (codes != 0)))
        if ended >= next_sample:
            samples.append(take_sample(ended, started))
            print(f"  {ended} episodes, {samples[-1].elapsed_s:.1f} s", flush=True)
            next_sample += every
    return samples, masked, failed


def print_samples(samples: Sequence[Sample]) -> None:
    print(f"\n{'episodes':>9}{'time s':>8}{'RSS MiB':>9}{'threads':>9}{'fds':>6}{'sbx dirs':>10}{'containers':>12}")
    for s in samples:
        print(
            f"{s.episodes:>9}{s.elapsed_s:>8.1f}{s.rss_mib:>9.1f}{s.threads:>9}{s.fds:>6}"
            f"{s.sandbox_dirs:>10}{s.containers:>12}"
        )


def growth(samples: Sequence[Sample]) -> dict[str, tuple[float, bool]]:
    """For each counter: (last - after-first-interval, within the allowance)."""
    if len(samples) < 3:
        return {}
    first, last = samples[1], samples[-1]
    return {
        key: (getattr(last, key) - getattr(first, key), getattr(last, key) - getattr(first, key) <= allowed)
        for key, allowed in ALLOWANCE.items()
    }


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument("--episodes", type=int, default=1000, help="episodes to run (default: 1000)")
    parser.add_argument("--every", type=int, default=100, help="sample every this many episodes (default: 100)")
    parser.add_argument("--json", type=Path, metavar="OUT", help="also write the samples to this JSON file")
    args = parser.parse_args(argv)
    if args.episodes < 1 or args.every < 1:
        parser.error("--episodes and --every must be at least 1")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    info = machine_info(None)
    print_machine(info)
    print(f"local provider root: {settings().local_root} ({sandbox_dirs()} sandbox dirs before the run)")
    print(f"{args.episodes} episodes, num_envs={NUM_ENVS}, max_steps=2, pool_size=2, action {ACTION!r}")
    started = time.perf_counter()
    env = SWEVectorEnv(NUM_ENVS, provider="local", max_steps=2, grade_on_truncation=False, pool_size=2)
    samples: list[Sample] = []
    try:
        samples, masked, failed = soak(env, args.episodes, args.every)
    finally:
        env.close()
    elapsed = time.perf_counter() - started
    ended = samples[-1].episodes
    print_samples(samples)
    print(
        f"  {ended} episodes in {elapsed:.1f} s: {ended / elapsed:.1f} episodes/s; "
        f"masked {masked}, failed steps {failed}"
    )
    grew = growth(samples)
    for key, (delta, flat) in grew.items():
        print(f"  {key}: {delta:+.2f} from {samples[1].episodes} to {ended} episodes -> {'flat' if flat else 'GROWS'}")
    unbounded = [key for key, (_, flat) in grew.items() if not flat]
    print(f"  unbounded growth: {', '.join(unbounded) if unbounded else 'none'}")
    time.sleep(0.5)
    left_dirs = sandbox_dirs(this_run_only=True)
    print(f"\nleak check: sandbox dirs of this run left under {settings().local_root}: {left_dirs}")
    leftover = {**leak_check(), "local_sandbox_dirs_this_run": left_dirs}
    write_json(
        args.json,
        {
            "machine": info,
            "samples": [asdict(s) for s in samples],
            "masked": masked,
            "failed_steps": failed,
            "growth": grew,
            "leftover": leftover,
        },
    )
    return 1 if leaked(leftover) or left_dirs or unbounded or masked or failed else 0


if __name__ == "__main__":
    sys.exit(main())
