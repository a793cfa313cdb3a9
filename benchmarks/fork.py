"""Fork latency per provider beside a cold reset and a warm-pool reset, and the fork of 1 GiB of build output.

What is compared
----------------
For each provider that is available (``--providers``, default ``local docker apptainer opensandbox``; one that is
not is skipped with the reason printed), wall times measured with ``time.perf_counter``:

* Part a, a bundled task (``gym.make("swe_gym/SWE-v0", provider=CONFIG, image=IMG)``; local runs it without
  an image) and part b, the real-size Django image of ``real_image.py`` (``django__django-11099``, 6,000 files;
  not on local, which has no images), the ways to get a live episode of the task:

  - ``cold reset``: ``env.reset(seed=0)`` with ``pool_size=0``: a sandbox started, the repository put in place
    (uploaded, or the image's prepared copy on docker), a git snapshot taken;
  - ``warm reset``: the same on an env with ``pool_size=2`` whose pool is full before each call (waited for,
    untimed), so the reset hands over a started sandbox;
  - ``fork(1) from the pool``: ``env.unwrapped.fork(1)`` of a live episode of the same task (reset once, one step
    run) on an env with ``pool_size=8`` whose pool is full before each call: the episode's changes replayed in a
    sandbox the pool started (`SandboxPool.fork`), and ``fork(8) from the pool``, eight branches at once;
  - ``fork, new sandbox``: the same ``fork(1)`` on an env without a pool: a new sandbox on a copy of the
    episode's. On docker it is measured twice, copying the container's overlay2 upper directory (``fork="auto"``
    here, a local engine) and committing it to an image (``fork="commit"``, what a remote engine gets).

* Part c, a sandbox (``Sandbox.create``) whose workspace holds ``--big-mib`` MiB (default 1024) of build output
  (``build/`` of 4 MiB files of random bytes, written once), forked with ``Sandbox.fork``, beside the fork of a
  sandbox with an empty workspace and, as the floor of any copy, ``cp -a`` of an identical directory on the host
  (local, apptainer and docker's copy all run that copy inside).

Why it is fair
--------------
* Same machine, process, task and image for the three methods of a part; they are interleaved in rounds whose
  order rotates, after one uncounted warm-up call each (which also builds what is built once: apptainer's SIF,
  docker's prepared image), so noise and drift hit all alike.
* Every env runs with ``prestart_grading=False``: no grading sandbox starts in the background of any method. After
  each reset the trainer's ``step("true")`` runs (untimed, as in ``reset_pool.py``), so each reset also leaves a
  used sandbox to the background teardown, as a fork's new env is closed after each call (untimed).
* A fork does no less than a reset: it ends with a started sandbox holding the episode's repository (with its git
  snapshot objects) and a runner that answered; it does not need the repository's upload or the snapshot, which is
  exactly what branching saves. A warm reset is shown because it is the other fast path a trainer has.
* Targets (fork(1) from the pool): docker <= 0.3x its cold reset on the bundled task and <= 0.5x on Django,
  local <= 25 ms; fork(8) from the pool <= 2x fork(1); printed as MET/MISSED.

Run: ``python benchmarks/fork.py [--providers NAME ...] [--parts a b c] [--rounds 10] [--real-rounds 5]
[--big-rounds 3] [--big-mib 1024] [--json OUT]`` (about 6 minutes with all four; the first apptainer run builds
the Django SIF, about a minute more). Envs and sandboxes are closed in ``finally``; the run ends with a leak check
(containers, sandbox homes, docker fork images and OpenSandbox snapshots of this run): exit 1 on a leak.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
import traceback
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import gymnasium as gym
from bench_common import (
    DEFAULT_IMAGE,
    BenchmarkError,
    Method,
    Summary,
    docker_parser,
    interleave,
    print_table,
)
from grading_speed import load_task
from providers import CONFIGS, PROVIDERS, finish, measurable, problem, start
from real_image import DEFAULT_IMAGE as REAL_IMAGE
from real_image import DEFAULT_ROW

import swe_gym  # noqa: F401  (registers swe_gym/SWE-v0)
from swe_gym.sandbox import Sandbox, SandboxSpec, current_run_id
from swe_gym.sandbox.loop import run_sync
from swe_gym.tasks import SWETask

#: Targets: a fork from the pool, as a fraction of a cold reset (docker, per part), in ms (local), and fork(8)
#: from the pool against fork(1).
DOCKER_TARGETS = {"bundled task": 0.3, "Django image": 0.5}
LOCAL_TARGET_MS = 25.0
FANOUT_TARGET = 2.0
POOL_FORKS = 8
POOL_FORK = "fork(1) from the pool (pool_size=8)"
POOL_FORK_N = f"fork({POOL_FORKS}) from the pool"
REFILL_WAIT_S = 0.4
CHUNK_MIB = 4


def make_env(config: dict[str, Any], image: str | None, tasks: Any, pool_size: int) -> gym.Env[str, str]:
    return gym.make(
        "swe_gym/SWE-v0",
        tasks=tasks,
        provider=config,
        image=image,
        max_steps=100_000,
        pool_size=pool_size,
        prestart_grading=False,
    )


def step_true(env: gym.Env[str, str]) -> None:
    _, _, terminated, truncated, info = env.step("true")
    if terminated or truncated or info["exit_code"] != 0:
        raise BenchmarkError(f"step('true') failed: {info}")


def reset_method(name: str, env: gym.Env[str, str], *, wait_pool: bool) -> Method:
    pool = env.unwrapped.host.settings.pool  # type: ignore[attr-defined]

    def before() -> None:
        if wait_pool and pool is not None:
            run_sync(pool.wait_ready())

    def call() -> None:
        env.reset(seed=0)

    return Method(name, call, before=before, after=lambda: step_true(env))


def fork_method(name: str, env: gym.Env[str, str], n: int = 1) -> Method:
    """``fork(n)`` of ``env``'s live episode; the branches are checked and closed after the call (untimed). With a
    warm pool, the pool is full before each call (its background refill waited for, untimed)."""
    made: list[Any] = []
    env.reset(seed=0)
    step_true(env)
    pool = env.unwrapped.host.settings.pool  # type: ignore[attr-defined]

    def before() -> None:
        if pool is not None:
            time.sleep(REFILL_WAIT_S)  # the refill starts a moment after a take
            env.unwrapped.host.call(pool.wait_ready())  # type: ignore[attr-defined]

    def call() -> None:
        made.extend(env.unwrapped.fork(n))  # type: ignore[attr-defined]

    def after() -> None:
        branches = [made.pop() for _ in range(n)]
        try:
            for branch in branches:
                step_true(branch)
        finally:
            for branch in branches:
                branch.close()

    return Method(name, call, before=before, after=after)


def episode_part(name: str, image: str | None, tasks: Any, rounds: int) -> list[Method]:
    """Part a or b on provider ``name``: cold reset, warm reset, fork from the pool (1 and 8), fork into a new
    sandbox (docker: copy and commit)."""
    config = CONFIGS[name]
    envs: list[gym.Env[str, str]] = []
    try:
        for pool_size in (0, 2, 0, POOL_FORKS):
            envs.append(make_env(config, image, tasks, pool_size))
        methods = [
            reset_method("cold reset (pool_size=0)", envs[0], wait_pool=False),
            reset_method("warm reset (pool_size=2)", envs[1], wait_pool=True),
            fork_method(POOL_FORK, envs[3]),
            fork_method(POOL_FORK_N, envs[3], POOL_FORKS),
            fork_method("fork, new sandbox" if name != "docker" else "fork, new sandbox (copy upper dir)", envs[2]),
        ]
        if name == "docker":
            envs.append(make_env({**config, "fork": "commit"}, image, tasks, 0))
            methods.append(fork_method("fork, new sandbox (commit)", envs[4]))
        interleave(methods, rounds, warmup=1)
        return methods
    finally:
        for env in envs:
            env.close()


def make_build_output(box: Sandbox, mib: int) -> None:
    """``mib`` MiB in ``build/``: one 4 MiB chunk of random bytes, copied; checked by its size."""
    files = max(1, mib // CHUNK_MIB)
    script = (
        f"set -e; mkdir -p build; head -c {CHUNK_MIB << 20} /dev/urandom > build/0.o; "
        f"for i in $(seq 1 {files - 1}); do cp build/0.o build/$i.o; done; du -sm build | cut -f1"
    )
    result = box.exec(script, timeout=900)
    if not result.ok or int(result.output.split()[-1]) < files * CHUNK_MIB:
        raise BenchmarkError(f"could not write the build output: {result.output[-400:]}")


def sandbox_fork_method(name: str, box: Sandbox, check: str) -> Method:
    made: list[Sandbox] = []

    def after() -> None:
        branch = made.pop()
        try:
            if not branch.exec(check, timeout=300).ok:
                raise BenchmarkError(f"{name}: the fork does not hold the source's files")
        finally:
            branch.close()

    return Method(name, lambda: made.append(box.fork()), after=after)


def host_copy_method(mib: int, scratch: Path) -> Method:
    source = scratch / "source"
    source.mkdir()
    chunk = os.urandom(CHUNK_MIB << 20)
    for i in range(max(1, mib // CHUNK_MIB)):
        (source / f"{i}.o").write_bytes(chunk)

    def call() -> None:
        subprocess.run(["cp", "-a", "--reflink=auto", str(source), str(scratch / "copy")], check=True)

    return Method(f"host cp -a {mib} MiB (floor)", call, after=lambda: shutil.rmtree(scratch / "copy"))


def big_part(name: str, image: str | None, rounds: int, mib: int) -> list[Method]:
    """Part c: fork of a sandbox holding ``mib`` MiB of build output vs an empty one vs the host copy."""
    config = CONFIGS[name]
    boxes: list[Sandbox] = []
    scratch = Path(tempfile.mkdtemp(prefix="swe_gym-bench-fork-"))
    try:
        boxes.append(Sandbox.create(SandboxSpec(image=image), config))
        make_build_output(boxes[0], mib)
        boxes.append(Sandbox.create(SandboxSpec(image=image), config))
        check = f"test $(ls build | wc -l) -eq {max(1, mib // CHUNK_MIB)}"
        methods = [
            sandbox_fork_method(f"Sandbox.fork, {mib} MiB in the workspace", boxes[0], check),
            sandbox_fork_method("Sandbox.fork, empty workspace", boxes[1], "true"),
            host_copy_method(mib, scratch),
        ]
        interleave(methods, rounds, warmup=1)
        return methods
    finally:
        for box in boxes:
            box.close()
        shutil.rmtree(scratch, ignore_errors=True)


TITLES = {"a": "a: bundled task", "b": "b: Django image", "c": "c: {mib} MiB"}


def run_part(part: str, name: str, image: str | None, real: SWETask | None, args: Any) -> list[Method]:
    if part == "a":
        return episode_part(name, image, "bundled", args.rounds)
    if part == "b":
        return episode_part(name, None, [real], args.real_rounds)
    return big_part(name, image, args.big_rounds, args.big_mib)


def p50(methods: Sequence[Method], prefix: str) -> float:
    return next(Summary.of(m.samples_ms).p50 for m in methods if m.name.startswith(prefix))


def verdicts(name: str, part: str, methods: Sequence[Method]) -> list[str]:
    cold = p50(methods, "cold")
    lines = [f"{m.name} / cold reset (p50): {Summary.of(m.samples_ms).p50 / cold:.2f}x" for m in methods[1:]]
    fork, fanout = p50(methods, POOL_FORK), p50(methods, POOL_FORK_N)
    if name == "docker":
        target = DOCKER_TARGETS[part]
        met = "MET" if fork <= target * cold else "MISSED"
        lines.append(
            f"target docker fork(1) from the pool <= {target}x cold reset ({part}): {met} ({fork / cold:.2f}x)"
        )
    if name == "local":
        met = "MET" if fork <= LOCAL_TARGET_MS else "MISSED"
        lines.append(f"target local fork(1) from the pool p50 <= {LOCAL_TARGET_MS:.0f} ms: {met} ({fork:.1f} ms)")
    met = "MET" if fanout <= FANOUT_TARGET * fork else "MISSED"
    lines.append(
        f"target fork({POOL_FORKS}) <= {FANOUT_TARGET:.0f}x fork(1), from the pool: {met} ({fanout / fork:.2f}x)"
    )
    return lines


def fork_leftovers() -> dict[str, int]:
    """Docker images forks committed and OpenSandbox snapshots forks made, of this run."""
    labels = ["--filter", f"label=swe_gym.run_id={current_run_id()}", "--filter", "label=swe_gym.forked_from"]
    out = subprocess.run(["docker", "images", "-q", *labels], capture_output=True, text=True, check=False).stdout
    found = {"docker_fork_images": len(out.split())}
    if problem("opensandbox", DEFAULT_IMAGE) is None:
        found["opensandbox_snapshots"] = len(run_sync(opensandbox_snapshots()))
    print(f"leftover fork images: {found.get('docker_fork_images')}; snapshots: {found.get('opensandbox_snapshots')}")
    return found


async def opensandbox_snapshots() -> list[str]:
    from opensandbox import SandboxManager
    from opensandbox.models.sandboxes import SnapshotFilter

    from swe_gym.sandbox import get_provider
    from swe_gym.sandbox.providers.opensandbox import SNAPSHOT_PREFIX

    manager = await SandboxManager.create(get_provider(CONFIGS["opensandbox"]).connection())  # type: ignore[attr-defined]
    try:
        found = await manager.list_snapshots(SnapshotFilter(page_size=200))
    finally:
        await manager.close()
    mine = f"{SNAPSHOT_PREFIX}.{current_run_id()}."
    return [snapshot.id for snapshot in found.snapshot_infos if (snapshot.name or "").startswith(mine)]


def parse_args(argv: Sequence[str] | None = None) -> Any:
    parser = docker_parser(__doc__)
    parser.add_argument("--providers", nargs="+", choices=PROVIDERS, default=list(PROVIDERS), help="default: all")
    parser.add_argument("--parts", nargs="+", choices=["a", "b", "c"], default=["a", "b", "c"])
    parser.add_argument("--rounds", type=int, default=10, help="counted calls per method, bundled task (10)")
    parser.add_argument("--real-rounds", type=int, default=5, help="counted calls per method, Django image (5)")
    parser.add_argument("--big-rounds", type=int, default=3, help="counted calls per method, 1 GiB fork (3)")
    parser.add_argument("--big-mib", type=int, default=1024, help="build output in part c, MiB (1024)")
    parser.add_argument("--row", type=Path, default=DEFAULT_ROW, help=f"Django task row ({DEFAULT_ROW})")
    parser.add_argument("--real-image", default=REAL_IMAGE, help=f"Django image ({REAL_IMAGE})")
    args = parser.parse_args(argv)
    if min(args.rounds, args.real_rounds, args.big_rounds, args.big_mib) < 1:
        parser.error("--rounds, --real-rounds, --big-rounds and --big-mib must be at least 1")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    info = start(args.image)
    print(f"parts {' '.join(args.parts)}; calls per method after 1 warm-up, interleaved (order rotated each round)")
    real: SWETask | None = None
    if "b" in args.parts:
        try:
            real = load_task(args.row, args.real_image)
        except BenchmarkError as exc:
            print(f"part b skipped: {exc}")
    results: dict[str, dict[str, list[Method]]] = {}
    notes: dict[str, list[str]] = {}
    skipped: dict[str, str] = {}
    failed: dict[str, str] = {}
    for name in measurable(args.providers, args.image, skipped):
        image = None if name == "local" else args.image
        results[name], notes[name] = {}, []
        for part in args.parts:
            title = TITLES[part].format(mib=args.big_mib)
            if part == "b" and (real is None or name == "local"):
                print(f"  part {title}: skipped ({'local has no images' if real else 'no task row'})")
                continue
            started = time.perf_counter()
            try:
                methods = results[name][part] = run_part(part, name, image, real, args)
            except Exception as exc:  # one part's failure must not hide the others' numbers
                failed[f"{name}/{part}"] = f"{type(exc).__name__}: {exc}"
                traceback.print_exc()
                continue
            baseline = methods[0] if part != "c" else methods[1]
            print_table(f"{name}, part {title} (ms per call)", methods, baseline)
            if part != "c":
                for line in verdicts(name, title.split(":")[1].strip(), methods):
                    notes[name].append(line)
                    print(f"  {line}")
            print(f"  ({time.perf_counter() - started:.0f} s)", flush=True)
    results_json = {
        name: {
            part: {m.name: {"summary": vars(Summary.of(m.samples_ms)), "samples_ms": m.samples_ms} for m in ms}
            for part, ms in parts_.items()
        }
        for name, parts_ in results.items()
    }
    payload = {"results": results_json, "verdicts": notes}
    return finish(args, info, payload, skipped, failed, measured=bool(results), leftover=fork_leftovers)

if __name__ == "__main__":
    sys.exit(main())
