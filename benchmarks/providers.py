"""Every sandbox provider against its own runtime's native way of doing the same thing, side by side in one run.

What is compared
----------------
For each provider that is available (``--providers``, default ``local docker apptainer opensandbox``; one that is
not is skipped with the reason printed), wall times measured with ``time.perf_counter``:

* Step: ``SWEEnv.step("true")`` through ``gymnasium.make("swe_gym/SWE-v0", provider=CONFIG, image=IMG)``, wrappers
  included, against the runtime's own way to run one command in a sandbox that is already running:

  - local: a bare ``bash -c true`` host subprocess (no sandbox at all: the floor);
  - docker: ``docker exec <cid> true`` (CLI) in the env's own container;
  - apptainer: ``apptainer exec instance://NAME true`` in an instance started from the env's own SIF with
    ``--containall --cleanenv --net --network none`` (swe_gym's sandbox is a long-lived ``apptainer exec``, not an
    instance, so the instance is the native way to keep a container running and run commands in it);
  - opensandbox: the SDK's ``sandbox.commands.run("true")`` on the env's own remote sandbox, on swe_gym's event loop.

* Create: ``Sandbox.create(SandboxSpec(image=IMG), CONFIG)`` + ``close()`` against the runtime's bare start, run
  ``true`` and remove: ``bwrap --ro-bind / / --unshare-pid true`` (local), ``docker run --rm --network none IMG true``,
  ``apptainer exec --containall --net --network none SIF true``, and the OpenSandbox SDK's own ``Sandbox.create(IMG,
  connection_config=...)`` (default settings, its health check included) + ``kill()``.
* Reset: ``env.reset(seed=0)`` on a cold env (``pool_size=0``): a new sandbox, the task's repository uploaded, a git
  snapshot taken, the previous sandbox released in the background. No native counterpart; shown for scale.

Why it is fair
--------------
* Same machine, process, image (apptainer's SIF is the one swe_gym built from it) and, for steps, the same sandbox as
  the env's (apptainer's instance excepted, see above: same SIF and isolation flags).
* Each method is warmed up first (calls not counted: one create each, five steps each; the env's first reset, which
  may build apptainer's SIF, comes before any of them and is not counted either), then ours and the native method
  alternate in rounds whose order rotates, so noise and drift hit both alike. Every counted call is checked to have
  succeeded, so a failing method cannot look fast.
* The baselines do less: they run ``true`` directly where ``SWEEnv.step`` spawns ``bash -c true`` behind the
  wrappers, the hop onto swe_gym's event loop and the runner protocol (on opensandbox a one-shot runner per command);
  the native creates start no runner, ping none and make no workdir. Where ``--no-privs`` is needed (root without
  CAP_SYS_RESOURCE) both sides of apptainer get it. The OpenSandbox SDK create polls its health check every 200 ms
  (its default) where swe_gym polls every 50 ms, and with its default retry policy a failed health ping (execd not
  up yet) is retried after 0.5 s: both are in its time, and the retries are counted and printed. Its sandbox only
  carries a metadata tag, so a leaked one can be found.

Run: ``python benchmarks/providers.py [--providers NAME ...] [--steps N] [--creates N] [--resets N] [--image IMG]
[--json OUT]`` (about 2-3 minutes with all four). Envs, sandboxes and the apptainer instance are closed in
``finally``; the run ends with a leak check (containers of this run labelled ``swe_gym.managed=true`` or with this
run's baseline label, this script's apptainer instances, this run's local/apptainer sandbox homes and checkpoints,
its docker checkpoint images): exit 1 on a leak.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import subprocess
import sys
import time
import traceback
import urllib.request
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import gymnasium as gym
from bench_common import (
    BENCH_LABEL,
    BenchmarkError,
    Method,
    Summary,
    docker_parser,
    image_present,
    interleave,
    leak_check,
    machine_info,
    print_machine,
    print_table,
    write_json,
)

import swe_gym  # noqa: F401  (registers swe_gym/SWE-v0)
from swe_gym.errors import ProviderUnavailableError
from swe_gym.sandbox import Sandbox, SandboxSpec, current_run_id, get_provider
from swe_gym.sandbox.checkpoints import CHECKPOINT_DIR
from swe_gym.sandbox.loop import run_sync
from swe_gym.sandbox.providers.local import bwrap_works
from swe_gym.sandbox.providers.sif import needs_no_privs

PROVIDERS = ("local", "docker", "apptainer", "opensandbox")
#: In CI the OpenSandbox server has no egress sidecar, which a deny-all network policy needs.
CONFIGS: dict[str, dict[str, Any]] = {
    "local": {"type": "local"},
    "docker": {"type": "docker"},
    "apptainer": {"type": "apptainer"},
    "opensandbox": {"type": "opensandbox", "network_policy": "server-default"},
}
#: Written by .ci/provision_opensandbox.sh; the provider reads it through SWE_GYM_OPENSANDBOX_ENV_FILE.
OPENSANDBOX_ENV_FILE = Path("/etc/swe-gym/opensandbox.env")
STEP_WARMUP = 5
TOKEN = uuid.uuid4().hex[:8]
BENCH_TOKEN = f"providers-{TOKEN}"
INSTANCE_NAME = f"swe-gym-bench-{TOKEN}"

Call = Callable[[], None]


@dataclass
class Result:
    """One provider's measured methods (ours first in each pair, then the native baseline)."""

    step: list[Method] = field(default_factory=list)
    create: list[Method] = field(default_factory=list)
    reset: Method | None = None
    notes: dict[str, Any] = field(default_factory=dict)


