"""Helpers shared by the benchmark scripts in this folder (not a benchmark itself).

Each script runs as ``python benchmarks/<name>.py``, so this folder is on ``sys.path`` and ``import bench_common``
works without a package. Everything here is small: summaries (p50/p90/mean), interleaved rounds, process counters
read from ``/proc/self``, the leftover-container count used by every script's final leak check, and JSON output.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import swe_gym
from swe_gym.sandbox import labels as lbl

DEFAULT_IMAGE = "swe-gym-test:bookworm"
#: Label on baseline containers a script starts itself, so a run killed halfway can still remove them.
BENCH_LABEL = "swe_gym.benchmark"


class BenchmarkError(RuntimeError):
    """A measured call failed, or the setup is not what the benchmark needs."""


@dataclass(frozen=True)
class Summary:
    n: int
    p50: float
    p90: float
    mean: float

    @classmethod
    def of(cls, samples: Sequence[float]) -> Summary:
        if not samples:
            return cls(0, float("nan"), float("nan"), float("nan"))
        p90 = statistics.quantiles(samples, n=10, method="inclusive")[8] if len(samples) > 1 else samples[0]
        return cls(len(samples), statistics.median(samples), p90, statistics.fmean(samples))


@dataclass
class Method:
    """A named measured call (raises `BenchmarkError` on failure), with optional untimed set-up and follow-up."""

    name: str
    call: Callable[[], None]
    before: Callable[[], None] | None = None
    after: Callable[[], None] | None = None
    samples_ms: list[float] = field(default_factory=list)

    def run_once(self) -> float:
        if self.before is not None:
            self.before()
        started = time.perf_counter()
        self.call()
        elapsed_ms = (time.perf_counter() - started) * 1000.0
        if self.after is not None:
            self.after()
        return elapsed_ms


def interleave(methods: Sequence[Method], rounds: int, *, warmup: int = 1) -> None:
    """``warmup`` uncounted calls of each method, then ``rounds`` rounds of one call each, order rotated per round."""
    for method in methods:
        for _ in range(warmup):
            method.run_once()
    for index in range(rounds):
        shift = index % len(methods)
        for method in [*methods[shift:], *methods[:shift]]:
            method.samples_ms.append(method.run_once())


def print_table(title: str, methods: Sequence[Method], baseline: Method, digits: int = 1) -> None:
    base = Summary.of(baseline.samples_ms).p50
    width = max(len(m.name) for m in methods) + 2
    print(f"\n{title}")
    print(f"{'method':<{width}}{'n':>5}{'p50 ms':>10}{'p90 ms':>10}{'mean ms':>10}   p50 / {baseline.name} p50")
    for m in methods:
        s = Summary.of(m.samples_ms)
        ratio = "baseline" if m is baseline else f"{s.p50 / base:.2f}x"
        print(f"{m.name:<{width}}{s.n:>5}{s.p50:>10.{digits}f}{s.p90:>10.{digits}f}{s.mean:>10.{digits}f}   {ratio}")


def describe(label: str, samples_ms: Sequence[float]) -> str:
    s = Summary.of(samples_ms)
    return f"{label}: n={s.n}, p50 {s.p50:.1f} ms, p90 {s.p90:.1f} ms, mean {s.mean:.1f} ms"


# -- process counters ----------------------------------------------------------------------------------------------


def rss_mib() -> float:
    """Resident set size of this process (VmRSS from /proc/self/status), MiB."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024.0
    return float("nan")


def thread_count() -> int:
    return len(os.listdir("/proc/self/task"))


def fd_count() -> int:
    return len(os.listdir("/proc/self/fd"))


def proc_sample() -> dict[str, float]:
    return {"rss_mib": rss_mib(), "threads": thread_count(), "fds": fd_count()}


# -- docker --------------------------------------------------------------------------------------------------------


