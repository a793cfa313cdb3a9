"""``swe-gym rollout``: run a policy on tasks and record the trajectories."""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import gymnasium as gym

from swe_gym.cli.model_flags import add_model_flags, model_values
from swe_gym.envs.options import EnvOptions, TaskSelection
from swe_gym.envs.registration import ENV_ID, register_envs
from swe_gym.errors import ConfigError
from swe_gym.policies import POLICY_NAMES, make_policy
from swe_gym.policies.llm import LLMConfig
from swe_gym.progress import Progress, close_all
from swe_gym.sandbox.labels import current_run_id
from swe_gym.sandbox.registry import get_provider
from swe_gym.wrappers import TrajectoryRecorder


def add_parser(commands: Any) -> None:
    p = commands.add_parser(
        "rollout",
        help="run a policy on tasks and record trajectories",
        description="Run a policy on tasks and record the trajectories (one JSON line per episode, naming "
        "its run id and policy). --out must not already hold trajectories unless --append is given. The task "
        "and env flags are the fields of swe_gym.envs.options (TaskSelection, EnvOptions), with their defaults.",
    )
    p.add_argument(
        "--provider", default="local", help="sandbox provider: local, docker, apptainer, opensandbox (default: local)"
    )
    p.add_argument("--policy", default="random", choices=POLICY_NAMES, help="(default: random)")
    p.add_argument(
        "--allow-unisolated",
        action="store_true",
        help="let a policy other than oracle run on local sandboxes without bubblewrap (it can touch the host)",
    )
    p.add_argument("--episodes", type=int, default=None, help="episodes on random tasks (default: one per task)")
    p.add_argument("--seed", type=int, default=0, help="episode i is reset with seed+i (default: 0)")
    p.add_argument(
        "--out",
        default="runs/trajectories.jsonl",
        help="JSONL file the trajectories go to, one line per episode, each naming its run id and policy "
        "(default: runs/trajectories.jsonl). A file that already holds trajectories is refused unless --append",
    )
    p.add_argument(
        "--append",
        action="store_true",
        help="add this run's trajectories to an existing --out file (a report tells the runs apart by run id)",
    )
    add_model_flags(p.add_argument_group("tasks"), TaskSelection)
    add_model_flags(p.add_argument_group("episodes"), EnvOptions, exclude=["sandbox"])
    llm = p.add_argument_group("--policy llm (an OpenAI-compatible chat endpoint; key from OPENAI_API_KEY)")
    templates = ["system_template", "instance_template", "tool_system_template", "tool_instance_template"]
    add_model_flags(llm, LLMConfig, prefix="llm-", exclude=["api_key", *templates])
    p.set_defaults(func=run)


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
    out = Path(args.out)
    if not args.append and out.is_file() and out.stat().st_size:
        raise ConfigError(
            f"--out {out} already holds trajectories: pass --append to add this run's to them, or another --out"
        )
    register_envs()
    started = time.perf_counter()
    env = gym.make(
        ENV_ID, provider=args.provider, **model_values(args, TaskSelection), **model_values(args, EnvOptions)
    )
    env = TrajectoryRecorder(env, args.out)
    results: list[dict[str, Any]] = []
    policy = None
    try:
        tasks = env.unwrapped.tasks
        policy = make_policy(args.policy, tasks=tasks, seed=args.seed, llm=model_values(args, LLMConfig, prefix="llm-"))
        env.policy = policy
        env.policy_stats = getattr(policy, "episode_stats", None)
        env.policy_tokens = getattr(policy, "episode_tokens", None)
        total = args.episodes if args.episodes is not None else len(tasks)
        with Progress(total, "episodes", "episode") as bar:
            for i in range(total):
                options = {"task_id": tasks[i].instance_id} if args.episodes is None else None
                resolved = sum(r["resolved"] for r in results)
                bar.status(f"resolved {resolved}/{i}  resetting")
                observation, info = env.reset(seed=args.seed + i, options=options)
                policy.reset(observation, info)
                bar.status(f"resolved {resolved}/{i}  {info['instance_id']}")
                result = _episode(env, policy, observation, info)
                results.append(result)
                outcome = "masked" if result["masked"] else "resolved" if result["resolved"] else "unresolved"
                tokens = f", {result['tokens']} tokens" if "tokens" in result else ""
                bar.advance(
                    postfix=f"resolved {resolved + result['resolved']}/{i + 1}",
                    line=f"episode {i + 1}/{total}  resolved {resolved + result['resolved']}/{i + 1}  "
                    f"{info['instance_id']}: {outcome} in {result['steps']} steps{tokens}",
                )
    except KeyboardInterrupt:
        close_all()
        print("interrupted: closing the environment (removing its sandboxes)", file=sys.stderr)
        env.close()
        return 130
    finally:
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
    rows += [("wall time s", f"{wall_s:.1f}"), ("trajectories", out), ("run id", current_run_id())]
    for name, value in rows:
        print(f"{name:<13} {value}")
