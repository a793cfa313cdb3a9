"""Apply each bundled task's gold patch with `OraclePolicy`: every episode should score 1.0.

    python examples/oracle_policy.py                      # local provider
    python examples/oracle_policy.py --provider docker --image swe-gym-test:bookworm

The oracle cheats (it reads the gold patch); it proves that sandboxes, patch
extraction and grading work end to end.
"""

from __future__ import annotations

import argparse

import gymnasium as gym

import swe_gym  # noqa: F401  (registers swe_gym/SWE-v0)
from swe_gym.policies import OraclePolicy


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--provider", default="local")
    parser.add_argument("--image", default=None)
    parser.add_argument("--max-steps", type=int, default=5)
    args = parser.parse_args()

    env = gym.make("swe_gym/SWE-v0", provider=args.provider, image=args.image, max_steps=args.max_steps)
    tasks = env.unwrapped.tasks
    policy = OraclePolicy(tasks)
    total_reward = 0.0
    try:
        for task in tasks:
            observation, info = env.reset(options={"task_id": task.instance_id})
            policy.reset(observation, info)
            steps, done = 0, False
            while not done:
                observation, reward, terminated, truncated, info = env.step(policy.act(observation, info))
                steps += 1
                done = terminated or truncated
            total_reward += reward
            print(f"{task.instance_id:<28} steps={steps} reward={reward:.1f} resolved={info['resolved']}")
    finally:
        env.close()
    print(f"tasks={len(tasks)} total_reward={total_reward:.1f} (expected {len(tasks):.1f})")


if __name__ == "__main__":
    main()
