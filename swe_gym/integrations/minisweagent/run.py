"""`run_episode`: one `SWEEnv` episode with mini-swe-agent's agent as the policy, and its `EpisodeResult`."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

import gymnasium as gym
from minisweagent.agents.default import DefaultAgent
from pydantic import BaseModel

from swe_gym.envs.prompt import SUBMIT
from swe_gym.integrations.minisweagent.episode_environment import EpisodeEnvironment, env_options
from swe_gym.integrations.minisweagent.protocol import default_agent_config

log = logging.getLogger(__name__)


class EpisodeResult(BaseModel):
    """One `run_episode`: our graded outcome and the agent's record."""

    reward: float
    """SWEEnv's reward for the episode (the graded patch; 0.0 when masked)."""
    terminated: bool
    """The agent submitted (SWEEnv's ``terminated``)."""
    truncated: bool
    """The episode ended without a submission: SWEEnv's step limit, a dead sandbox, or the agent's own
    limits / repeated format errors (then its work is graded as SWEEnv grades a truncated episode)."""
    exit_status: str
    """mini-swe-agent's exit status: ``Submitted``, ``Truncated``, ``Masked`` (the episode ended it), or the
    agent's own ``LimitsExceeded``, ``TimeExceeded``, ``RepeatedFormatError``."""
    steps: int
    """``env.step`` calls, the closing ``submit`` of an unsubmitted episode included."""
    info: dict[str, Any]
    """The terminal step's info: ``resolved``, ``masked``, ``masked_reason``, ``patch``, ``report``, ..."""
    reset_info: dict[str, Any]
    messages: list[dict[str, Any]]
    """The agent's messages (system, task, model turns, observations, exit)."""
    trajectory: dict[str, Any]
    """``agent.serialize()`` (mini-swe-agent's trajectory format) with ``info.swe_gym`` added."""
    model_calls: int
    cost: float

    @property
    def resolved(self) -> bool:
        return bool(self.info.get("resolved"))

    @property
    def masked(self) -> bool:
        return bool(self.info.get("masked"))


def run_episode(
    env: gym.Env,
    *,
    model: Any,
    agent_config: Mapping[str, Any] | None = None,
    agent_class: type = DefaultAgent,
    seed: int | None = None,
    options: dict[str, Any] | None = None,
) -> EpisodeResult:
    """Run one `SWEEnv` episode with mini-swe-agent's agent as the policy.

    ``env.reset(seed=, options=)`` picks the task; the agent (``agent_class(model, environment,
    **agent_config)``, mini-swe-agent's ``DefaultAgent`` by default) gets the reset observation as
    its ``task`` and acts through `EpisodeEnvironment`, each action one ``env.step``, until a step
    ends the episode (its submission, SWEEnv's ``max_steps``, a dead sandbox). If the agent stops
    first (its step/cost/time limit, repeated format errors), its work is graded with a closing
    ``submit`` when the env grades truncated episodes (``grade_on_truncation``, the default), else
    the env is closed and the reward is 0.0; either way the result is ``truncated``.

    If the agent or model raises, the env is closed (its sandbox removed) and the error propagates.

    Args:
        env: an `SWEEnv` (``gymnasium.make("swe_gym/SWE-v0", ...)`` or wrapped, e.g. by a recorder).
        model: a mini-swe-agent ``Model`` (e.g. ``minisweagent.models.get_model("anthropic/claude-...")``).
        agent_config: the agent's keyword arguments; default `default_agent_config` (mini-swe-agent's
            ``mini.yaml``). With ``output_path`` the trajectory is saved there, ``info.swe_gym`` included.
        agent_class: a mini-swe-agent agent class (``DefaultAgent`` or a subclass).
    """
    config = dict(default_agent_config() if agent_config is None else agent_config)
    observation, reset_info = env.reset(seed=seed, options=options)
    environment = EpisodeEnvironment(env, reset_info)
    try:
        agent = agent_class(model, environment, **config)
        agent.run(observation)
        if environment.final is None:
            _end_unsubmitted(env, environment)
    except BaseException:
        try:
            env.close()  # removes the episode's sandbox
        except Exception:
            log.exception("could not close the env after the agent failed")
        raise
    assert environment.final is not None
    _, reward, terminated, truncated, info = environment.final
    exit_status = agent.messages[-1].get("extra", {}).get("exit_status", "") if agent.messages else ""
    summary = {
        "instance_id": environment.config.instance_id,
        "reward": float(reward),
        "resolved": bool(info.get("resolved")),
        "masked": bool(info.get("masked")),
        "terminated": bool(terminated),
        "truncated": bool(truncated),
        "steps": environment.steps,
    }
    extra = {"info": {"swe_gym": summary}}
    trajectory = agent.save(agent.config.output_path, extra) if agent.config.output_path else agent.serialize(extra)
    return EpisodeResult(
        reward=float(reward),
        terminated=bool(terminated),
        truncated=bool(truncated),
        exit_status=exit_status,
        steps=environment.steps,
        info=dict(info),
        reset_info=dict(reset_info),
        messages=agent.messages,
        trajectory=trajectory,
        model_calls=agent.n_calls,
        cost=agent.cost,
    )


def _end_unsubmitted(env: gym.Env, environment: EpisodeEnvironment) -> None:
    """The agent stopped without ending the episode: grade its work as a truncated episode, or drop it."""
    settings = env_options(env)
    if settings is None or settings.grade_on_truncation:
        observation, reward, _, _, info = env.step(SUBMIT)
        environment.steps += 1
        environment.final = (observation, float(reward), False, True, info)
        return
    env.close()  # the only public way to free the episode's sandbox without grading
    info = {"resolved": False, "masked": False, "masked_reason": None, "patch": "", "report": None}
    environment.final = ("", 0.0, False, True, info)