def docker_ids(*labels: str) -> list[str]:
    """Ids of all containers (running or not) carrying every ``key=value`` in ``labels`` (Docker CLI)."""
    argv = ["docker", "ps", "-aq", "--no-trunc", *(a for label in labels for a in ("--filter", f"label={label}"))]
    out = subprocess.run(argv, capture_output=True, text=True, check=True).stdout
    return out.split()


def remove_containers(ids: Sequence[str]) -> None:
    if ids:
        subprocess.run(["docker", "rm", "-f", *ids], capture_output=True, check=False)


def leak_check(bench_token: str | None = None, wait_s: float = 10.0) -> dict[str, int]:
    """Count leftover ``swe_gym.managed=true`` containers (all, and this process's run) and baseline containers.

    Waits up to ``wait_s`` for removals still in flight, then removes baseline containers that remain.
    """
    ours_labels = (f"{lbl.MANAGED}=true", f"{lbl.RUN_ID}={lbl.current_run_id()}")
    deadline = time.monotonic() + wait_s
    while True:
        ours = docker_ids(*ours_labels)
        baseline = docker_ids(f"{BENCH_LABEL}={bench_token}") if bench_token else []
        if (not ours and not baseline) or time.monotonic() > deadline:
            break
        time.sleep(0.25)
    remove_containers(baseline)
    managed = len(docker_ids(f"{lbl.MANAGED}=true"))
    result = {"managed_total": managed, "managed_this_run": len(ours), "baseline_containers": len(baseline)}
    print(
        f"\nleak check: containers labelled {lbl.MANAGED}=true: {managed} (from this run: {len(ours)}); "
        f"leftover baseline containers: {len(baseline)}"
    )
    return result


def leaked(result: dict[str, int]) -> bool:
    return bool(result["managed_this_run"] or result["baseline_containers"])


def docker_server_version() -> str:
    argv = ["docker", "version", "--format", "{{.Server.Version}}"]
    return subprocess.run(argv, capture_output=True, text=True, check=False).stdout.strip() or "unknown"


def machine_info(image: str | None) -> dict[str, Any]:
    try:
        nproc = len(os.sched_getaffinity(0))
    except AttributeError:
        nproc = os.cpu_count() or 1
    info: dict[str, Any] = {
        "nproc": nproc,
        "python": platform.python_version(),
        "platform": platform.platform(),
        "swe_gym_version": swe_gym.__version__,
        "docker_server_version": docker_server_version(),
    }
    if image:
        info["image"] = image
    return info


def print_machine(info: dict[str, Any]) -> None:
    print(
        f"nproc {info['nproc']}; python {info['python']} on {info['platform']}; swe_gym {info['swe_gym_version']}; "
        f"docker server {info['docker_server_version']}" + (f"; image {info['image']}" if "image" in info else "")
    )


def image_present(image: str) -> bool:
    return subprocess.run(["docker", "image", "inspect", image], capture_output=True, check=False).returncode == 0


def write_json(path: Path | None, payload: dict[str, Any]) -> None:
    if path is None:
        return
    path.write_text(json.dumps(payload, indent=2, default=str) + "\n")
    print(f"raw numbers written to {path}")


def docker_parser(doc: str | None) -> argparse.ArgumentParser:
    """The options every Docker benchmark shares: --image and --json."""
    parser = argparse.ArgumentParser(description=(doc or "").split("\n\n", 1)[0])
    parser.add_argument("--image", default=DEFAULT_IMAGE, help=f"task image (default: {DEFAULT_IMAGE})")
    parser.add_argument("--json", type=Path, metavar="OUT", help="also write the raw numbers to this JSON file")
    return parser


def start_docker_benchmark(image: str) -> dict[str, Any] | None:
    """Machine info, printed; None (after saying why) when the image is not on the engine."""
    if not image_present(image):
        print(f"image {image!r} is not on this Docker engine; build it first or pass --image", file=sys.stderr)
        return None
    info = machine_info(image)
    print_machine(info)
    return info