class RetryCounter(logging.Filter):
    """Counts, and keeps off stderr, the OpenSandbox SDK's ``retrying ...`` warnings (its default retry policy)."""

    def __init__(self) -> None:
        super().__init__()
        self.count = 0

    def filter(self, record: logging.LogRecord) -> bool:
        if record.getMessage().startswith("retrying "):
            self.count += 1
            return False
        return True


SDK_RETRIES = RetryCounter()
logging.getLogger("opensandbox.transport._async_retry").addFilter(SDK_RETRIES)


# -- setup ---------------------------------------------------------------------------------------------------------


def problem(name: str, image: str) -> str | None:
    """Why ``name`` cannot be measured here, or None."""
    if name == "local":
        return None if bwrap_works() else "bubblewrap (bwrap) is not available, so local sandboxes are not isolated"
    if not image_present(image):
        return f"no Docker engine, or image {image!r} is not on it (the {name} sandboxes run it)"
    try:
        provider: Any = get_provider(CONFIGS[name])
        if name == "apptainer":
            provider.binary  # noqa: B018 - finds the runtime or says why not
        elif name == "opensandbox":
            provider.connection()  # says why not when no server is configured
            url = f"{provider.config.protocol}://{provider.config.domain}/health"
            urllib.request.urlopen(url, timeout=5).read()
    except ProviderUnavailableError as exc:
        return str(exc)
    except OSError as exc:
        return f"the OpenSandbox server does not answer ({exc})"
    return None


def version_of(argv: Sequence[str]) -> str:
    if shutil.which(argv[0]) is None:
        return "absent"
    out = subprocess.run(argv, capture_output=True, text=True, check=False).stdout.strip()
    return out.splitlines()[0] if out else "unknown"


def runtime_versions() -> dict[str, str]:
    try:
        from importlib.metadata import version

        sdk = version("opensandbox")
    except Exception:
        sdk = "absent"
    return {
        "bwrap": version_of(["bwrap", "--version"]),
        "apptainer": version_of(["apptainer", "--version"]),
        "opensandbox_sdk": sdk,
    }


# -- calls ---------------------------------------------------------------------------------------------------------


def command_call(argv: Sequence[str]) -> Call:
    """Run ``argv`` as a subprocess (no stdin, output captured); `BenchmarkError` unless it exits 0."""
    argv = list(argv)

    def call() -> None:
        result = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, check=False)
        if result.returncode != 0:
            output = (result.stderr or result.stdout).decode(errors="replace").strip()
            raise BenchmarkError(f"{' '.join(argv[:3])} ... exited with {result.returncode}: {output[-400:]}")

    return call


def env_step_call(env: gym.Env[str, str]) -> Call:
    def call() -> None:
        _, _, terminated, truncated, info = env.step("true")
        if terminated or truncated or info["exit_code"] != 0:
            raise BenchmarkError(f"SWEEnv.step('true') failed or ended the episode: {info}")

    return call


def env_reset_call(env: gym.Env[str, str]) -> Call:
    def call() -> None:
        env.reset(seed=0)

    return call


def sandbox_create_call(config: dict[str, Any], image: str | None) -> Call:
    def call() -> None:
        Sandbox.create(SandboxSpec(image=image), config).close()

    return call


def no_privs() -> list[str]:
    return ["--no-privs"] if needs_no_privs() else []


