"""Run `LLMPolicy` episodes on the bundled tasks against an OpenAI-compatible endpoint.

    set -a; . /etc/swe-gym/llm.env; set +a    # written by .ci/provision_llm.sh (a local SmolLM2)
    python examples/llm_policy.py --episodes 3 --max-steps 5

The endpoint and model come from --base-url/--model, else SWE_GYM_LLM_BASE_URL /
SWE_GYM_LLM_MODEL (or the file SWE_GYM_LLM_ENV_FILE names); the key from
OPENAI_API_KEY. Prints one line per episode (steps, tokens, model time) and
appends one JSON record per episode to --out (read it back with
`swe_gym.wrappers.read_trajectories`). `examples/random_policy.py` is the baseline.
"""

from __future__ import annotations

import argparse
import sys
import time

import gymnasium as gym

import swe_gym  # noqa: F401  (registers swe_gym/SWE-v0)
from swe_gym.errors import SWEGymError
from swe_gym.policies import LLMConfig, LLMPolicy
from swe_gym.wrappers import TrajectoryRecorder


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodes", type=int, default=3)
    parser.add_argument("--max-steps", type=int, default=10)
    parser.add_argument("--provider", default="local")
    parser.add_argument("--image", default=None)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--base-url", default=None, help="default: $SWE_GYM_LLM_BASE_URL")
    parser.add_argument("--model", default=None, help="default: $SWE_GYM_LLM_MODEL")
    parser.add_argument("--temperature", type=float, default=0.0)
    parser.add_argument("--max-tokens", type=int, default=384)
    parser.add_argument("--context-chars", type=int, default=9000, help="history budget (SmolLM2 serves 4096 tokens)")
    parser.add_argument("--out", default="runs/llm_trajectories.jsonl")
    args = parser.parse_args()

    overrides = {"base_url": args.base_url, "model": args.model}
    config = LLMConfig(
        **{k: v for k, v in overrides.items() if v},
        temperature=args.temperature,
        max_tokens=args.max_tokens,
        context_budget_chars=args.context_chars,
    )
    try:
        policy = LLMPolicy(config)
    except SWEGymError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    env = gym.make("swe_gym/SWE-v0", provider=args.provider, image=args.image, max_steps=args.max_steps)
    env = TrajectoryRecorder(env, args.out, policy=policy, policy_stats=policy.episode_stats)
    print(f"model {config.model} at {config.base_url}")
    try:
        for episode in range(args.episodes):
            started = time.perf_counter()
            observation, info = env.reset(seed=args.seed + episode)
            policy.reset(observation, info)
            task, steps, done = info["instance_id"], 0, False
            while not done:
                observation, reward, terminated, truncated, info = env.step(policy.act(observation, info))
                steps += 1
                done = terminated or truncated
            stats = policy.episode_stats()
            ended = "submit" if terminated else "step limit"
            print(
                f"{task:<22} steps={steps:<2} ended={ended:<10} reward={reward:.1f} "
                f"calls={stats['model_calls']:<2} tokens={stats['prompt_tokens']}+{stats['completion_tokens']} "
                f"format_errors={stats['format_errors']} model_s={stats['latency_total_s']:.1f} "
                f"wall_s={time.perf_counter() - started:.1f}"
            )
    except SWEGymError as exc:  # e.g. PolicyError: the endpoint is down; the env still closes below
        print(f"error: {exc}", file=sys.stderr)
        return 2
    finally:
        env.close()
        policy.close()
    print(f"trajectories appended to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
