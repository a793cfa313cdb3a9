"""The step at the floor: where `SWEEnv.step("true")` spends its time on local and docker, against the floors and
the peers, side by side in one run.

Per provider (``local``: bwrap; ``docker``: the test image), one env and its one sandbox, every method interleaved
in rounds (order rotated each round) after a warm-up:

* ``SWEEnv.step`` back to back: the next step is sent the moment the last returns.
* ``SWEEnv.step`` after 2 ms of think time (the sleep is not counted): what a policy that does anything between
  steps sees. A step's command runs in the bash the runner started after the last step's reply (the runner's
  `SpareShell`); back to back, that bash may still be starting when the next step comes.
* the same step through swe_gym's loop (``host.act`` on the background loop, as every step went before a step's
  request and reply went over the runner's pipe or socket right in the caller's thread: `RunnerChannel.call_here`).
* ``fresh bash -c``: the same ``true`` through the library's own `Sandbox.exec` (never a spare: a fresh
  ``bash -c`` per command, as every step was run before spares), with the same think time.
* ``runner ping``: one request and reply over the same channel (framing, HMAC, the pipe, the runner's loop), no
  command, in the caller's thread (the floor of our transport) and through the loop.
* ``attached pipe``: one line echoed by a process attached over pipes (docker: ``docker exec -i`` of a Python echo
  loop in the container; local: the same loop as a host process, which a local sandbox is): the floor of any
  transport.
* docker only: ``docker exec`` through the CLI, and mini-swe-agent's ``DockerEnvironment.execute`` (its own
  container of the same image, when ``minisweagent`` is installed).

The breakdown splits the think-time step (and the fresh path) by what the channel sees: the env side (the step
minus the channel call: Gymnasium wrappers, the episode's bookkeeping, for the fresh path the hop onto the loop), the
transport (the call minus the runner's own time), and the runner (its reply's ``duration``: the hand-off to the
spare or the spawn of ``bash -c``, the command, reaping it). Every counted step is checked to exit 0.

Run: ``python benchmarks/step_floor.py [--providers local docker] [--rounds N] [--json OUT]``; it ends with the
leak check (exit status 1 if a container of this run remains).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import gymnasium as gym
from bench_common import (
    DEFAULT_IMAGE,
    BenchmarkError,
    Method,
    Summary,
    leak_check,
    leaked,
    machine_info,
    print_machine,
    print_table,
    write_json,
)
from step_overhead import mini_swe_agent

import swe_gym  # noqa: F401  (registers swe_gym/SWE-v0)
from swe_gym.envs.swe_env import SLOT
from swe_gym.sandbox import Sandbox
from swe_gym.sandbox.backend import RunnerSandbox
from swe_gym.sandbox.loop import run_sync

THINK_S = 0.002
BLOCK = 20  # calls per method per round
ECHO_LOOP = "import sys\nfor line in sys.stdin:\n    sys.stdout.write(line)\n    sys.stdout.flush()\n"


class ChannelClock:
    """Times each exec through ``backend``'s channel: the call, and the runner's own ``duration`` from its reply.

    Wraps the one instance's ``_call`` and ``_call_here`` (measurement only; the env's code is unchanged)."""

    def __init__(self, backend: RunnerSandbox) -> None:
        self.call_ms: list[float] = []
        self.runner_ms: list[float] = []
        inner, inner_here = backend._call, backend._call_here

        def note(header: dict[str, Any], reply: dict[str, Any], started: float) -> None:
            if header.get("op") == "exec":
                self.call_ms.append((time.perf_counter() - started) * 1000.0)
                self.runner_ms.append(float(reply["duration"]) * 1000.0)

        async def timed(header: dict[str, Any], payload: bytes = b"", **kw: Any) -> tuple[dict[str, Any], bytes]:
            started = time.perf_counter()
            reply, data = await inner(header, payload, **kw)
            note(header, reply, started)
            return reply, data

        def timed_here(header: dict[str, Any], payload: bytes, **kw: Any) -> tuple[dict[str, Any], bytes] | None:
            started = time.perf_counter()
            answer = inner_here(header, payload, **kw)
            if answer is not None:
                note(header, answer[0], started)
            return answer

        backend._call = timed  # type: ignore[method-assign]
        backend._call_here = timed_here  # type: ignore[method-assign]

    def take(self) -> tuple[float, float]:
        """The last exec's (call, runner) times."""
        return self.call_ms[-1], self.runner_ms[-1]


