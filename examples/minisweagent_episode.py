"""Run one bundled SWEEnv episode with mini-swe-agent's DefaultAgent as the policy; print reward and steps.

    python examples/minisweagent_episode.py                        # offline: a scripted model, local provider
    python examples/minisweagent_episode.py --provider docker --image swe-gym-test:bookworm
    python examples/minisweagent_episode.py --model anthropic/claude-sonnet-4-5-20250929 --max-steps 50

Needs ``pip install 'swe_gym[minisweagent]'``. Without ``--model`` the agent's model is mini-swe-agent's
own ``DeterministicModel``, scripted to apply the task's gold patch and submit (it cheats, like the
oracle policy; it shows the plumbing without any network). With ``--model NAME`` mini-swe-agent's
``get_model`` builds a real model (litellm, tool calls) configured by the ``model`` section of
``--config`` (default: its ``mini.yaml``); put the provider's key (e.g. ``ANTHROPIC_API_KEY``) in the
environment. Either way the reward comes from swe_gym's grading of the episode's patch.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import gymnasium as gym

import swe_gym  # noqa: F401  (registers swe_gym/SWE-v0)
from swe_gym.integrations.minisweagent import DEFAULT_CONFIG, run_episode
from swe_gym.policies.oracle import apply_patch_command


def scripted_model(patch: str):
    """mini-swe-agent's test model: apply ``patch``, look at the change, submit."""
    from minisweagent.models.test_models import DeterministicModel, make_output

    return DeterministicModel(
        outputs=[
            make_output("THOUGHT: apply my fix.", [{"command": apply_patch_command(patch)}]),
            make_output("THOUGHT: check what changed.", [{"command": "git diff --stat"}]),
            make_output("THOUGHT: done.", [{"command": "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"}]),
        ]
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--task", default=None, help="a bundled instance id (default: the first bundled task)")
    parser.add_argument("--provider", default="local")
    parser.add_argument("--image", default=None, help="image for container providers, e.g. swe-gym-test:bookworm")
    parser.add_argument("--max-steps", type=int, default=30)
    parser.add_argument("--model", default=None, help="a litellm model name; default: the offline scripted model")
    parser.add_argument("--config", default=DEFAULT_CONFIG, help="mini-swe-agent config for the agent and model")
    parser.add_argument("--output", type=Path, default=None, help="save the agent's trajectory (JSON) here")
    args = parser.parse_args()

    from minisweagent.config import get_config_from_spec

    config = get_config_from_spec(args.config)
    agent_config = {**config.get("agent", {}), "output_path": args.output}
    env = gym.make(
        "swe_gym/SWE-v0",
        provider=args.provider,
        image=args.image,
        max_steps=args.max_steps,
        instance_ids=[args.task] if args.task else None,
    )
    try:
        task = env.unwrapped.tasks[0]
        if args.model:
            from minisweagent.models import get_model

            model = get_model(args.model, config.get("model", {}))
        else:
            model = scripted_model(task.patch)
        result = run_episode(env, model=model, agent_config=agent_config, options={"task_id": task.instance_id})
    finally:
        env.close()
    print(
        f"{task.instance_id}: reward={result.reward:.1f} resolved={result.resolved} masked={result.masked} "
        f"steps={result.steps} exit_status={result.exit_status} model_calls={result.model_calls}"
    )
    if args.output:
        print(f"trajectory: {args.output}")


if __name__ == "__main__":
    main()
