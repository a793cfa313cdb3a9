"""The wire types of a served swe_gym env: OpenEnv's `Action`, `Observation` and `State`, specialised.

OpenEnv's server drops an observation's ``metadata`` from what it sends (``serialize_observation``), so what
`SWEEnv` returns as ``info`` (``masked``, ``masked_reason``, the grading report and patch at the end) travels
in the observation's own ``info`` field, beside ``terminated`` and ``truncated`` (OpenEnv's ``done`` is
either); ``reward`` and ``done`` are OpenEnv's.
"""

from __future__ import annotations

from typing import Any

from openenv.core.env_server.types import Action, Observation, State
from pydantic import Field

from swe_gym.errors import ConfigError


class SWEAction(Action):
    """One action: a bash ``command``, or a ``tool_call`` in any shape `swe_gym.tools.as_tool_call` takes
    (``{"name": ..., "arguments": {...}}``, an OpenAI ``tool_calls`` entry). Exactly one of the two."""

    command: str | None = Field(default=None, description="a bash command, as SWEEnv.step takes it")
    tool_call: dict[str, Any] | None = Field(
        default=None, description="a tool call: {name, arguments} or an OpenAI tool_calls entry"
    )

    @property
    def payload(self) -> str | dict[str, Any]:
        """What the episode host's ``act`` takes; a `ConfigError` unless exactly one of the two is given.

        Checked here, not by a validator: OpenEnv's server cannot send a validator's error back (it fails to
        serialise it and drops the session), while an error raised by the step reaches the client as is."""
        if (self.command is None) == (self.tool_call is None):
            raise ConfigError("an action is exactly one of 'command' (a bash string) or 'tool_call'")
        return self.command if self.command is not None else dict(self.tool_call or {})


class SWEObservation(Observation):
    """What a reset or a step returns: the text the agent sees and `SWEEnv`'s info, JSON-safe."""

    output: str = Field(default="", description="the observation text (the task prompt after a reset)")
    terminated: bool = Field(default=False, description="the episode ended by a submission")
    truncated: bool = Field(default=False, description="the episode ended by the step limit or masked")
    info: dict[str, Any] = Field(
        default_factory=dict, description="SWEEnv's info: masked, masked_reason, and at the end report, patch"
    )


class SWEState(State):
    """A session's state: OpenEnv's ``episode_id`` and ``step_count``, and which session and task."""

    session_id: str | None = Field(default=None, description="the server's id of this session")
    instance_id: str | None = Field(default=None, description="the task of the current episode")
    done: bool = Field(default=False, description="the current episode is over (or none started)")
