"""(b) `EpisodeEnvironment`: a running `SWEEnv` episode as mini-swe-agent's ``Environment``, so that its
agent is the episode's policy: every ``execute`` is one ``env.step``."""

from __future__ import annotations

import json
import shlex
from collections.abc import Mapping
from typing import Any

import gymnasium as gym
from minisweagent.exceptions import LimitsExceeded, Submitted
from minisweagent.utils.serialize import recursive_merge
from pydantic import BaseModel

from swe_gym.envs.options import EnvOptions
from swe_gym.integrations.minisweagent.protocol import execute_result, host_uname, serialized


class EpisodeEnvironmentConfig(BaseModel):
    """What `EpisodeEnvironment` serializes into the trajectory."""

    instance_id: str = ""
    sandbox_id: str = ""
    provider: str = ""
    max_steps: int | None = None
    step_timeout: float | None = None


class EpisodeEnvironment:
    """mini-swe-agent ``Environment`` over a running `SWEEnv` episode: ``execute`` is one ``env.step``.

    The episode's rules are SWEEnv's: its step timeout, observation cap and ``max_steps``, its
    submission (the ``submit`` action, or a command that exits 0 with the marker as its first line:
    `swe_gym.envs.prompt.is_submission`, mini-swe-agent's own rule). When a step ends the episode,
    ``execute`` raises mini-swe-agent's ``Submitted`` (terminated) or ``LimitsExceeded`` (truncated:
    step limit, or a sandbox that died, masked), so the agent's loop stops; `final` then holds that
    step's ``(obs, reward, terminated, truncated, info)``. ``execute``'s ``timeout`` is ignored
    (SWEEnv's ``step_timeout`` applies); a ``cwd`` is a ``cd`` first.

    mini-swe-agent's tool-calling models (its ``mini.yaml``: one ``bash`` tool) give each action the id of
    its call (``tool_call_id``); in an env made with ``tools=[..., "bash", ...]`` the step is that ``bash``
    call, so the step's info names it (``tool``, ``tool_call_id``) as the agent's tool message does.
    """

    def __init__(self, env: gym.Env, reset_info: Mapping[str, Any]) -> None:
        self.env = env
        settings = env_options(env)
        self.config = EpisodeEnvironmentConfig(
            instance_id=str(reset_info.get("instance_id", "")),
            sandbox_id=str(reset_info.get("sandbox_id", "")),
            provider=str(reset_info.get("provider", "")),
            max_steps=settings.max_steps if settings else None,
            step_timeout=settings.step_timeout if settings else None,
        )
        self.steps = 0
        self.final: tuple[str, float, bool, bool, dict[str, Any]] | None = None
        self._bash_tool = "bash" in ((settings.tools if settings else None) or ())

    def execute(self, action: dict, cwd: str = "", *, timeout: float | None = None) -> dict[str, Any]:
        if self.final is not None:
            raise RuntimeError("the SWEEnv episode is over; the agent cannot act in it any more")
        command = action.get("command", "")
        if cwd:
            command = f"cd {shlex.quote(cwd)} && {command}"
        call_id = action.get("tool_call_id")
        step: Any = command
        if self._bash_tool and isinstance(call_id, str):  # the agent's bash tool call, with its id
            arguments = json.dumps({"command": command})
            step = {"id": call_id, "type": "function", "function": {"name": "bash", "arguments": arguments}}
        observation, reward, terminated, truncated, info = self.env.step(step)
        self.steps += 1
        if terminated or truncated:
            self.final = (observation, float(reward), terminated, truncated, info)
            raise self._ending(observation, float(reward), terminated, info)
        keys = ("exit_code", "timed_out", "output_truncated", "duration_s")
        return execute_result(
            observation,
            int(info.get("exit_code", -1)),
            timed_out=bool(info.get("timed_out")),
            timeout=self.config.step_timeout,
            extra={"step": self.steps, **{key: info.get(key) for key in keys}},
        )

    @staticmethod
    def _ending(observation: str, reward: float, terminated: bool, info: Mapping[str, Any]) -> Exception:
        status = "Submitted" if terminated else "Masked" if info.get("masked") else "Truncated"
        message = {
            "role": "exit",
            "content": observation,
            "extra": {
                "exit_status": status,
                "submission": info.get("patch") or "",
                "reward": reward,
                "resolved": bool(info.get("resolved")),
                "masked": bool(info.get("masked")),
            },
        }
        return Submitted(message) if terminated else LimitsExceeded(message)

    def get_template_vars(self, **kwargs: Any) -> dict[str, Any]:
        """The config and the host's ``uname`` (as mini-swe-agent's Docker environment), then ``kwargs``.
        The episode's sandbox is not asked: every exec there is a step of the episode."""
        return recursive_merge(self.config.model_dump(), host_uname(), kwargs)

    def serialize(self) -> dict:
        return serialized(self)


def env_options(env: gym.Env) -> EnvOptions | None:
    """The episode options of an swe_gym env (its host's config); None for another Gymnasium env."""
    config = getattr(getattr(env.unwrapped, "host", None), "config", None)
    return config if isinstance(config, EnvOptions) else None
