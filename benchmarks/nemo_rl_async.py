"""NeMo RL's two rollout shapes against swe_gym's Ray actor: one batched ``step`` vs one ``step`` per sample.

What is compared
----------------
N samples (default 16), each one turn whose command is ``sleep S`` (default 4 s), on the ``local`` provider:

* ``sync rollout``: what ``run_multi_turn_rollout`` does, one ``step.remote`` with the whole batch.
* ``async rollout``: what ``run_async_multi_turn_rollout`` does, one ``step.remote`` per sample, all in flight at
  once (from N driver threads; NeMo RL's own driver uses ``asyncio.to_thread``, i.e. Python's default pool of
  ``min(32, CPUs + 4)`` threads, which on a small machine caps how many are in flight).
* ``async, old actor``: the same per-sample calls against ``ray.remote(SWEGymEnvironment)`` as swe_gym shipped it
  before: an asyncio actor (the class has coroutine helpers) whose synchronous ``step`` blocks its loop, so the
  calls run one after another.

Each wall time runs from the first call to the last reply; episodes are started fresh each round (the sandbox
start is part of the turn, as in a rollout's first turn). Ideal is about S.

Run: ``python benchmarks/nemo_rl_async.py [--samples 16] [--sleep 4] [--rounds 2] [--json OUT]``.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from bench_common import Summary, write_json

from swe_gym.integrations import nemo_rl
from swe_gym.tasks import load_tasks


def _samples(n: int, sleep: float) -> tuple[list[list[dict[str, str]]], list[dict[str, str]]]:
    task = load_tasks("bundled")[0]
    reply = f"```bash\nsleep {sleep:g}; echo done\n```"
    logs = [[{"role": "user", "content": "go"}, {"role": "assistant", "content": reply}] for _ in range(n)]
    return logs, [{"instance_id": task.instance_id} for _ in range(n)]


def _batched(ray: Any, actor: Any, n: int, sleep: float) -> float:
    logs, metas = _samples(n, sleep)
    started = time.perf_counter()
    ray.get(actor.step.remote(logs, metas), timeout=600)
    return time.perf_counter() - started


def _per_sample(ray: Any, actor: Any, n: int, sleep: float) -> float:
    logs, metas = _samples(n, sleep)
    started = time.perf_counter()
    with ThreadPoolExecutor(max_workers=n) as pool:
        list(pool.map(lambda i: ray.get(actor.step.remote([logs[i]], [metas[i]]), timeout=600), range(n)))
    return time.perf_counter() - started


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--samples", type=int, default=16)
    parser.add_argument("--sleep", type=float, default=4.0)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--json", type=Path, help="write the figures here too")
    args = parser.parse_args(argv)
    import ray

    ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=False)
    config = {"provider": "local", "max_steps": 5}
    actors = {
        "sync rollout": (nemo_rl.SWEGymEnvironmentActor.remote(config), _batched),
        "async rollout": (nemo_rl.SWEGymEnvironmentActor.remote(config), _per_sample),
        "async, old actor": (ray.remote(nemo_rl.SWEGymEnvironment).remote(config), _per_sample),
    }
    times: dict[str, list[float]] = {name: [] for name in actors}
    try:
        for _ in range(args.rounds):
            for name, (actor, method) in actors.items():
                times[name].append(method(ray, actor, args.samples, args.sleep))
    finally:
        for actor, _ in actors.values():
            ray.get(actor.shutdown.remote(), timeout=60)
        ray.shutdown()
    print(f"{args.samples} samples x `sleep {args.sleep:g}`, {args.rounds} rounds, local provider")
    print(f"{'method':<20}{'p50 s':>8}{'min s':>8}{'vs ideal':>10}")
    figures = {}
    for name, samples in times.items():
        summary = Summary.of(samples)
        figures[name] = {"p50_s": summary.p50, "min_s": min(samples)}
        print(f"{name:<20}{summary.p50:>8.2f}{min(samples):>8.2f}{summary.p50 / args.sleep:>9.2f}x")
    old, new = figures["async, old actor"]["p50_s"], figures["async rollout"]["p50_s"]
    print(f"async rollout speed-up over the old actor: {old / new:.1f}x")
    write_json(args.json, figures)
    return 0


if __name__ == "__main__":
    sys.exit(main())
