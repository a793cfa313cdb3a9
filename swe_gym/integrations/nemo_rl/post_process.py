"""Masks into NeMo RL's rollout batch: what `SWEGymEnvironment.global_post_process_and_metrics` writes.

NeMo RL keeps returned metadata only for samples that continue, so the env finds each finished row's
episode itself (`episodes.row_episode`) and then, for the rows whose episode was masked, sets
``batch["mask_sample"]`` (which GRPO turns into ``loss_multiplier = 0``), zeroes
``batch["loss_multiplier"]``, and replaces ``total_reward`` with the mean of the unmasked rows of the
same prompt group, so the masked sample moves no baseline. `rollout_metrics` is the ``swe_gym/*``
metrics of a batch.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from swe_gym.integrations.nemo_rl.episodes import EpisodeOutcome, mean
from swe_gym.integrations.nemo_rl.types import require_torch


def column(batch: Any, key: str) -> list[Any]:
    """``batch[key]`` as a list; empty when the batch has no such column."""
    try:
        value = batch[key] if key in batch else []
    except (TypeError, KeyError):
        return []
    return list(value) if value is not None else []


def mask_rows(batch: Any, masked: Sequence[bool], logs: Sequence[Any]) -> None:
    """Write the masks of ``masked`` (one per row) into ``batch``: ``mask_sample`` (or-ed with one another
    env set), ``loss_multiplier`` zeroed, ``total_reward`` its prompt group's unmasked mean."""
    torch = require_torch()
    mask = torch.tensor(list(masked), dtype=torch.bool)
    earlier = batch["mask_sample"] if "mask_sample" in batch else None  # e.g. set by another env
    if earlier is not None and len(earlier) == len(mask):
        mask = mask | torch.as_tensor(earlier, dtype=torch.bool)
    batch["mask_sample"] = mask
    if "total_reward" in batch and bool(mask.any()):
        batch["total_reward"] = group_mean_for_masked(batch, mask.tolist(), logs)
    if "loss_multiplier" in batch:
        multiplier = batch["loss_multiplier"]
        if isinstance(multiplier, torch.Tensor):
            batch["loss_multiplier"] = multiplier * (~mask).to(multiplier.dtype)
        else:
            batch["loss_multiplier"] = [0.0 if m else x for m, x in zip(mask.tolist(), multiplier, strict=False)]


def group_mean_for_masked(batch: Any, masked: list[bool], logs: Sequence[Any]) -> Any:
    """``total_reward`` with each masked row's value replaced by the mean of the unmasked rows of its prompt
    group (GRPO's repeats of one prompt: the same messages before the first reply; ``idx`` is no key, the
    async rollout renumbers it), or 0 when all of them are masked."""
    torch = require_torch()
    rewards = torch.as_tensor(batch["total_reward"], dtype=torch.float32).clone()

    def prompt(i: int) -> str:
        log = logs[i] if i < len(logs) else []
        before: list[Any] = []
        for message in log:
            if isinstance(message, Mapping) and message.get("role") == "assistant":
                break
            before.append((message.get("role"), message.get("content")) if isinstance(message, Mapping) else message)
        return repr(before)

    keys = [prompt(i) for i in range(len(masked))]
    for i, is_masked in enumerate(masked):
        if is_masked:
            rewards[i] = mean([float(rewards[j]) for j, key in enumerate(keys) if key == keys[i] and not masked[j]])
    return rewards


def rollout_metrics(rows: int, outcomes: Sequence[EpisodeOutcome | None], abandoned: int) -> dict[str, Any]:
    """The ``swe_gym/*`` metrics of a batch of ``rows`` rows whose episodes ended as ``outcomes``."""
    known = [o for o in outcomes if o is not None]
    return {
        "swe_gym/num_samples": rows,
        "swe_gym/num_episodes": len(known),
        "swe_gym/unmatched_samples": rows - len(known),
        "swe_gym/resolved_rate": mean([o.resolved for o in known]),
        "swe_gym/masked_rate": mean([o.masked for o in known]),
        "swe_gym/truncated_rate": mean([o.truncated for o in known]),
        "swe_gym/mean_reward": mean([o.reward for o in known]),
        "swe_gym/mean_steps": mean([o.turns for o in known]),
        "swe_gym/format_errors_per_episode": mean([o.format_errors for o in known]),
        "swe_gym/abandoned_episodes": abandoned,
    }
