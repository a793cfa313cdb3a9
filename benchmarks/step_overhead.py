"""Per-step and per-reset overhead of `SWEEnv` against plain Docker, measured side by side in one run.

What is compared
----------------
Step overhead: the wall time to run the no-op command ``true``, measured with ``time.perf_counter`` around each call:

* ``SWEEnv.step("true")`` through ``gymnasium.make("swe_gym/SWE-v0", provider="docker")``, wrappers included. The
  command goes over the long-lived attached runner (no Docker API call per step) and is run by ``bash -c``.
* ``docker exec <cid> true`` through the Docker CLI (a subprocess per call).
* The Docker SDK, two ways: ``client.api.exec_create`` + ``exec_start``, and ``container.exec_run("true")`` (which
  adds an ``exec_inspect`` for the exit code).
* mini-swe-agent's ``DockerEnvironment.execute`` (only if ``minisweagent`` is importable). It starts its own
  container from the same image, since it only runs commands in containers it started, and runs each command as
  mini-swe-agent ships it: ``docker exec -w / <cid> bash -lc true``.

Reset time: ``env.reset(seed=0)`` (cold: a new container, the task's repository uploaded, a git snapshot taken, and
the previous episode's container removed) against the bare minimum a container costs, ``docker run --rm --network
none IMAGE true`` through the CLI and ``client.containers.run(IMAGE, "true", remove=True, network_mode="none")``
through the SDK. ``info["reset_s"]`` (the same reset without tearing down the previous container) is shown too.

Persistent shell: ``SWEEnv.step("true")`` of an env made with ``shell="persistent"`` (the command sourced by the
episode's one bash, which keeps ``cd``/``export`` between steps) beside the same step of the default env (a fresh
``bash -c``), each env in its own container of the same image, interleaved the same way.

Tool calls: in an env made with ``tools=["bash", "str_replace_editor", "submit"]``, ``SWEEnv.step`` of the same
``true`` as a ``bash`` tool call (an OpenAI ``tool_calls`` entry, parsed and checked by the env) and of an editor
``view`` of a 20-line file (a path probe and a file read through the runner), beside the plain ``step("true")`` of
that env and of the default env (each env its own container of the same image), interleaved the same way.

Why it is fair
--------------
* Same machine, same image, same process, and for steps (except mini-swe-agent, see above) the same container: the
  one ``env.reset`` created, addressed by its full id.
* Every method is warmed up first (calls not counted), then the methods are interleaved in rounds (each round runs a
  block of every method, the order rotated each round), so machine noise and drift hit all of them equally.
* Every counted call is checked to have succeeded (exit status 0), so a failing method cannot look fast.
* The baselines are given the easier job: ``docker exec``/SDK run ``true`` directly, while ``SWEEnv.step`` spawns
  ``bash -c true`` and also pays for the Gymnasium wrappers and the hop onto swe_gym's background event loop.
* The ``docker run`` baselines use ``--network none`` like swe_gym's sandboxes, and include container removal just
  as ``env.reset`` includes removing the previous episode's container.

Run: ``python benchmarks/step_overhead.py [--image IMG] [--steps N] [--resets K] [--json OUT]``.
Nothing leaks: the env is closed and every container this script starts is removed in ``finally`` blocks, and the
run ends by counting containers labelled ``swe_gym.managed=true`` (exit status 1 if any of this run's remain).
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import platform
import statistics
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import docker
import docker.errors
import gymnasium as gym

import swe_gym
from swe_gym.sandbox import labels as lbl

DEFAULT_IMAGE = "swe-gym-test:bookworm"
ROUNDS = 10
STEP_WARMUP = 5
RESET_WARMUP = 1
RESET_SEED = 0
ENV_STEP = "SWEEnv.step"
ENV_RESET = "SWEEnv.reset"
PERSISTENT_STEP = 'SWEEnv.step, shell="persistent"'
TOOLS = ["bash", "str_replace_editor", "submit"]
VIEW_FILE = "/tmp/swe_gym_bench_view.txt"
MINI_INSTALL = "pip install mini-swe-agent"
#: Label on the `docker run` baseline containers, so a run killed halfway can still remove them.
BENCH_LABEL = "swe_gym.benchmark"
BENCH_TOKEN = f"step_overhead-{uuid.uuid4().hex[:8]}"

#: A measured call returns its exit status, or None where reading it would cost an extra API call.
Call = Callable[[], int | None]


class BenchmarkError(RuntimeError):
    """A measured call failed, or the setup is not what the benchmark needs."""


@dataclass
class Method:
    name: str
    call: Call
    samples_ms: list[float] = field(default_factory=list)

    def run_once(self) -> float:
        started = time.perf_counter()
        status = self.call()
        elapsed_ms = (time.perf_counter() - started) * 1000.0
        if status not in (0, None):
            raise BenchmarkError(f"{self.name} exited with status {status}")
        return elapsed_ms


@dataclass(frozen=True)
class Summary:
    n: int
    p50_ms: float
    p90_ms: float
    mean_ms: float

    @classmethod
    def of(cls, samples: Sequence[float]) -> Summary:
        p90 = statistics.quantiles(samples, n=10, method="inclusive")[8] if len(samples) > 1 else samples[0]
        return cls(len(samples), statistics.median(samples), p90, statistics.fmean(samples))


# -- measurement ---------------------------------------------------------------------------------------------------


def round_sizes(total: int, rounds: int) -> list[int]:
    """Split ``total`` calls over at most ``rounds`` rounds as evenly as possible."""
    rounds = max(1, min(rounds, total))
    return [total // rounds + (1 if r < total % rounds else 0) for r in range(rounds)]


def warm_up(methods: Sequence[Method], calls: int) -> None:
    for method in methods:
        for _ in range(calls):
            method.run_once()


def measure_interleaved(methods: Sequence[Method], total: int, rounds: int = ROUNDS) -> None:
    """Run ``total`` counted calls of every method, in rounds whose method order rotates."""
    for index, size in enumerate(round_sizes(total, rounds)):
        shift = index % len(methods)
        for method in [*methods[shift:], *methods[:shift]]:
            method.samples_ms.extend(method.run_once() for _ in range(size))


# -- step methods --------------------------------------------------------------------------------------------------


def env_step_call(env: gym.Env[str, str], durations_ms: list[float], action: Any = "true") -> Call:
    def call() -> int:
        _, _, terminated, truncated, info = env.step(action)
        if terminated or truncated:
            raise BenchmarkError("the episode ended during the step benchmark; raise max_steps")
        durations_ms.append(info["duration_s"] * 1000.0)
        return int(info["exit_code"])

    return call


def cli_exec_call(container_id: str) -> Call:
    argv = ["docker", "exec", container_id, "true"]
    return lambda: subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, check=False).returncode


def sdk_lowlevel_exec_call(client: docker.DockerClient, container_id: str) -> Call:
    api = client.api

    def call() -> None:
        exec_id = api.exec_create(container_id, ["true"])["Id"]
        api.exec_start(exec_id)  # blocks until the command's output stream closes

    return call


def sdk_exec_run_call(client: docker.DockerClient, container_id: str) -> Call:
    container = client.containers.get(container_id)
    return lambda: container.exec_run(["true"]).exit_code


def check_sdk_lowlevel(client: docker.DockerClient, container_id: str) -> None:
    """The low-level call skips `exec_inspect` to stay minimal; check once here that it does succeed."""
    api = client.api
    exec_id = api.exec_create(container_id, ["true"])["Id"]
    api.exec_start(exec_id)
    status = api.exec_inspect(exec_id)["ExitCode"]
    if status != 0:
        raise BenchmarkError(f"docker SDK exec_create+exec_start exited with status {status}")


@contextmanager
def mini_swe_agent(image: str) -> Iterator[Any | None]:
    """mini-swe-agent's `DockerEnvironment` on ``image`` (its own container), or None when it is not installed."""
    os.environ.setdefault("MSWEA_SILENT_STARTUP", "1")  # its import prints a banner otherwise
    try:
        from minisweagent.environments.docker import DockerEnvironment
    except ImportError:
        print(f"mini-swe-agent: skipped (the `minisweagent` package is not installed; to include it: {MINI_INSTALL})")
        yield None
        return
    mini = DockerEnvironment(image=image, logger=logging.getLogger("step_overhead.mini-swe-agent"))
    try:
        yield mini
    finally:
        container_id, mini.container_id = mini.container_id, None  # its own cleanup is a background `docker stop`
        if container_id:
            subprocess.run(["docker", "rm", "-f", container_id], capture_output=True, check=False)


