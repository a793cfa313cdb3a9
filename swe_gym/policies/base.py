"""The `Policy` protocol that the CLI and examples drive, and `make_policy`."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field

from swe_gym.errors import ConfigError
from swe_gym.tasks.model import SWETask

POLICY_NAMES = ("random", "oracle", "llm")


class PolicyInfo(BaseModel):
    """Who acted in an episode, as its trajectory records it: so a report can tell policies and models apart."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    name: str = Field(description="random, oracle, llm, or a third party's own name")
    model: str | None = Field(default=None, description="the model id, for a model-backed policy")

    def label(self) -> str:
        """``llm (qwen2.5-coder)``, ``oracle``: how a report names it."""
        return f"{self.name} ({self.model})" if self.model else self.name


def policy_info(policy: object) -> PolicyInfo:
    """``policy.identity`` (every swe_gym policy has one), else its class name: a third-party policy need not."""
    identity = getattr(policy, "identity", None)
    return identity if isinstance(identity, PolicyInfo) else PolicyInfo(name=type(policy).__name__)


@runtime_checkable
class Policy(Protocol):
    """Maps observations to bash actions (or ``"submit"``) for `SWEEnv`; for an env made with ``tools=``, an
    action may be a tool call too (e.g. an OpenAI ``tool_calls`` entry, as `LLMPolicy` sends natively)."""

    def reset(self, observation: str, info: dict[str, Any]) -> None:
        """Start an episode from ``env.reset()``'s observation and info."""
        ...

    def act(self, observation: str, info: dict[str, Any]) -> str | dict[str, Any]:
        """The next action, given the latest observation and info."""
        ...


def make_policy(
    name: str,
    *,
    tasks: Sequence[SWETask] | None = None,
    seed: int | None = None,
    llm: Any = None,
) -> Policy:
    """A policy by name: ``"random"`` (uses ``seed``), ``"oracle"`` (needs ``tasks``) or ``"llm"``
    (``llm``: an `LLMConfig` or a dict of its fields; endpoint and model default to the environment)."""
    if name == "random":
        from swe_gym.policies.random_policy import RandomPolicy

        return RandomPolicy(seed)
    if name == "oracle":
        from swe_gym.policies.oracle import OraclePolicy

        if tasks is None:
            raise ConfigError("the oracle policy needs the task list (it applies each task's gold patch)")
        return OraclePolicy(tasks)
    if name == "llm":
        from swe_gym.policies.llm import LLMPolicy

        return LLMPolicy(llm)
    raise ConfigError(f"unknown policy {name!r}; choose one of: {', '.join(POLICY_NAMES)}")