def opensandbox_exec_call(remote: Any) -> Call:
    def call() -> None:
        execution = run_sync(remote.commands.run("true"))
        if execution.error is not None or execution.exit_code not in (0, None):
            raise BenchmarkError(f"opensandbox commands.run('true') failed: {execution.error or execution.exit_code}")

    return call


def opensandbox_create_call(provider: Any, image: str) -> Call:
    from opensandbox import Sandbox as SDKSandbox
    from opensandbox.config import ConnectionConfig

    settings = provider.config

    async def create_kill() -> None:
        connection = ConnectionConfig(domain=settings.domain, api_key=settings.api_key, protocol=settings.protocol)
        remote = await SDKSandbox.create(image, connection_config=connection, metadata={BENCH_LABEL: BENCH_TOKEN})
        try:
            await remote.kill()
        finally:
            await remote.close()

    return lambda: run_sync(create_kill())


# -- native methods ------------------------------------------------------------------------------------------------


@contextmanager
def native_step(name: str, env: gym.Env[str, str]) -> Iterator[Method]:
    """The runtime's own way to run ``true`` in the env's running sandbox (apptainer: an instance of its SIF)."""
    backend: Any = env.unwrapped.sandbox.backend  # type: ignore[attr-defined]
    if name == "local":
        yield Method("bash -c true (host)", command_call(["bash", "-c", "true"]))
    elif name == "docker":
        yield Method("docker exec CLI", command_call(["docker", "exec", backend.container_id, "true"]))
    elif name == "opensandbox":
        yield Method("SDK commands.run", opensandbox_exec_call(backend.remote))
    else:
        sif = json.loads((backend.home / "meta.json").read_text())["sif"]
        binary = get_provider(CONFIGS[name]).binary  # type: ignore[attr-defined]
        isolation = ["--containall", "--cleanenv", "--net", "--network", "none"]
        command_call([binary, "instance", "start", *no_privs(), *isolation, sif, INSTANCE_NAME])()
        try:
            argv = [binary, "exec", *no_privs(), f"instance://{INSTANCE_NAME}", "true"]
            yield Method("apptainer exec instance://", command_call(argv))
        finally:
            stop_instances([INSTANCE_NAME])


def native_create(name: str, image: str) -> Method:
    provider: Any = get_provider(CONFIGS[name])
    if name == "local":
        return Method("bwrap true", command_call(["bwrap", "--ro-bind", "/", "/", "--unshare-pid", "true"]))
    if name == "docker":
        label = f"{BENCH_LABEL}={BENCH_TOKEN}"
        argv = ["docker", "run", "--rm", "--network", "none", "--label", label, image, "true"]
        return Method("docker run --rm", command_call(argv))
    if name == "opensandbox":
        return Method("SDK Sandbox.create+kill", opensandbox_create_call(provider, image))
    sif = str(run_sync(provider.sifs.get(image)))  # built by the warm-up create if it was missing
    argv = [provider.binary, "exec", *no_privs(), "--containall", "--net", "--network", "none", sif, "true"]
    return Method("apptainer exec SIF", command_call(argv))


# -- phases --------------------------------------------------------------------------------------------------------


def measure(name: str, image: str | None, args: Any) -> Result:
    config = CONFIGS[name]
    result = Result()
    env = gym.make("swe_gym/SWE-v0", provider=config, image=image, max_steps=args.steps + 2 * STEP_WARMUP, pool_size=0)
    try:
        env.reset(seed=0)  # the first sandbox (apptainer: may build the SIF); also the resets' warm-up
        with native_step(name, env) as native:
            result.step = [Method("SWEEnv.step", env_step_call(env)), native]
            interleave(result.step, args.steps, warmup=STEP_WARMUP)
        result.reset = Method("SWEEnv.reset (cold)", env_reset_call(env))
        interleave([result.reset], args.resets, warmup=0)  # the first reset above was its warm-up
    finally:
        env.close()
    ours = Method("Sandbox.create+close", sandbox_create_call(config, image))
    result.create = [ours, native_create(name, image or "")]
    retries_before = SDK_RETRIES.count
    interleave(result.create, args.creates, warmup=1)
    if name == "opensandbox":
        result.notes["sdk_retries_during_creates"] = SDK_RETRIES.count - retries_before
    return result


# -- leak check ----------------------------------------------------------------------------------------------------


