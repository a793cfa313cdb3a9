"""`LLMPolicy`: a chat model behind any OpenAI-compatible endpoint picks each bash action.

One concept per module: ``config`` (`LLMConfig`), ``templates`` (the conversation's messages),
``history`` (what of the conversation fits the budget), ``client`` (the endpoint: the openai client's
retries and timeouts under a hard deadline), ``policy`` (`LLMPolicy`: the conversation and format errors).
A reply is read by swe_gym's one action parser, `swe_gym.envs.actions.parse_action`.
"""

from swe_gym.policies.llm.config import ENV_PREFIX, LLMConfig
from swe_gym.policies.llm.policy import LLMPolicy

__all__ = ["ENV_PREFIX", "LLMConfig", "LLMPolicy"]
