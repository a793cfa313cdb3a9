"""The hook that makes swe_gym's masks reach NeMo RL's loss: post-processing after every rollout.

Why a hook: NeMo RL's GRPO drops a sample from the loss when the rollout batch carries
``mask_sample`` (``grpo._apply_mask_sample_filter``), but only its NeMo-Gym path ever sets
that key; a native environment's returned metadata is discarded for samples that end, and
nothing in NeMo RL calls an environment's ``global_post_process_and_metrics`` (NVIDIA-NeMo/RL
@7ea279ab). The least invasive place is the rollout functions' return: `install_rollout_hook`
wraps ``run_multi_turn_rollout`` and ``run_async_multi_turn_rollout`` (in
``nemo_rl.experience.rollouts`` and every loaded ``nemo_rl`` module that imported them by
name), so that each rollout's batch goes, for the rows of swe_gym's task names, through the
env's ``rollout_done`` (its ``global_post_process_and_metrics``): masked rows get
``mask_sample`` and a zero ``loss_multiplier``, their ``total_reward`` becomes their prompt
group's unmasked mean (so the other samples' baseline does not move), episodes NeMo RL cut
off are closed at once, and ``swe_gym/*`` metrics join the rollout's. Envs that are not
swe_gym's, and batches without swe_gym rows, pass through untouched.
"""

from __future__ import annotations

import functools
import inspect
import logging
import sys
from collections.abc import Callable, Mapping
from typing import Any

log = logging.getLogger(__name__)

ROLLOUT_FUNCTIONS = ("run_multi_turn_rollout", "run_async_multi_turn_rollout")
_MARK = "__swe_gym_rollout_hook__"
#: The batch columns the env reads; the rest (token ids, logprobs) never cross to the actor.
_COLUMNS = ("extra_env_info", "total_reward")


def install_rollout_hook() -> list[str]:
    """Wrap NeMo RL's rollout functions (idempotent); returns the ``module.function`` names wrapped now."""
    from nemo_rl.experience import rollouts

    wrapped: list[str] = []
    for name in ROLLOUT_FUNCTIONS:
        original = getattr(rollouts, name, None)
        if original is None or getattr(original, _MARK, False):
            continue
        hooked = _hooked(original)
        for module in list(sys.modules.values()):
            if getattr(module, "__name__", "").startswith("nemo_rl") and getattr(module, name, None) is original:
                setattr(module, name, hooked)
                wrapped.append(f"{module.__name__}.{name}")
    if wrapped:
        log.info("swe_gym: NeMo RL rollouts post-processed by swe_gym (masks, cut-off episodes): %s", wrapped)
    return wrapped


def _hooked(original: Callable[..., Any]) -> Callable[..., Any]:
    signature = inspect.signature(original)

    @functools.wraps(original)
    def rollout(*args: Any, **kwargs: Any) -> Any:
        batch, metrics = original(*args, **kwargs)
        try:
            task_to_env = signature.bind(*args, **kwargs).arguments.get("task_to_env") or {}
        except TypeError:
            task_to_env = {}
        return post_process_rollout(batch, metrics, task_to_env)

    setattr(rollout, _MARK, True)
    return rollout


def post_process_rollout(batch: Any, metrics: dict[str, Any], task_to_env: Mapping[str, Any]) -> tuple[Any, dict]:
    """``(batch, metrics)`` with swe_gym's post-processing applied to the rows of swe_gym's envs."""
    import torch

    envs: dict[int, tuple[Any, list[str]]] = {}
    for task_name, env in task_to_env.items():
        if hasattr(env, "rollout_done"):  # a swe_gym env, local or a Ray actor handle
            envs.setdefault(id(env), (env, []))[1].append(task_name)
    if not envs or "message_log" not in batch:
        return batch, metrics
    rows = len(batch["message_log"])
    names = list(batch["task_name"]) if "task_name" in batch else [None] * rows
    mask = torch.zeros(rows, dtype=torch.bool)
    rewards = torch.as_tensor(batch["total_reward"], dtype=torch.float32).clone() if "total_reward" in batch else None
    for env, task_names in envs.values():
        mine = [i for i in range(rows) if names[i] is None or names[i] in task_names]
        if not mine:
            continue
        light = {
            "message_log": [_plain(batch["message_log"][i]) for i in mine],
            **{key: [batch[key][i] for i in mine] for key in _COLUMNS if key in batch},
        }
        if rewards is not None:
            light["total_reward"] = rewards[mine]
        done = env.rollout_done
        out, env_metrics = _ray_get(done.remote(light)) if hasattr(done, "remote") else done(light)
        mask[mine] = torch.as_tensor(out["mask_sample"], dtype=torch.bool)
        if rewards is not None:
            rewards[mine] = torch.as_tensor(out["total_reward"], dtype=torch.float32)
        metrics = {**metrics, **env_metrics}
    if "mask_sample" in batch:
        mask |= torch.as_tensor(batch["mask_sample"], dtype=torch.bool)
    batch["mask_sample"] = mask
    if rewards is not None:
        batch["total_reward"] = rewards
    if "loss_multiplier" in batch:
        multiplier = torch.as_tensor(batch["loss_multiplier"])
        batch["loss_multiplier"] = multiplier * (~mask).to(multiplier.dtype)
    return batch, metrics


def _plain(message_log: Any) -> list[dict[str, Any]]:
    """Roles and contents only (what NeMo RL sends the env at each turn, too)."""
    return [{"role": m.get("role"), "content": m.get("content")} for m in message_log if isinstance(m, Mapping)]


def _ray_get(ref: Any) -> Any:
    import ray

    return ray.get(ref)
