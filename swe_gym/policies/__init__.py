"""Baseline policies: a seeded random explorer and a cheating oracle."""

from swe_gym.policies.base import POLICY_NAMES, Policy, make_policy
from swe_gym.policies.oracle import OraclePolicy
from swe_gym.policies.random_policy import RandomPolicy

__all__ = ["POLICY_NAMES", "OraclePolicy", "Policy", "RandomPolicy", "make_policy"]
