"""The `Policy` protocol that the CLI and examples drive, and `make_policy`."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

from swe_gym.errors import ConfigError
from swe_gym.tasks.model import SWETask

POLICY_NAMES = ("random", "oracle", "llm")


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