def apptainer_instances() -> list[str]:
    if shutil.which("apptainer") is None:
        return []
    out = subprocess.run(["apptainer", "instance", "list", "--json"], capture_output=True, text=True, check=False)
    try:
        return [entry["instance"] for entry in json.loads(out.stdout or "{}").get("instances", [])]
    except (ValueError, KeyError, TypeError):
        return []


def stop_instances(names: Sequence[str]) -> None:
    for instance in names:
        subprocess.run(["apptainer", "instance", "stop", instance], capture_output=True, check=False)


def run_homes() -> list[str]:
    """This run's sandbox homes under the local and apptainer providers' roots (each holds a ``meta.json``)."""
    found = []
    for name in ("local", "apptainer"):
        root: Path = get_provider(name).config.root  # type: ignore[attr-defined]
        for meta in root.glob("*/meta.json") if root.is_dir() else []:
            try:
                if json.loads(meta.read_text()).get("labels", {}).get("swe_gym.run_id") == current_run_id():
                    found.append(f"{name}:{meta.parent.name}")
            except (OSError, ValueError):
                continue
    return found


def run_checkpoints(docker_checked: bool) -> list[str]:
    """This run's checkpoints: directories under the local and apptainer roots, docker checkpoint images."""
    found = []
    for name in ("local", "apptainer"):
        saved: Path = get_provider(name).config.root / CHECKPOINT_DIR  # type: ignore[attr-defined]
        for meta in saved.glob("*/meta.json") if saved.is_dir() else []:
            try:
                if json.loads(meta.read_text()).get("labels", {}).get("swe_gym.run_id") == current_run_id():
                    found.append(f"{name}:{meta.parent.name}")
            except (OSError, ValueError):
                continue
    if docker_checked:
        argv = ["docker", "images", "-q", "--filter", f"label=swe_gym.run_id={current_run_id()}"]
        argv += ["--filter", "label=swe_gym.checkpoint"]
        found += [f"docker:{i}" for i in subprocess.run(argv, capture_output=True, text=True).stdout.split()]
    return found


def full_leak_check(docker_checked: bool) -> dict[str, int]:
    result = leak_check(BENCH_TOKEN) if docker_checked else {}
    instances = [i for i in apptainer_instances() if i == INSTANCE_NAME]
    stop_instances(instances)
    deadline = time.monotonic() + 10.0
    while (homes := run_homes()) and time.monotonic() < deadline:
        time.sleep(0.25)
    saved = run_checkpoints(docker_checked)
    print(
        f"leftover apptainer instances of this script: {len(instances)}; sandbox homes of this run: {len(homes)}; "
        f"checkpoints of this run: {len(saved)}"
    )
    return {**result, "apptainer_instances": len(instances), "sandbox_homes": len(homes), "checkpoints": len(saved)}


# -- reporting -----------------------------------------------------------------------------------------------------


def p50(method: Method | None, scale: float = 1.0) -> float:
    return Summary.of(method.samples_ms).p50 * scale if method else float("nan")


def print_summary(results: dict[str, Result]) -> None:
    print("\nSummary (p50; ratio = SWEEnv.step / the runtime's native step)")
    head = ("provider", "step ms", "native step ms", "ratio", "create s", "native create s", "reset s")
    print(f"{head[0]:<13}" + "".join(f"{h:>16}" for h in head[1:]))
    for name, r in results.items():
        step, native_step_ = (p50(m) for m in r.step)
        create, native_create_ = (p50(m, 1e-3) for m in r.create)
        cells = [f"{step:.1f}", f"{native_step_:.1f}", f"{step / native_step_:.2f}x"]
        cells += [f"{create:.3f}", f"{native_create_:.3f}", f"{p50(r.reset, 1e-3):.3f}"]
        print(f"{name:<13}" + "".join(f"{c:>16}" for c in cells))


def methods_json(methods: Sequence[Method]) -> dict[str, Any]:
    return {m.name: {"summary": vars(Summary.of(m.samples_ms)), "samples_ms": m.samples_ms} for m in methods}


def results_json(results: dict[str, Result]) -> dict[str, Any]:
    return {
        name: {
            "config": CONFIGS[name],
            "step": methods_json(r.step),
            "create": methods_json(r.create),
            "reset": methods_json([r.reset] if r.reset else []),
            "notes": r.notes,
        }
        for name, r in results.items()
    }


# -- main ----------------------------------------------------------------------------------------------------------


