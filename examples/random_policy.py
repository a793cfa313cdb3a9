"""Run `RandomPolicy` episodes on the bundled tasks and print what happened.

    python examples/random_policy.py --episodes 3 --max-steps 20 --provider local --seed 0

A random explorer almost never resolves a task: this shows the environment
loop, not a good agent. For the docker provider pass ``--image``.
"""

from __future__ import annotations

import argparse

import gymnasium as gym

import swe_gym  # noqa: F401  (registers swe_gym/SWE-v0)
from swe_gym.policies import RandomPolicy


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodes", type=int, default=3)
    parser.add_argument("--max-steps", type=int, default=20)
    parser.add_argument("--provider", default="local")
    parser.add_argument("--image", default=None)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    env = gym.make("swe_gym/SWE-v0", provider=args.provider, image=args.image, max_steps=args.max_steps)
    policy = RandomPolicy(seed=args.seed)
    total_reward, resolved = 0.0, 0
    try:
        for episode in range(args.episodes):
            observation, info = env.reset(seed=args.seed + episode)
            policy.reset(observation, info)
            task, steps, done = info["instance_id"], 0, False
            while not done:
                observation, reward, terminated, truncated, info = env.step(policy.act(observation, info))
                steps += 1
                done = terminated or truncated
            total_reward += reward
            resolved += bool(info["resolved"])
            print(f"{task:<28} steps={steps:<3} reward={reward:.1f} resolved={info['resolved']}")
    finally:
        env.close()
    print(f"episodes={args.episodes} resolved={resolved} mean_reward={total_reward / max(args.episodes, 1):.2f}")


if __name__ == "__main__":
    main()