def mini_call(mini: Any) -> Call:
    return lambda: int(mini.execute({"command": "true"})["returncode"])


# -- reset methods -------------------------------------------------------------------------------------------------


def env_reset_call(env: gym.Env[str, str], reset_s_ms: list[float]) -> Call:
    def call() -> int:
        _, info = env.reset(seed=RESET_SEED)
        reset_s_ms.append(info["reset_s"] * 1000.0)
        return 0

    return call


def cli_run_call(image: str) -> Call:
    argv = ["docker", "run", "--rm", "--network", "none", "--label", f"{BENCH_LABEL}={BENCH_TOKEN}", image, "true"]
    return lambda: subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, check=False).returncode


def sdk_run_call(client: docker.DockerClient, image: str) -> Call:
    def call() -> int:
        client.containers.run(image, "true", remove=True, network_mode="none", labels={BENCH_LABEL: BENCH_TOKEN})
        return 0  # a non-zero exit raises docker.errors.ContainerError

    return call


# -- phases --------------------------------------------------------------------------------------------------------


def container_id_of(env: gym.Env[str, str]) -> str:
    sandbox = env.unwrapped.sandbox  # type: ignore[attr-defined]
    if sandbox is None:
        raise BenchmarkError("the env has no live sandbox; reset() it first")
    return str(sandbox.backend.container_id)


