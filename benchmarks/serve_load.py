"""Load on ``swe-gym serve``: concurrent sessions from separate client processes, the latency the server adds over
an in-process env measured side by side, and nothing left behind once the clients are killed.

What is compared
----------------
Each of ``--clients`` client processes (default 32) drives one session of the served env through OpenEnv's own
client (``GenericEnvClient(...).sync()``, over its WebSocket) and, in the same process, an in-process
``gymnasium.make("swe_gym/SWE-v0")`` env on the same task (bundled tasks, the local provider, the same tools). Once
every client is connected and reset, they start together and take ``--steps`` steps (default 20) of the no-op
command ``true`` in each env, timed with ``time.perf_counter`` around the call: one served step, one in-process
step, the order swapped each round. The added latency is each served step minus the in-process step paired with it.

Why it is fair
--------------
* Same machine, same moment, same process, same task and command for both sides: the pairs are interleaved, so
  the load of the other 31 clients (and of the server) hits both equally.
* Every counted step is checked to have succeeded (exit status 0, not done), so a failing side cannot look fast.
* The in-process side pays what a local env pays (its wrappers, the hop onto swe_gym's event loop); the served side
  pays that in the server plus the client's JSON message, the WebSocket round trip and the server's dispatch.

Nothing left behind
-------------------
After the steps each client closes its in-process env and holds its session open mid-episode (agent and grading
sandboxes up); the script then SIGKILLs every client at once and waits for the server to have no session and no
sandbox of its run (found by the ``swe_gym.run_id`` label in the local provider's sandbox directories), then stops
the server with SIGTERM and checks again, and checks the clients' own run. Exit status 1 if anything remains.

Run: ``python benchmarks/serve_load.py [--clients N] [--steps K] [--json OUT]`` (about 3 minutes for 32 x 20 on 2
cores, most of it the client processes starting).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import time
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench_common import machine_info, print_machine, write_json

from swe_gym.integrations.openenv import ServedEnv

COMMAND = "true"
TOOLS = ["bash", "str_replace_editor", "submit"]
CLEAN_TIMEOUT_S = 120.0


# -- the client process ----------------------------------------------------------------------------------------------


def client(base_url: str, index: int, steps: int) -> None:
    """One session, and an in-process env beside it; prints "ready", waits for "go", prints its samples as JSON."""
    import gymnasium as gym
    from openenv.core import GenericEnvClient

    import swe_gym  # noqa: F401  (registers swe_gym/SWE-v0)

    served = GenericEnvClient(base_url=base_url, message_timeout_s=300).sync()
    served.connect()
    first = served.reset(seed=index)
    local = gym.make("swe_gym/SWE-v0", tools=TOOLS)
    _, info = local.reset(seed=index)
    if info["instance_id"] != first.observation["info"]["instance_id"]:
        raise RuntimeError(f"the two envs drew different tasks for seed {index}")
    print("ready", flush=True)
    sys.stdin.readline()  # "go"

    def served_step() -> float:
        started = time.perf_counter()
        result = served.step({"command": COMMAND})
        elapsed = time.perf_counter() - started
        if result.done or result.observation["info"].get("exit_code") != 0:
            raise RuntimeError(f"a served step failed: {result.observation}")
        return elapsed * 1000.0

    def local_step() -> float:
        started = time.perf_counter()
        _, _, terminated, truncated, step_info = local.step(COMMAND)
        elapsed = time.perf_counter() - started
        if terminated or truncated or step_info.get("exit_code") != 0:
            raise RuntimeError(f"an in-process step failed: {step_info}")
        return elapsed * 1000.0

    served_ms, local_ms = [], []
    for round_index in range(steps):
        if round_index % 2:
            local_ms.append(local_step())
            served_ms.append(served_step())
        else:
            served_ms.append(served_step())
            local_ms.append(local_step())
    local.close()
    print(json.dumps({"served_ms": served_ms, "local_ms": local_ms}), flush=True)
    sys.stdin.readline()  # held open, mid-episode, until killed


# -- the parent ------------------------------------------------------------------------------------------------------


def percentile(samples: Sequence[float], q: int) -> float:
    return statistics.quantiles(samples, n=100, method="inclusive")[q - 1] if len(samples) > 1 else samples[0]


def row(name: str, samples: Sequence[float]) -> dict[str, float]:
    figures = {"p50": statistics.median(samples), "p95": percentile(samples, 95), "mean": statistics.fmean(samples)}
    print(f"{name:<34}{len(samples):>6}{figures['p50']:>10.2f}{figures['p95']:>10.2f}{figures['mean']:>10.2f}")
    return figures


def sandboxes_of(run_id: str) -> list[str]:
    """The local provider's sandbox directories labelled with ``run_id``."""
    from swe_gym.sandbox.registry import get_provider

    root = get_provider("local").config.root
    metas = [home / "meta.json" for home in (root.iterdir() if root.is_dir() else [])]
    return [meta.parent.name for meta in metas if meta.is_file() and run_id in meta.read_text()]


def active_sessions(served: ServedEnv) -> int:
    return int(served.get("/sessions")["active_sessions"])