def parse_args(argv: Sequence[str] | None = None) -> Any:
    parser = docker_parser(__doc__)
    parser.add_argument("--providers", nargs="+", choices=PROVIDERS, default=list(PROVIDERS), help="default: all")
    parser.add_argument("--steps", type=int, default=100, help="counted steps per step method (default: 100)")
    parser.add_argument("--creates", type=int, default=10, help="counted calls per create method (default: 10)")
    parser.add_argument("--resets", type=int, default=5, help="counted cold resets per provider (default: 5)")
    args = parser.parse_args(argv)
    if min(args.steps, args.creates, args.resets) < 1:
        parser.error("--steps, --creates and --resets must be at least 1")
    return args


def finish(
    args: Any,
    info: dict[str, Any],
    payload: dict[str, Any],
    skipped: dict[str, str],
    failed: dict[str, str],
    *,
    measured: bool,
    leftover: Callable[[], dict[str, int]] | None = None,
) -> int:
    """The end of a per-provider benchmark: the skipped and failed providers listed, the leak check (plus the
    script's own ``leftover`` counts), the JSON written (``payload`` beside the machine, arguments, skipped, failed
    and leftovers). The exit status: 2 where nothing could be measured, 1 on a failure or a leak, else 0."""
    for name, reason in {
        **{n: f"skipped: {r}" for n, r in skipped.items()},
        **{n: f"FAILED: {r}" for n, r in failed.items()},
    }.items():
        print(f"{name:<16}{reason}")
    found = full_leak_check(docker_checked=info["docker_server_version"] != "unknown")
    found.update(leftover() if leftover is not None else {})
    write_json(
        args.json,
        {
            "machine": info,
            "args": {k: str(v) for k, v in vars(args).items()},
            **payload,
            "skipped": skipped,
            "failed": failed,
            "leftover": found,
        },
    )
    if not measured and not failed:
        return 2  # nothing could be measured here
    return 1 if failed or any(n for key, n in found.items() if key != "managed_total") else 0


def measurable(names: Sequence[str], image: str, skipped: dict[str, str]) -> Iterator[str]:
    """The providers of ``names`` that can be measured here, each announced; the others go to ``skipped``."""
    for name in names:
        reason = problem(name, image)
        if reason is not None:
            skipped[name] = reason
            print(f"\n{name}: skipped ({reason})")
            continue
        print(f"\n== {name} ({json.dumps(CONFIGS[name])})", flush=True)
        yield name


def start(image: str) -> dict[str, Any]:
    """The machine and runtime versions, printed; the OpenSandbox settings CI wrote, if any, put in use."""
    if OPENSANDBOX_ENV_FILE.is_file():
        os.environ.setdefault("SWE_GYM_OPENSANDBOX_ENV_FILE", str(OPENSANDBOX_ENV_FILE))
    info = {**machine_info(image), **runtime_versions()}
    print_machine(info)
    return info


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    info = start(args.image)
    print(f"bwrap {info['bwrap']}; {info['apptainer']}; opensandbox SDK {info['opensandbox_sdk']}")
    print(
        f"per provider: {args.steps} steps per method after {STEP_WARMUP} warm-up; {args.creates} creates per method "
        f"after 1 warm-up; {args.resets} cold resets after 1 warm-up (the env's first reset, which may build a SIF); "
        "ours and native interleaved, order rotated each round"
    )
    results: dict[str, Result] = {}
    skipped: dict[str, str] = {}
    failed: dict[str, str] = {}
    for name in measurable(args.providers, args.image, skipped):
        started = time.perf_counter()
        try:
            results[name] = result = measure(name, None if name == "local" else args.image, args)
        except Exception as exc:  # one provider's failure must not hide the others' numbers
            failed[name] = f"{type(exc).__name__}: {exc}"
            traceback.print_exc()
            continue
        print_table(f"{name}: step `true` (ms per call)", result.step, result.step[1])
        print_table(f"{name}: create + remove (ms per call)", result.create, result.create[1])
        print(f"  {result.reset.name}: p50 {p50(result.reset):.1f} ms" if result.reset else "")
        if "sdk_retries_during_creates" in result.notes:
            print(
                f"  the SDK retried {result.notes['sdk_retries_during_creates']} requests over {args.creates + 1} "
                "SDK creates (default retry policy, first backoff 0.5 s, counted in its time; swe_gym: retries off)"
            )
        print(f"  ({name} took {time.perf_counter() - started:.0f} s)")
    if results:
        print_summary(results)
    return finish(args, info, {"providers": results_json(results)}, skipped, failed, measured=bool(results))


if __name__ == "__main__":
    sys.exit(main())