def step_phase(env: gym.Env[str, str], client: docker.DockerClient, image: str, steps: int) -> dict[str, Any]:
    env.reset(seed=RESET_SEED)
    container_id = container_id_of(env)
    print(f"step benchmark container: {container_id[:12]} (created by env.reset, shared by all but mini-swe-agent)")
    check_sdk_lowlevel(client, container_id)
    durations_ms: list[float] = []
    methods = [
        Method(ENV_STEP, env_step_call(env, durations_ms)),
        Method("docker exec CLI", cli_exec_call(container_id)),
        Method("docker SDK exec_create+exec_start", sdk_lowlevel_exec_call(client, container_id)),
        Method("docker SDK container.exec_run", sdk_exec_run_call(client, container_id)),
    ]
    with mini_swe_agent(image) as mini:
        if mini is not None:
            methods.append(Method("mini-swe-agent DockerEnvironment.execute", mini_call(mini)))
            print(f"mini-swe-agent: included (its own container {str(mini.container_id)[:12]}, same image)")
        warm_up(methods, STEP_WARMUP)
        durations_ms.clear()
        measure_interleaved(methods, steps)
    if container_id_of(env) != container_id:
        raise BenchmarkError("the env's container changed during the step benchmark")
    return {
        "container_id": container_id,
        "methods": methods,
        "notes": {"SWEEnv info['duration_s']": durations_ms},
    }


def reset_phase(env: gym.Env[str, str], client: docker.DockerClient, image: str, resets: int) -> dict[str, Any]:
    reset_s_ms: list[float] = []
    methods = [
        Method(ENV_RESET, env_reset_call(env, reset_s_ms)),
        Method("docker run --rm CLI", cli_run_call(image)),
        Method("docker SDK containers.run(remove=True)", sdk_run_call(client, image)),
    ]
    warm_up(methods, RESET_WARMUP)
    reset_s_ms.clear()
    measure_interleaved(methods, resets)
    return {"methods": methods, "notes": {"SWEEnv info['reset_s']": reset_s_ms}}


def persistent_phase(env: gym.Env[str, str], image: str, steps: int) -> dict[str, Any]:
    """``step("true")`` with ``shell="persistent"`` beside the default stateless step (``env``), own container each."""
    persistent = gym.make(
        "swe_gym/SWE-v0", provider="docker", image=image, shell="persistent", max_steps=steps + 10 * STEP_WARMUP
    )
    try:
        env.reset(seed=RESET_SEED)
        persistent.reset(seed=RESET_SEED)
        stateless_ms: list[float] = []
        persistent_ms: list[float] = []
        methods = [
            Method(ENV_STEP, env_step_call(env, stateless_ms)),
            Method(PERSISTENT_STEP, env_step_call(persistent, persistent_ms)),
        ]
        warm_up(methods, STEP_WARMUP)
        stateless_ms.clear()
        persistent_ms.clear()
        measure_interleaved(methods, steps)
    finally:
        persistent.close()
    notes = {"SWEEnv info['duration_s']": stateless_ms, f"{PERSISTENT_STEP} info['duration_s']": persistent_ms}
    return {"methods": methods, "notes": notes}


def tool_call(name: str, **arguments: Any) -> dict[str, Any]:
    """An OpenAI ``tool_calls`` entry, as an LLM policy with native function calling passes it."""
    return {"id": "bench", "type": "function", "function": {"name": name, "arguments": json.dumps(arguments)}}


