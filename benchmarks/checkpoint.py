"""What durability costs: `SWEEnv.checkpoint()` and `SWEEnv.resume(handle)` beside a cold reset, per provider.

What is compared
----------------
For each provider that is available (``--providers``, default ``local docker apptainer opensandbox``; one that is
not is skipped with the reason printed), on a bundled task, wall times measured with ``time.perf_counter``:

* ``cold reset``: ``env.reset(seed=0)`` with ``pool_size=0`` (the baseline: what a lost episode costs to start
  over, before its steps are replayed);
* ``checkpoint()``: ``env.unwrapped.checkpoint()`` of a live episode (reset once, a file written): the provider's
  saved copy of the sandbox and the handle; the handle is removed after each call (untimed);
* ``resume(handle)``: ``SWEEnv.resume`` of one saved handle, in this process: a new env on the saved sandbox,
  whose first step (untimed) must find the file; the env is closed after each call (untimed). A resume does not
  consume the handle, so every call restores the same checkpoint.

Why it is fair
--------------
* Same machine, process, task and image for the three methods; they are interleaved in rounds whose order
  rotates, after one uncounted warm-up call each, so noise and drift hit all alike.
* Every env runs with ``prestart_grading=False`` (no grading sandbox in the background of any method), and each
  reset is followed by the trainer's ``step("true")`` (untimed), as in ``fork.py``.
* A resume does no less than a reset: it ends with a started sandbox holding the episode's files and a runner that
  answered. It builds its env too (``SWEEnv.resume`` makes one), which a reset of a live env does not.

Run: ``python benchmarks/checkpoint.py [--providers NAME ...] [--rounds 10] [--json OUT]`` (about 2 minutes with
all four). Envs are closed and checkpoints removed in ``finally``; the run ends with a leak check (containers,
sandbox homes and checkpoints of this run): exit 1 on a leak.
"""

from __future__ import annotations

import time
import traceback
from collections.abc import Sequence
from typing import Any

from bench_common import Method, Summary, docker_parser, interleave, print_table
from fork import make_env, reset_method
from providers import CONFIGS, PROVIDERS, finish, measurable, start

from swe_gym import SWEEnv
from swe_gym.envs.checkpoint import EpisodeCheckpoint

NOTE = "echo saved > swe_gym_bench_note"


def checkpoint_methods(name: str, image: str | None, rounds: int) -> list[Method]:
    """Cold reset, checkpoint() and resume(handle) on provider ``name``."""
    envs = [make_env(CONFIGS[name], image, "bundled", 0) for _ in range(2)]
    saved: list[EpisodeCheckpoint] = []
    resumed: list[SWEEnv] = []
    try:
        live = envs[1]
        live.reset(seed=0)
        if live.step(NOTE)[4]["exit_code"] != 0:
            raise RuntimeError("the episode's first step failed")
        handle = live.unwrapped.checkpoint()  # type: ignore[attr-defined]
        saved.append(handle)

        def check_resumed() -> None:
            env = resumed.pop()
            try:
                if env.step("cat swe_gym_bench_note")[0].strip() != "saved":
                    raise RuntimeError("the resumed episode does not hold the saved file")
            finally:
                env.close()

        methods = [
            reset_method("cold reset (pool_size=0)", envs[0], wait_pool=False),
            Method(
                "checkpoint()",
                lambda: saved.append(live.unwrapped.checkpoint()),  # type: ignore[attr-defined]
                after=lambda: saved.pop().remove(),
            ),
            Method("resume(handle)", lambda: resumed.append(SWEEnv.resume(handle)), after=check_resumed),
        ]
        interleave(methods, rounds, warmup=1)
        return methods
    finally:
        for env in [*resumed, *envs]:
            env.close()
        for checkpoint in saved:
            checkpoint.remove()


def parse_args(argv: Sequence[str] | None = None) -> Any:
    parser = docker_parser(__doc__)
    parser.add_argument("--providers", nargs="+", choices=PROVIDERS, default=list(PROVIDERS), help="default: all")
    parser.add_argument("--rounds", type=int, default=10, help="counted calls per method (10)")
    args = parser.parse_args(argv)
    if args.rounds < 1:
        parser.error("--rounds must be at least 1")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    info = start(args.image)
    print(f"{args.rounds} calls per method after 1 warm-up, interleaved (order rotated each round)")
    results: dict[str, list[Method]] = {}
    skipped: dict[str, str] = {}
    failed: dict[str, str] = {}
    for name in measurable(args.providers, args.image, skipped):
        started = time.perf_counter()
        try:
            methods = results[name] = checkpoint_methods(name, None if name == "local" else args.image, args.rounds)
        except Exception as exc:  # one provider's failure must not hide the others' numbers
            failed[name] = f"{type(exc).__name__}: {exc}"
            traceback.print_exc()
            continue
        print_table(f"{name}, bundled task (ms per call)", methods, methods[0])
        print(f"  ({time.perf_counter() - started:.0f} s)", flush=True)
    results_json = {
        name: {m.name: {"summary": vars(Summary.of(m.samples_ms)), "samples_ms": m.samples_ms} for m in ms}
        for name, ms in results.items()
    }
    return finish(args, info, {"results": results_json}, skipped, failed, measured=bool(results))

if __name__ == "__main__":
    raise SystemExit(main())