def wait_clean(served: ServedEnv, run_id: str) -> float:
    """Seconds until the server has no session and no sandbox of ``run_id`` (raises past `CLEAN_TIMEOUT_S`)."""
    started = time.monotonic()
    while active_sessions(served) or sandboxes_of(run_id):
        if time.monotonic() - started > CLEAN_TIMEOUT_S:
            raise RuntimeError(f"after {CLEAN_TIMEOUT_S:g} s: {active_sessions(served)} sessions open, "
                               f"sandboxes left: {sandboxes_of(run_id)}")  # fmt: skip
        time.sleep(0.1)
    return time.monotonic() - started


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    if args.client is not None:
        client(args.client, args.index, args.steps)
        return 0
    info = machine_info(None)
    print_machine(info)
    server_run, client_run = f"serveload{uuid.uuid4().hex[:6]}", f"serveclients{uuid.uuid4().hex[:6]}"
    served = ServedEnv("--max-sessions", str(args.clients), env={"SWE_GYM_RUN_ID": server_run})
    served.start()
    print(f"server {served.url} (run {server_run}); {args.clients} client processes x {args.steps} steps of "
          f"{COMMAND!r}, each beside an in-process env (run {client_run})", flush=True)  # fmt: skip
    environment = {**os.environ, "SWE_GYM_RUN_ID": client_run}
    argv_client = [sys.executable, "-u", __file__, "--steps", str(args.steps), "--client", served.base_url]
    clients: list[subprocess.Popen[str]] = []
    payload: dict[str, Any] = {"machine": info, "clients": args.clients, "steps": args.steps, "command": COMMAND}
    leftovers: dict[str, Any] = {}
    try:
        started = time.perf_counter()
        for index in range(args.clients):
            argv_i = [*argv_client, "--index", str(index)]
            clients.append(subprocess.Popen(argv_i, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                                            env=environment))  # fmt: skip
        for process in clients:
            assert process.stdout is not None
            if process.stdout.readline() != "ready\n":
                raise RuntimeError(f"a client failed to start (exit {process.wait()})")
        print(f"{args.clients} clients connected and reset in {time.perf_counter() - started:.1f} s", flush=True)
        open_sessions = active_sessions(served)
        for process in clients:
            assert process.stdin is not None
            process.stdin.write("go\n")
            process.stdin.flush()
        results = []
        for process in clients:
            assert process.stdout is not None
            line = process.stdout.readline()
            if not line:
                raise RuntimeError(f"a client failed mid-run (exit {process.wait()})")
            results.append(json.loads(line))
        served_ms = [s for r in results for s in r["served_ms"]]
        local_ms = [s for r in results for s in r["local_ms"]]
        added_ms = [s - loc for r in results for s, loc in zip(r["served_ms"], r["local_ms"], strict=True)]
        print(f"\n{args.clients} concurrent sessions x {args.steps} steps ({open_sessions} open on the server)")
        print(f"{'step(' + repr(COMMAND) + ')':<34}{'n':>6}{'p50 ms':>10}{'p95 ms':>10}{'mean ms':>10}")
        payload["served_ms"] = row("served (OpenEnv client, WebSocket)", served_ms)
        payload["local_ms"] = row("in-process SWEEnv", local_ms)
        payload["added_ms"] = row("added by the server (paired)", added_ms)
        ratio = payload["served_ms"]["p50"] / payload["local_ms"]["p50"]
        payload["ratio_p50"] = ratio
        print(f"served / in-process p50: {ratio:.2f}x; p95: "
              f"{payload['served_ms']['p95'] / payload['local_ms']['p95']:.2f}x")  # fmt: skip
        held = len(sandboxes_of(server_run))
        print(f"\nholding {active_sessions(served)} sessions mid-episode ({held} sandboxes); "
              f"SIGKILL to every client", flush=True)  # fmt: skip
    finally:
        for process in clients:
            process.send_signal(signal.SIGKILL)
        for process in clients:
            process.wait()
    try:
        clean_s = wait_clean(served, server_run)
        print(f"after the kill: 0 sessions, 0 sandboxes of the server's run, {clean_s:.2f} s after the SIGKILLs")
        payload["clean_after_kill_s"] = clean_s
    finally:
        status = served.stop()
    leftovers = {"server_run": sandboxes_of(server_run), "client_run": sandboxes_of(client_run)}
    payload.update(server_exit=status, leftovers=leftovers)
    print(f"server stopped (exit {status}); leftover sandboxes: server run {len(leftovers['server_run'])}, "
          f"clients' in-process envs {len(leftovers['client_run'])}")  # fmt: skip
    write_json(args.json, payload)
    return 1 if any(leftovers.values()) else 0


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n", 1)[0])
    parser.add_argument("--clients", type=int, default=32, help="client processes, one session each (default: 32)")
    parser.add_argument("--steps", type=int, default=20, help="timed steps per client and env (default: 20)")
    parser.add_argument("--json", type=Path, metavar="OUT", help="also write the raw numbers to this JSON file")
    parser.add_argument("--client", metavar="BASE_URL", help=argparse.SUPPRESS)
    parser.add_argument("--index", type=int, default=0, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.clients < 1 or args.steps < 1:
        parser.error("--clients and --steps must be >= 1")
    return args


if __name__ == "__main__":
    sys.exit(main())