def tool_phase(env: gym.Env[str, str], image: str, steps: int) -> dict[str, Any]:
    """``true`` as a plain step, as a ``bash`` tool call, and an editor ``view``, in an env with ``tools``."""
    tools = gym.make(
        "swe_gym/SWE-v0", provider="docker", image=image, tools=TOOLS, max_steps=3 * (steps + 10 * STEP_WARMUP)
    )
    try:
        env.reset(seed=RESET_SEED)
        tools.reset(seed=RESET_SEED)
        _, _, _, _, info = tools.step(f"seq -f 'line %g of a small file' 20 > {VIEW_FILE}")
        if info["exit_code"] != 0:
            raise BenchmarkError(f"could not write {VIEW_FILE} for the editor view")
        samples: dict[str, list[float]] = {}
        rows = [
            (ENV_STEP, env, "true"),
            (f"{ENV_STEP}, tools env, plain string", tools, "true"),
            (f"{ENV_STEP}, bash tool call", tools, tool_call("bash", command="true")),
            (
                f"{ENV_STEP}, str_replace_editor view",
                tools,
                tool_call("str_replace_editor", command="view", path=VIEW_FILE),
            ),
        ]
        methods = [Method(name, env_step_call(e, samples.setdefault(name, []), action)) for name, e, action in rows]
        warm_up(methods, STEP_WARMUP)
        for durations in samples.values():
            durations.clear()
        measure_interleaved(methods, steps)
    finally:
        tools.close()
    return {"methods": methods, "notes": {f"{name} info['duration_s']": ms for name, ms in samples.items()}}


# -- reporting -----------------------------------------------------------------------------------------------------


def compare(p50: float, baseline_p50: float) -> str:
    ratio = p50 / baseline_p50
    return f"{ratio:.1f}x slower" if ratio >= 1.0 else f"{1.0 / ratio:.1f}x faster"


def print_table(title: str, methods: Sequence[Method], notes: dict[str, list[float]]) -> None:
    baseline = methods[0]
    base_p50 = Summary.of(baseline.samples_ms).p50_ms
    width = max(len(m.name) for m in methods) + 2
    print(f"\n{title}")
    print(f"{'method':<{width}}{'n':>5}{'p50 ms':>10}{'p90 ms':>10}{'mean ms':>10}   p50 vs {baseline.name}")
    sentences = []
    for method in methods:
        s = Summary.of(method.samples_ms)
        ratio = "baseline" if method is baseline else compare(s.p50_ms, base_p50)
        print(f"{method.name:<{width}}{s.n:>5}{s.p50_ms:>10.2f}{s.p90_ms:>10.2f}{s.mean_ms:>10.2f}   {ratio}")
        if method is not baseline:
            sentences.append(f"{method.name} is {ratio} than {baseline.name} (p50)")
    for label, samples in notes.items():
        if samples:
            s = Summary.of(samples)
            print(f"  ({label}: n={s.n}, p50 {s.p50_ms:.2f} ms, p90 {s.p90_ms:.2f} ms, mean {s.mean_ms:.2f} ms)")
    for sentence in sentences:
        print(f"  {sentence}")


def nproc() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def machine_info(client: docker.DockerClient, image: str) -> dict[str, Any]:
    server = client.version()
    return {
        "nproc": nproc(),
        "docker_server_version": server.get("Version"),
        "docker_api_version": server.get("ApiVersion"),
        "docker_sdk_version": docker.__version__,
        "python": platform.python_version(),
        "platform": platform.platform(),
        "swe_gym_version": swe_gym.__version__,
        "image": image,
        "image_id": client.images.get(image).short_id,
    }


def print_header(info: dict[str, Any], args: argparse.Namespace) -> None:
    print(f"nproc: {info['nproc']}")
    print(f"docker server version: {info['docker_server_version']} (API {info['docker_api_version']})")
    print(
        f"python {info['python']} on {info['platform']}; swe_gym {info['swe_gym_version']}; "
        f"docker SDK {info['docker_sdk_version']}"
    )
    print(f"image: {info['image']} ({info['image_id']})")
    print(
        f"steps: {args.steps} per method after {STEP_WARMUP} warm-up; resets: {args.resets} per method after "
        f"{RESET_WARMUP} warm-up; interleaved in up to {ROUNDS} rounds"
    )


