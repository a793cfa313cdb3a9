"""`SWEGymEnvConfig`: the ``env.<name>`` section of a NeMo RL YAML, and how a dict becomes one."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from pydantic import ConfigDict, Field, ValidationError, model_validator

from swe_gym.envs.actions import ActionFormat
from swe_gym.envs.options import HostConfig
from swe_gym.errors import ConfigError, validation_problems
from swe_gym.tools import TOOL_NAMES

#: What an assistant turn can be: OpenAI ``tool_calls`` in the message, Hermes ``<tool_call>`` text, or text
#: in ``action_format`` (one bash block or tag).
ActionKind = Literal["tool_calls", "hermes", "text"]


class SWEGymEnvConfig(HostConfig):
    """The ``env.<name>`` section of a NeMo RL YAML: what `SWEGymEnvironment` takes.

    The episode options, the task selection and the provider are the episode host's (`HostConfig`: the same
    names, defaults and meaning as for ``swe_gym.SWEEnv``); the rest is how NeMo RL's turns map onto episodes.
    """

    model_config = ConfigDict(extra="forbid", arbitrary_types_allowed=True)

    action_format: ActionFormat = "bash_block"
    action_tag: str = Field(default="bash", pattern=r"^[A-Za-z][\w.-]*$")
    accept_actions: list[ActionKind] = Field(
        default_factory=lambda: ["tool_calls", "hermes", "text"],
        min_length=1,
        description="which assistant turns are actions: tool_calls (an OpenAI tool_calls key in the message), "
        "hermes (<tool_call>{json}</tool_call> in its text), text (one command in action_format); a turn is "
        "read in that order. Tool calls need tools (None: all of swe_gym's when tool calls are accepted)",
    )
    stop_strings: list[str] | None = Field(
        default=None, description="next_stop_strings for every turn; None: '</TAG>' for the tag format, else none"
    )
    observation_role: Literal["environment", "user", "tool"] = "environment"
    turn_timeout_s: float = Field(
        default=3600.0, gt=0, description="a turn (start, command, grading) past this is masked"
    )
    idle_timeout_s: float = Field(default=3600.0, gt=0, description="live episodes not stepped this long are closed")
    max_live_episodes: int = Field(default=4096, ge=1)
    max_remembered: int = Field(default=100_000, ge=1, description="ended episodes remembered for late metadata")
    masked_reward: Literal["task_mean", "zero"] = Field(
        default="task_mean",
        description="reward of a masked sample: the mean of the task's unmasked episodes (harmless where the "
        "trainer keeps it), or 0.0; the rollout hook also sets it to its prompt group's mean and masks its loss",
    )

    @property
    def takes_tool_calls(self) -> bool:
        return "tool_calls" in self.accept_actions or "hermes" in self.accept_actions

    @model_validator(mode="after")
    def _tools_for_tool_calls(self) -> SWEGymEnvConfig:
        """Accepting tool calls with no ``tools`` named means all of swe_gym's."""
        if self.tools is None and self.takes_tool_calls:
            self.tools = list(TOOL_NAMES)
        return self

    def next_stop_strings(self) -> list[str] | None:
        if self.stop_strings is not None:
            return list(self.stop_strings)
        return [f"</{self.action_tag}>"] if self.action_format == "tag" else None


def as_config(cfg: SWEGymEnvConfig | Mapping[str, Any] | None) -> SWEGymEnvConfig:
    """``cfg`` as a `SWEGymEnvConfig` (a dict, or NeMo RL's ``env.NAME.cfg:`` nesting of one); a one-line
    `ConfigError` naming every invalid field otherwise."""
    if isinstance(cfg, SWEGymEnvConfig):
        return cfg
    raw = dict(cfg or {})
    if isinstance(raw.get("cfg"), Mapping) and len(raw) == 1:  # the `env.NAME.cfg:` nesting some NeMo RL YAMLs use
        raw = dict(raw["cfg"])
    try:
        return SWEGymEnvConfig(**raw)
    except ValidationError as exc:
        problems = validation_problems(exc)
        raise ConfigError(f"invalid swe_gym NeMo RL env config ({problems})") from None