class Breakdown:
    """Per-call phases of one method: total, env side, transport, runner."""

    def __init__(self) -> None:
        self.rows: list[tuple[float, float, float]] = []

    def add(self, total_ms: float, call_ms: float, runner_ms: float) -> None:
        self.rows.append((total_ms - call_ms, call_ms - runner_ms, runner_ms))

    def summary(self) -> dict[str, float]:
        if not self.rows:
            return {}
        env, transport, runner = zip(*self.rows, strict=True)
        return {
            "env side": Summary.of(env).p50,
            "transport": Summary.of(transport).p50,
            "runner": Summary.of(runner).p50,
        }


def step_method(
    name: str, env: gym.Env[str, str], clock: ChannelClock, phases: Breakdown | None, think: bool
) -> Method:
    def call() -> None:
        started = time.perf_counter()
        _, _, terminated, truncated, info = env.step("true")
        total = (time.perf_counter() - started) * 1000.0
        if terminated or truncated or info["exit_code"] != 0:
            raise BenchmarkError(f"{name}: the step ended the episode or failed ({info})")
        if phases is not None:
            phases.add(total, *clock.take())

    return Method(name, call, before=(lambda: time.sleep(THINK_S)) if think else None)


def fresh_method(box: Sandbox, clock: ChannelClock, phases: Breakdown) -> Method:
    def call() -> None:
        started = time.perf_counter()
        result = box.exec("true")
        total = (time.perf_counter() - started) * 1000.0
        if result.exit_code != 0:
            raise BenchmarkError(f"fresh bash -c: exit code {result.exit_code}")
        phases.add(total, *clock.take())

    return Method("fresh bash -c (library exec), after think time", call, before=lambda: time.sleep(THINK_S))


def loop_step_method(env: gym.Env[str, str]) -> Method:
    host = env.unwrapped.host  # type: ignore[attr-defined]

    def call() -> None:
        _, _, terminated, truncated, info = host.call(host.act(SLOT, "true"))
        if terminated or truncated or info["exit_code"] != 0:
            raise BenchmarkError(f"step through the loop: the step ended the episode or failed ({info})")

    return Method("the same step through swe_gym's loop, after think time", call, before=lambda: time.sleep(THINK_S))


def ping_method(backend: RunnerSandbox, here: bool) -> Method:
    def call() -> None:
        if here:
            answer = backend._call_here({"op": "ping"}, b"", timeout=30)
            if answer is None:
                raise BenchmarkError("runner ping: the channel cannot be used from this thread")
            reply = answer[0]
        else:
            reply, _ = run_sync(backend._call({"op": "ping"}, b"", timeout=30))
        if not reply.get("ok"):
            raise BenchmarkError(f"runner ping: {reply}")

    where = "in the caller's thread (our transport's floor)" if here else "through swe_gym's loop"
    return Method(f"runner ping, {where}", call)


@contextmanager
def attached_pipe(argv: Sequence[str]) -> Iterator[Method]:
    """A line echoed by ``argv`` (a Python echo loop) over its stdin/stdout."""
    proc = subprocess.Popen([*argv, ECHO_LOOP], stdin=subprocess.PIPE, stdout=subprocess.PIPE, bufsize=0)
    assert proc.stdin is not None and proc.stdout is not None
    stdin, stdout = proc.stdin, proc.stdout

    def call() -> None:
        stdin.write(b"x\n")
        if stdout.readline() != b"x\n":
            raise BenchmarkError("the attached echo loop did not echo")

    try:
        yield Method("attached pipe (any transport's floor)", call)
    finally:
        stdin.close()
        proc.wait(timeout=30)


def docker_cli_method(container_id: str) -> Method:
    def call() -> None:
        if subprocess.run(["docker", "exec", container_id, "true"], check=False).returncode != 0:
            raise BenchmarkError("docker exec failed")

    return Method("docker exec CLI", call)


def mini_method(mini: Any) -> Method:
    def call() -> None:
        if int(mini.execute({"command": "true"})["returncode"]) != 0:
            raise BenchmarkError("mini-swe-agent execute failed")

    return Method("mini-swe-agent DockerEnvironment.execute", call)