def phase_json(phase: dict[str, Any]) -> dict[str, Any]:
    return {
        **{k: v for k, v in phase.items() if k not in ("methods", "notes")},
        "methods": {
            m.name: {"summary": vars(Summary.of(m.samples_ms)), "samples_ms": m.samples_ms} for m in phase["methods"]
        },
        "notes": {label: {"samples_ms": samples} for label, samples in phase["notes"].items()},
    }


def write_json(path: Path, info: dict[str, Any], phases: dict[str, dict[str, Any]], leftover: dict[str, int]) -> None:
    payload = {"machine": info, **{name: phase_json(phase) for name, phase in phases.items()}, "leftover": leftover}
    path.write_text(json.dumps(payload, indent=2) + "\n")
    print(f"raw numbers written to {path}")


# -- cleanup -------------------------------------------------------------------------------------------------------


def remove_baseline_containers(client: docker.DockerClient) -> None:
    """Remove `docker run` baseline containers left by an interrupted call (normally there are none)."""
    for container in client.containers.list(all=True, filters={"label": f"{BENCH_LABEL}={BENCH_TOKEN}"}):
        try:
            container.remove(force=True)
        except docker.errors.NotFound:
            pass


def count_leftovers(client: docker.DockerClient, wait_s: float = 10.0) -> dict[str, int]:
    """Count `swe_gym.managed=true` containers (all, and this process's run), waiting briefly for removals."""
    ours_filter = {"label": [f"{lbl.MANAGED}=true", f"{lbl.RUN_ID}={lbl.current_run_id()}"]}
    deadline = time.monotonic() + wait_s
    while True:
        ours = len(client.containers.list(all=True, filters=ours_filter))
        baseline = len(client.containers.list(all=True, filters={"label": f"{BENCH_LABEL}={BENCH_TOKEN}"}))
        if (ours == 0 and baseline == 0) or time.monotonic() > deadline:
            break
        time.sleep(0.25)
    managed = len(client.containers.list(all=True, filters={"label": f"{lbl.MANAGED}=true"}))
    return {"managed_total": managed, "managed_this_run": ours, "baseline_containers": baseline}


# -- main ----------------------------------------------------------------------------------------------------------


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument("--image", default=DEFAULT_IMAGE, help=f"task image (default: {DEFAULT_IMAGE})")
    parser.add_argument("--steps", type=int, default=300, help="counted `true` calls per step method (default: 300)")
    parser.add_argument("--resets", type=int, default=15, help="counted calls per reset method (default: 15)")
    parser.add_argument("--json", type=Path, metavar="OUT", help="also write every raw sample to this JSON file")
    args = parser.parse_args(argv)
    if args.steps < 1 or args.resets < 1:
        parser.error("--steps and --resets must be at least 1")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    client = docker.from_env()
    try:
        client.images.get(args.image)
    except docker.errors.ImageNotFound:
        print(f"image {args.image!r} is not on this Docker engine; build it first or pass --image", file=sys.stderr)
        return 2
    info = machine_info(client, args.image)
    print_header(info, args)
    phases: dict[str, dict[str, Any]] = {}
    env = gym.make("swe_gym/SWE-v0", provider="docker", image=args.image, max_steps=args.steps + 10 * STEP_WARMUP)
    try:
        phases["step"] = step_phase(env, client, args.image, args.steps)
        phases["reset"] = reset_phase(env, client, args.image, args.resets)
        phases["persistent"] = persistent_phase(env, args.image, args.steps)
        phases["tools"] = tool_phase(env, args.image, args.steps)
    finally:
        env.close()
        remove_baseline_containers(client)
    for title, phase in (
        (f"Step overhead of `true` (ms per call; {ENV_STEP} is the baseline)", phases["step"]),
        (f"Reset vs bare container start (ms per call; {ENV_RESET} is the baseline)", phases["reset"]),
        (
            f"Persistent shell vs a fresh bash -c per step (ms per call; {ENV_STEP} is the baseline)",
            phases["persistent"],
        ),
        (f"Tool calls vs a plain step of `true` (ms per call; {ENV_STEP} is the baseline)", phases["tools"]),
    ):
        print_table(title, phase["methods"], phase["notes"])
    leftover = count_leftovers(client)
    print(
        f"\nleftover containers labelled {lbl.MANAGED}=true: {leftover['managed_total']} "
        f"(from this run: {leftover['managed_this_run']}); leftover baseline containers: "
        f"{leftover['baseline_containers']}"
    )
    if args.json:
        write_json(args.json, info, phases, leftover)
    return 1 if leftover["managed_this_run"] or leftover["baseline_containers"] else 0


if __name__ == "__main__":
    sys.exit(main())
