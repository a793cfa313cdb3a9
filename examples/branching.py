"""Best-of-N from a shared prefix: play a few steps, fork the episode N ways, finish each branch, keep the best.

    python examples/branching.py --branches 4 --prefix-steps 3 --max-steps 12 --seed 0
    python examples/branching.py --policy llm --temperature 0.7    # after: set -a; . /etc/swe-gym/llm.env; set +a
    python examples/branching.py --oracle-branch                   # the last branch applies the gold patch

The prefix runs once; `SWEEnv.fork` then copies the episode (its sandbox's file
system, step count, base snapshot, last observation) into N envs, each graded on
its own, so the N branches pay for one reset instead of N and start from the same
state. The forks are made in the env's warm pool (``pool_size=N``): the episode's
changes replayed in started sandboxes. At the end it prints the time the fork took
against N fresh resets replaying the prefix. Each branch gets its own copy of the policy (a random policy reseeded per
branch; the LLM policy keeps the prefix's conversation and samples with
``--temperature``). ``--oracle-branch`` makes the last branch apply the task's gold
patch (a cheating baseline that shows a resolved branch). For docker pass ``--image``.
"""

from __future__ import annotations

import argparse
import copy
import random
import sys
import time
from typing import Any

import gymnasium as gym

import swe_gym  # noqa: F401  (registers swe_gym/SWE-v0)
from swe_gym import SUBMIT
from swe_gym.errors import SWEGymError
from swe_gym.policies import OraclePolicy, RandomPolicy


def make_policy(args: argparse.Namespace) -> Any:
    if args.policy == "random":
        return RandomPolicy(seed=args.seed)
    from swe_gym.policies import LLMConfig, LLMPolicy

    overrides = {"base_url": args.base_url, "model": args.model}
    return LLMPolicy(LLMConfig(**{k: v for k, v in overrides.items() if v}, temperature=args.temperature))


def branch_policy(policy: Any, branch: int, seed: int) -> Any:
    """A copy of ``policy`` in its current state (conversation, learned files), diverging from the others."""
    clone = copy.copy(policy)  # shares what is stateless (the LLM client), copies what the episode changed
    for name, value in vars(policy).items():
        if isinstance(value, list | dict):
            setattr(clone, name, copy.deepcopy(value))
    if isinstance(clone, RandomPolicy):
        clone.rng = random.Random(seed * 1000 + branch)
    return clone


def play(env: Any, policy: Any, observation: str, info: dict[str, Any]) -> tuple[int, float, dict[str, Any]]:
    """Act until the episode ends: (steps taken, reward, last info)."""
    steps, reward, done = 0, 0.0, False
    while not done:
        observation, reward, terminated, truncated, info = env.step(policy.act(observation, info))
        steps, done = steps + 1, terminated or truncated
    return steps, float(reward), info


def fresh_starts(make: dict[str, Any], task_id: str, prefix: list[str], n: int) -> float:
    """Seconds to reach the branch point without forking: ``n`` fresh resets of the task, each replaying ``prefix``
    (the same commands; a policy would also have to sample them again)."""
    env = gym.make("swe_gym/SWE-v0", pool_size=0, **make)
    try:
        started = time.perf_counter()
        for _ in range(n):
            env.reset(options={"task_id": task_id})
            for action in prefix:
                env.step(action)
        return time.perf_counter() - started
    finally:
        env.close()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--branches", type=int, default=4)
    parser.add_argument("--prefix-steps", type=int, default=3)
    parser.add_argument("--max-steps", type=int, default=12)
    parser.add_argument("--policy", choices=["random", "llm"], default="random")
    parser.add_argument("--oracle-branch", action="store_true", help="the last branch applies the gold patch")
    parser.add_argument("--provider", default="local")
    parser.add_argument("--image", default=None)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--base-url", default=None, help="LLM endpoint (default: $SWE_GYM_LLM_BASE_URL)")
    parser.add_argument("--model", default=None, help="LLM model (default: $SWE_GYM_LLM_MODEL)")
    parser.add_argument("--temperature", type=float, default=0.7, help="LLM sampling temperature")
    args = parser.parse_args()
    if args.branches < 1 or not 0 <= args.prefix_steps < args.max_steps:
        parser.error("need --branches >= 1 and 0 <= --prefix-steps < --max-steps")

    make = {"provider": args.provider, "image": args.image, "max_steps": args.max_steps}
    env = gym.make("swe_gym/SWE-v0", pool_size=args.branches, **make)  # the forks are made in its pool's sandboxes
    branches: list[Any] = []
    prefix: list[str] = []
    try:
        policy = make_policy(args)
        observation, info = env.reset(seed=args.seed)
        policy.reset(observation, info)
        print(f"task {info['instance_id']} on {info['provider']}; prefix of {args.prefix_steps} steps")
        for _ in range(args.prefix_steps):
            action = policy.act(observation, info)
            while action.strip() == SUBMIT and isinstance(policy, RandomPolicy):  # the prefix never ends the episode
                action = policy.act(observation, info)
            observation, _, terminated, truncated, info = env.step(action)
            prefix.append(action)
            print(f"  prefix: {action.splitlines()[0][:70]!r} -> exit {info['exit_code']}")
            if terminated or truncated:
                print("the prefix ended the episode; nothing to branch")
                return 1
        env.unwrapped.host.call(env.unwrapped.host.settings.pool.wait_ready())  # a trainer's pool is warm by now
        started = time.perf_counter()
        branches = env.unwrapped.fork(args.branches)
        fork_s = time.perf_counter() - started
        print(f"forked {args.branches} branches in {fork_s:.3f} s")
        results = []
        for b, branch in enumerate(branches):
            oracle = args.oracle_branch and b == len(branches) - 1
            mine = OraclePolicy(branch.tasks) if oracle else branch_policy(policy, b, args.seed)
            if oracle:
                mine.reset(observation, {"instance_id": branch.task.instance_id})
            steps, reward, last = play(branch, mine, observation, info)
            results.append(reward)
            name = "oracle" if oracle else args.policy
            print(
                f"  branch {b} ({name:<6}) steps={args.prefix_steps + steps:<3} reward={reward:.1f} "
                f"resolved={last.get('resolved')} masked={last.get('masked')}"
            )
        best = max(range(len(results)), key=results.__getitem__)
        print(f"best of {len(results)}: branch {best} with reward {results[best]:.1f}")
        fresh_s = fresh_starts(make, env.unwrapped.task.instance_id, prefix, args.branches)
        print(
            f"time to the branch point: fork {fork_s:.3f} s vs {args.branches} fresh resets replaying the prefix "
            f"{fresh_s:.3f} s: {fresh_s - fork_s:.3f} s saved ({fresh_s / fork_s:.1f}x)"
        )
    except SWEGymError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    finally:
        for branch in branches:
            branch.close()
        env.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