def measure(provider: str, image: str, rounds: int) -> dict[str, Any]:
    config: dict[str, Any] = {"type": "local", "isolation": "bwrap"} if provider == "local" else {"type": provider}
    options: dict[str, Any] = {} if provider == "local" else {"image": image}
    env = gym.make("swe_gym/SWE-v0", provider=config, max_steps=10**7, **options)
    try:
        env.reset(seed=0)
        box = Sandbox(env.unwrapped.sandbox)  # type: ignore[attr-defined]
        backend = box.aio.backend
        assert isinstance(backend, RunnerSandbox)
        clock = ChannelClock(backend)
        spare_phases, fresh_phases = Breakdown(), Breakdown()
        methods = [
            step_method("SWEEnv.step, after think time", env, clock, spare_phases, think=True),
            step_method("SWEEnv.step, back to back", env, clock, None, think=False),
            loop_step_method(env),
            fresh_method(box, clock, fresh_phases),
            ping_method(backend, here=True),
            ping_method(backend, here=False),
        ]
        container_id = str(backend.container_id) if provider == "docker" else None  # type: ignore[attr-defined]
        if container_id is not None:
            pipe_argv = ["docker", "exec", "-i", container_id, "python3", "-u", "-c"]
        else:
            pipe_argv = [sys.executable, "-u", "-c"]
        with attached_pipe(pipe_argv) as pipe, peers(provider, image, container_id) as extra:
            methods += [pipe, *extra]
            in_blocks(methods, 1)  # warm-up, not counted
            for method in methods:
                method.samples_ms.clear()
            spare_phases.rows.clear()
            fresh_phases.rows.clear()
            in_blocks(methods, rounds)
    finally:
        env.close()
    title = f"{provider}: a step of `true` (ms per call; p50 / the think-time step's p50)"
    print_table(title, methods, methods[0], digits=3)
    breakdown = {"SWEEnv.step, after think time": spare_phases.summary(), "fresh bash -c": fresh_phases.summary()}
    print("  where the time goes (p50 of each phase, ms):")
    for name, parts in breakdown.items():
        print(f"    {name}: " + ", ".join(f"{part} {ms:.3f}" for part, ms in parts.items()))
    step = Summary.of(methods[0].samples_ms)
    print(
        f"  {provider}: think-time step p50 {step.p50:.3f} ms, p99 {percentile(methods[0].samples_ms, 99):.3f} ms "
        f"(goal: p50 <= 1 ms, p99 <= 3 ms)"
    )
    return {
        "methods": {m.name: {"summary": vars(Summary.of(m.samples_ms)), "samples_ms": m.samples_ms} for m in methods},
        "breakdown_p50_ms": breakdown,
    }


def in_blocks(methods: Sequence[Method], rounds: int) -> None:
    """``rounds`` rounds of `BLOCK` consecutive calls of each method (a back-to-back step follows a step), the
    order of the methods rotated each round."""
    for index in range(rounds):
        shift = index % len(methods)
        for method in [*methods[shift:], *methods[:shift]]:
            method.samples_ms.extend(method.run_once() for _ in range(BLOCK))


def percentile(samples: Sequence[float], q: int) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(len(ordered) * q / 100))]


@contextmanager
def peers(provider: str, image: str, container_id: str | None) -> Iterator[list[Method]]:
    """docker's own ``docker exec`` and mini-swe-agent's execute (when installed); none for local."""
    if provider != "docker" or container_id is None:
        yield []
        return
    with mini_swe_agent(image) as mini:
        yield [docker_cli_method(container_id), *([mini_method(mini)] if mini is not None else [])]


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument("--providers", nargs="+", default=["local", "docker"], choices=["local", "docker"])
    parser.add_argument("--image", default=DEFAULT_IMAGE, help=f"docker's task image (default: {DEFAULT_IMAGE})")
    parser.add_argument("--rounds", type=int, default=15, help=f"rounds of {BLOCK} calls per method (default: 15)")
    parser.add_argument("--json", type=Path, metavar="OUT", help="also write every raw sample to this JSON file")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    info = machine_info(args.image if "docker" in args.providers else None)
    print_machine(info)
    think = f"think time {THINK_S * 1e3:g} ms"
    print(f"{args.rounds} rounds of {BLOCK} calls per method, after {BLOCK} warm-up calls; {think}")
    results = {provider: measure(provider, args.image, args.rounds) for provider in args.providers}
    leak = leak_check(f"step_floor-{uuid.uuid4().hex[:8]}") if "docker" in args.providers else None
    write_json(args.json, {"machine": info, **results, "leak": leak})
    return 1 if leak is not None and leaked(leak) else 0


if __name__ == "__main__":
    sys.exit(main())
