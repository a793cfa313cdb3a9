"""``swe-gym rollout``: run a policy on tasks and record the trajectories."""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from typing import Any, TextIO

import gymnasium as gym

from swe_gym.cli.args import add_instance_ids
from swe_gym.envs.registration import ENV_ID, register_envs
from swe_gym.errors import ConfigError
from swe_gym.policies import POLICY_NAMES, make_policy
from swe_gym.sandbox.labels import DEFAULT_RUN_ID
from swe_gym.sandbox.registry import get_provider
from swe_gym.wrappers import TrajectoryRecorder


class StatusLine:
    """A carriage-return progress line on stderr; when stderr is no terminal, only ``persist`` lines, one each."""

    def __init__(self, stream: TextIO | None = None) -> None:
        self._stream = stream
        self.text = ""

    @property
    def stream(self) -> TextIO:
        return self._stream or sys.stderr

    def show(self, text: str, *, persist: bool = False) -> None:
        if not self.stream.isatty():
            if persist:
                self.stream.write(text + "\n")
                self.stream.flush()
            return
        self.stream.write("\r" + text.ljust(len(self.text)))
        self.stream.flush()
        self.text = text

    def clear(self) -> None:
        if self.text:
            self.stream.write("\r" + " " * len(self.text) + "\r")
            self.stream.flush()

    def redraw(self) -> None:
        if self.text:
            self.stream.write(self.text)
            self.stream.flush()

    def finish(self) -> None:
        """End the line (keeping what it says) so that later output starts on a fresh one."""
        if self.text:
            self.stream.write("\n")
            self.stream.flush()
            self.text = ""


STATUS = StatusLine()


def add_parser(commands: Any) -> None:
    p = commands.add_parser("rollout", help="run a policy on tasks and record trajectories")
    p.add_argument("--tasks", default="bundled", help="'bundled' or a .json/.jsonl task file (default: bundled)")
    p.add_argument(
        "--provider", default="local", help="sandbox provider: local, docker, apptainer, opensandbox (default: local)"
    )
    p.add_argument("--image", default=None, help="image for tasks that name none (container providers)")
    p.add_argument("--policy", default="random", choices=POLICY_NAMES, help="(default: random)")
    p.add_argument(
        "--allow-unisolated",
        action="store_true",
        help="let a policy other than oracle run on local sandboxes without bubblewrap (it can touch the host)",
    )
    p.add_argument("--episodes", type=int, default=None, help="episodes on random tasks (default: one per task)")
    p.add_argument("--max-steps", type=int, default=30, help="actions per episode (default: 30)")
    p.add_argument("--step-timeout", type=float, default=60.0, help="seconds per action (default: 60)")
    p.add_argument("--seed", type=int, default=0, help="episode i is reset with seed+i (default: 0)")
    p.add_argument("--out", default="runs/trajectories.jsonl", help="JSONL file the trajectories are appended to")
    add_instance_ids(p, "only these tasks (repeatable)")
    llm = p.add_argument_group("--policy llm (an OpenAI-compatible chat endpoint; key from OPENAI_API_KEY)")
    llm.add_argument(
        "--llm-base-url", default=None, help="e.g. http://127.0.0.1:18791/v1 (default: $SWE_GYM_LLM_BASE_URL)"
    )
    llm.add_argument("--llm-model", default=None, help="model id (default: $SWE_GYM_LLM_MODEL)")
    llm.add_argument("--llm-temperature", type=float, default=0.0, help="(default: 0)")
    llm.add_argument("--llm-max-tokens", type=int, default=512, help="completion tokens per reply (default: 512)")
    llm.add_argument("--llm-context-chars", type=int, default=24000, help="history sent per request (default: 24000)")
    llm.add_argument("--llm-timeout", type=float, default=120.0, help="seconds per model request (default: 120)")
    llm.add_argument("--llm-max-retries", type=int, default=3, help="retries of a failed request (default: 3)")
    p.set_defaults(func=run)


def llm_config(args: argparse.Namespace) -> dict[str, Any]:
    """`LLMConfig` fields from the ``--llm-*`` flags; endpoint and model fall back to the environment."""
    config: dict[str, Any] = {
        "temperature": args.llm_temperature,
        "max_tokens": args.llm_max_tokens,
        "context_budget_chars": args.llm_context_chars,
        "request_timeout_s": args.llm_timeout,
        "max_retries": args.llm_max_retries,
    }
    if args.llm_base_url:
        config["base_url"] = args.llm_base_url
    if args.llm_model:
        config["model"] = args.llm_model
    return config


