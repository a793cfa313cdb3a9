"""swe_gym episodes as a NeMo RL environment.

`SWEGymEnvironment` meets NeMo RL's environment contract
(``nemo_rl/environments/interfaces.py``): ``step(message_log_batch, metadata)``
returns an `EnvironmentReturn` (``observations``, ``metadata``,
``next_stop_strings``, ``rewards``, ``terminateds``, ``answers``) with rewards
and terminateds as torch tensors; ``global_post_process_and_metrics(batch)``
returns ``(batch, metrics)``; ``shutdown()`` frees every sandbox. As a Ray actor
it is `SWEGymEnvironmentActor` (``ray.remote(SWEGymEnvironment)``, made on first
use), which is what NeMo RL's registries name (`ACTOR_CLASS_FQN`, this package's
attribute). One concept per module:

- ``types``: NeMo RL's `EnvironmentInterface` / `EnvironmentReturn`, or swe_gym's structurally
  identical copies when NeMo RL cannot be imported (``nemo-rl`` on PyPI is an empty placeholder);
- ``config``: `SWEGymEnvConfig`, the YAML ``env.<name>`` section;
- ``prompt``: `build_prompt`, the first user message of a sample;
- ``actions``: the command of a turn (the last, assistant, message), read by
  `swe_gym.envs.actions.parse_action`: exactly one fenced ``bash``/``sh`` block
  (``action_format="bash_block"``, the mini-swe-agent convention) or one ``<bash>...</bash>``
  element (``action_format="tag"``, tag configurable); a block holding only ``submit`` ends the
  episode and grades it;
- ``episodes``: which sample is which episode (keyed by its metadata, NeMo RL's ``extra_env_info``;
  datasets should carry only ``instance_id``: GRPO repeats each prompt, and every repeat becomes its
  own episode) and what the env remembers of ended ones;
- ``environment``: `SWEGymEnvironment`, the turns;
- ``post_process``: masks into the rollout batch;
- ``actor``: the Ray actor; ``registration``: `register_with_nemo_rl`; ``hook``: the rollout hook
  that brings the masks into the batch GRPO filters.

**Masking.** An infrastructure failure (sandbox that cannot start or dies, a
grading that cannot run, a turn over ``turn_timeout_s``) ends the sample with
``terminated`` and ``masked: True`` plus ``masked_reason`` in the returned metadata,
never as a silent 0. NeMo RL keeps returned metadata only for samples that continue,
so the env also remembers each ended episode; ``global_post_process_and_metrics(batch)``
then sets ``batch["mask_sample"]`` (which NeMo RL's GRPO turns into
``loss_multiplier = 0``) and zeroes ``batch["loss_multiplier"]`` for those rows, and
closes episodes the trainer stopped on its own (turn or sequence limits).
"""

from __future__ import annotations

from typing import Any

from swe_gym.envs.actions import ActionFormatError, parse_action
from swe_gym.integrations.nemo_rl.config import SWEGymEnvConfig
from swe_gym.integrations.nemo_rl.environment import SWEGymEnvironment
from swe_gym.integrations.nemo_rl.episodes import EPISODE_TAG, EpisodeOutcome
from swe_gym.integrations.nemo_rl.prompt import build_prompt
from swe_gym.integrations.nemo_rl.registration import ACTOR_CLASS_FQN, DEFAULT_ENV_NAME, register_with_nemo_rl
from swe_gym.integrations.nemo_rl.types import (
    NEMO_RL_AVAILABLE,
    BatchedDataDict,
    EnvironmentInterface,
    EnvironmentReturn,
)


def __getattr__(name: str) -> Any:
    """``SWEGymEnvironmentActor``: the Ray actor class, made on first access (Ray is optional); see
    `swe_gym.integrations.nemo_rl.actor`."""
    if name != "SWEGymEnvironmentActor":
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from swe_gym.integrations.nemo_rl.actor import actor_class

    return actor_class()


__all__ = [
    "ACTOR_CLASS_FQN",
    "DEFAULT_ENV_NAME",
    "EPISODE_TAG",
    "NEMO_RL_AVAILABLE",
    "ActionFormatError",
    "BatchedDataDict",
    "EnvironmentInterface",
    "EnvironmentReturn",
    "EpisodeOutcome",
    "SWEGymEnvConfig",
    "SWEGymEnvironment",
    "SWEGymEnvironmentActor",
    "build_prompt",
    "parse_action",
    "register_with_nemo_rl",
]
