"""Reset time of `SWEEnv` on Docker: cold (no pool) vs warm (``pool_size=2``) vs a bare ``docker run``.

What is compared
----------------
Wall time of one call, measured with ``time.perf_counter``:

* ``cold reset``: ``env.reset(seed=0)`` on ``gym.make("swe_gym/SWE-v0", provider="docker", image=IMG)`` with
  ``pool_size=0``: a container is created and started, the task's repository uploaded, a git snapshot taken.
* ``warm reset``: the same call on an env with ``pool_size=2``. Before each timed reset the script waits for the pool
  to be full again (``await env.pool.wait_ready()``), so the reset hands over a started container and only uploads
  the repository and takes the snapshot. This is the steady state of a trainer whose episodes last longer than a
  container start.
* ``docker run --rm CLI``: ``docker run --rm --network none IMG true``, the bare minimum a fresh container costs
  (create, start, run ``true``, wait, remove).

Why it is fair
--------------
* Same machine, image, process; the three methods are interleaved in rounds whose order rotates, after one
  uncounted warm-up call each, so noise and drift hit all of them alike.
* Both envs run one ``step("true")`` after each reset (not timed), as a trainer would, so each reset also tears down a
  used container; the previous container is removed in the background in both envs (not part of either reset).
* The target (warm p50 <= 50 ms) is about the hand-over path only; ``info["reset_s"]`` (time inside the env's
  async core, excluding the Gymnasium wrappers and thread hop) is shown for both envs too.
* The baseline does less work than either reset: it uploads no repository and takes no snapshot.

Run: ``python benchmarks/reset_pool.py [--image IMG] [--resets K] [--json OUT]`` (default K=15, about a minute).
The envs are closed in ``finally``; the run ends with a leak check of ``swe_gym.managed=true`` containers (exit 1 on
a leak of this run's containers).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import uuid
from collections.abc import Callable, Sequence

import gymnasium as gym
from bench_common import (
    BENCH_LABEL,
    BenchmarkError,
    Method,
    Summary,
    describe,
    docker_parser,
    interleave,
    leak_check,
    leaked,
    print_table,
    start_docker_benchmark,
    write_json,
)

import swe_gym  # noqa: F401  (registers swe_gym/SWE-v0)
from swe_gym.sandbox.loop import run_sync

TARGET_MS = 50.0
BENCH_TOKEN = f"reset_pool-{uuid.uuid4().hex[:8]}"


def make_env(image: str, pool_size: int, max_steps: int) -> gym.Env[str, str]:
    return gym.make("swe_gym/SWE-v0", provider="docker", image=image, max_steps=max_steps, pool_size=pool_size)


def env_reset(name: str, env: gym.Env[str, str], notes_ms: list[float], *, wait_pool: bool) -> Method:
    """Time ``env.reset``; the pool wait runs before it and the trainer's ``step("true")`` after it, untimed."""
    pool = env.unwrapped.host.settings.pool  # type: ignore[attr-defined]

    def before() -> None:
        if wait_pool and pool is not None:
            run_sync(pool.wait_ready())

    def call() -> None:
        _, info = env.reset(seed=0)
        notes_ms.append(info["reset_s"] * 1000.0)

    def after() -> None:
        _, _, terminated, truncated, info = env.step("true")
        if terminated or truncated or info["exit_code"] != 0:
            raise BenchmarkError(f"step('true') after reset failed: {info}")

    return Method(name, call, before=before, after=after)


def docker_run_call(image: str) -> Callable[[], None]:
    argv = ["docker", "run", "--rm", "--network", "none", "--label", f"{BENCH_LABEL}={BENCH_TOKEN}", image, "true"]

    def call() -> None:
        result = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, check=False)
        if result.returncode != 0:
            raise BenchmarkError(f"docker run failed: {result.stderr.decode(errors='replace')}")

    return call


def verdict(warm: Method) -> str:
    p50 = Summary.of(warm.samples_ms).p50
    ok = "MET" if p50 <= TARGET_MS else "MISSED"
    return f"target warm-pool reset p50 <= {TARGET_MS:.0f} ms: {ok} (p50 {p50:.1f} ms)"


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = docker_parser(__doc__)
    parser.add_argument("--resets", type=int, default=15, help="counted calls per method (default: 15)")
    args = parser.parse_args(argv)
    if args.resets < 1:
        parser.error("--resets must be at least 1")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    info = start_docker_benchmark(args.image)
    if info is None:
        return 2
    print(f"resets: {args.resets} per method after 1 warm-up, interleaved (order rotated each round)")
    cold_notes: list[float] = []
    warm_notes: list[float] = []
    envs: list[gym.Env[str, str]] = []
    pool_stats: dict[str, int] = {}
    try:
        cold_env = make_env(args.image, 0, max_steps=10)
        envs.append(cold_env)
        warm_env = make_env(args.image, 2, max_steps=10)
        envs.append(warm_env)
        cold = env_reset("cold reset (pool_size=0)", cold_env, cold_notes, wait_pool=False)
        warm = env_reset("warm reset (pool_size=2)", warm_env, warm_notes, wait_pool=True)
        bare = Method("docker run --rm CLI", docker_run_call(args.image))
        methods = [cold, warm, bare]
        interleave(methods, args.resets, warmup=1)
        del cold_notes[:1], warm_notes[:1]  # the warm-up calls
        pool_stats = warm_env.unwrapped.host.settings.pool.stats.model_dump()  # type: ignore[attr-defined]
    finally:
        for env in envs:
            env.close()
    print_table("Reset time (ms per call; docker run is the baseline)", methods, bare)
    print(f"  ({describe('cold info[reset_s]', cold_notes)})")
    print(f"  ({describe('warm info[reset_s]', warm_notes)})")
    print(f"  warm pool stats: {pool_stats}")
    cold_p50, warm_p50 = Summary.of(cold.samples_ms).p50, Summary.of(warm.samples_ms).p50
    print(f"  warm reset is {cold_p50 / warm_p50:.1f}x faster than cold (p50)")
    print(f"  {verdict(warm)}")
    leftover = leak_check(BENCH_TOKEN)
    write_json(
        args.json,
        {
            "machine": info,
            "methods": {
                m.name: {"summary": vars(Summary.of(m.samples_ms)), "samples_ms": m.samples_ms} for m in methods
            },
            "notes": {"cold info[reset_s] ms": cold_notes, "warm info[reset_s] ms": warm_notes},
            "pool_stats": pool_stats,
            "target_met": Summary.of(warm.samples_ms).p50 <= TARGET_MS,
            "leftover": leftover,
        },
    )
    return 1 if leaked(leftover) else 0


if __name__ == "__main__":
    sys.exit(main())