def run(args: argparse.Namespace) -> int:
    """Run the episodes; print a summary to stdout. Ctrl-C closes the env and returns 130."""
    if args.episodes is not None and args.episodes < 1:
        raise ConfigError(f"--episodes must be >= 1, got {args.episodes}")
    if args.provider == "local" and args.policy != "oracle" and not args.allow_unisolated:
        if not get_provider("local").isolated:
            raise ConfigError(
                f"refusing to run policy {args.policy!r} on unisolated local sandboxes (bubblewrap is not "
                "available): install bubblewrap, use --provider docker, or pass --allow-unisolated"
            )
    register_envs()
    started = time.perf_counter()
    env = gym.make(
        ENV_ID,
        tasks=args.tasks,
        provider=args.provider,
        image=args.image,
        max_steps=args.max_steps,
        step_timeout=args.step_timeout,
        instance_ids=args.instance_ids,
    )
    env = TrajectoryRecorder(env, args.out)
    results: list[dict[str, Any]] = []
    policy = None
    try:
        tasks = env.unwrapped.tasks
        policy = make_policy(args.policy, tasks=tasks, seed=args.seed, llm=llm_config(args))
        env.policy_stats = getattr(policy, "episode_stats", None)
        total = args.episodes if args.episodes is not None else len(tasks)
        for i in range(total):
            options = {"task_id": tasks[i].instance_id} if args.episodes is None else None
            resolved = sum(r["resolved"] for r in results)
            STATUS.show(f"episode {i + 1}/{total}  resolved {resolved}/{i}  resetting")
            observation, info = env.reset(seed=args.seed + i, options=options)
            policy.reset(observation, info)
            STATUS.show(f"episode {i + 1}/{total}  resolved {resolved}/{i}  {info['instance_id']}")
            result = _episode(env, policy, observation, info)
            results.append(result)
            outcome = "masked" if result["masked"] else "resolved" if result["resolved"] else "unresolved"
            tokens = f", {result['tokens']} tokens" if "tokens" in result else ""
            STATUS.show(
                f"episode {i + 1}/{total}  resolved {resolved + result['resolved']}/{i + 1}  "
                f"{info['instance_id']}: {outcome} in {result['steps']} steps{tokens}",
                persist=True,
            )
    except KeyboardInterrupt:
        STATUS.finish()
        print("interrupted: closing the environment (removing its sandboxes)", file=sys.stderr)
        env.close()
        return 130
    finally:
        STATUS.finish()
        env.close()
        if policy is not None and hasattr(policy, "close"):
            policy.close()
    _summary(results, wall_s=time.perf_counter() - started, out=args.out)
    return 0


def _episode(env: gym.Env, policy: Any, observation: str, info: dict[str, Any]) -> dict[str, Any]:
    reset_s = float(info.get("reset_s") or 0.0)
    steps = 0
    while True:
        observation, _, terminated, truncated, info = env.step(policy.act(observation, info))
        steps += 1
        if terminated or truncated:
            result = {
                "resolved": bool(info.get("resolved")),
                "masked": bool(info.get("masked")),
                "steps": steps,
                "reset_s": reset_s,
                "grade_s": float(info.get("grade_s") or 0.0),
            }
            if hasattr(policy, "episode_stats"):  # a model-backed policy: its tokens and time
                stats = policy.episode_stats()
                result.update(tokens=stats["total_tokens"], model_s=stats["latency_total_s"])
            return result


def _summary(results: list[dict[str, Any]], *, wall_s: float, out: str) -> None:
    n = len(results)
    resolved = sum(r["resolved"] for r in results)

    def mean(key: str) -> float:
        return statistics.fmean(r[key] for r in results) if results else 0.0

    rows = [
        ("episodes", f"{n}"),
        ("resolved", f"{resolved} ({resolved / n:.1%})" if n else "0"),
        ("masked", f"{sum(r['masked'] for r in results)}"),
        ("mean steps", f"{mean('steps'):.1f}"),
        ("mean reset s", f"{mean('reset_s'):.2f}"),
        ("mean grade s", f"{mean('grade_s'):.2f}"),
    ]
    if results and all("tokens" in r for r in results):
        rows += [("mean tokens", f"{mean('tokens'):.0f}"), ("mean model s", f"{mean('model_s'):.2f}")]
    rows += [("wall time s", f"{wall_s:.1f}"), ("trajectories", out), ("run id", DEFAULT_RUN_ID)]
    for name, value in rows:
        print(f"{name:<13} {value}")
