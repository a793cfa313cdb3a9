"""Policies: a seeded random explorer, a cheating oracle, and a language model (`LLMPolicy`)."""

from swe_gym.policies.base import POLICY_NAMES, Policy, PolicyInfo, make_policy, policy_info
from swe_gym.policies.llm import LLMConfig, LLMPolicy
from swe_gym.policies.oracle import OraclePolicy
from swe_gym.policies.random_policy import RandomPolicy

__all__ = [
    "POLICY_NAMES",
    "LLMConfig",
    "LLMPolicy",
    "OraclePolicy",
    "Policy",
    "PolicyInfo",
    "RandomPolicy",
    "make_policy",
    "policy_info",
]
