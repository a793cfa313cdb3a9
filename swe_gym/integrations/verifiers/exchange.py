"""`play`: one swe_gym episode as one verifiers exchange, the episode playing the run's user.

The episode's first observation opens the exchange; each model reply is read as one bash command by swe_gym's
one action parser (`swe_gym.envs.actions.parse_action`) and run as a step of the host's episode; the step's
observation is the next user turn, until the episode ends (a submission, the step limit) and is graded. A
reply without one command is answered with the parser's reason and counts toward the step limit, as in the
NeMo RL env. A run verifiers ends first (its ``max_turns``, a token limit, a ``@stop``) is graded like a step
limit: the patch as it stands. The failure rule is the host's: a masked episode raises `MaskedEpisodeError`.
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import Any

import verifiers.v1 as vf

from swe_gym.envs.actions import ActionFormatError, parse_action
from swe_gym.envs.episode import StepResult
from swe_gym.envs.host import EpisodeHost
from swe_gym.envs.text import to_observation
from swe_gym.tasks import SWETask

#: Where an episode's outcome is left on its trace (``trace.info``): the reward reads it, and so can any reader.
OUTCOME_KEY = "swe_gym"


class MaskedEpisodeError(vf.SandboxError):
    """swe_gym masked the episode: its environment failed (a sandbox that could not start, or died not by
    the agent's command), so there is no verdict. Recorded on the trace as an error, never as reward 0;
    ``--env.retries.rules '[{type = "MaskedEpisodeError", max_retries = 2}]'`` retries it."""


async def play(host: EpisodeHost, key: Hashable, task: SWETask, interaction: vf.Interaction) -> dict[str, Any]:
    """Run the episode at ``key`` of ``task`` over ``interaction`` to its graded end; its outcome (``info``
    of the last step, with the turn counts) is returned and left on ``interaction.trace.info``."""
    max_steps, max_chars = host.config.max_steps, host.config.max_observation_chars
    observation, info = await host.call_async(host.start(key, task))
    if info.get("masked"):
        raise MaskedEpisodeError(info["masked_reason"])
    turns = format_errors = 0
    segment = await interaction.turn(observation)
    while True:
        if segment.terminated:  # verifiers ended the run: graded as it stands
            result = await _truncate(host, key, "[swe_gym: the agent's run was ended by its limits]")
            break
        turns += 1
        try:
            command = parse_action(segment.last_reply)
        except ActionFormatError as exc:
            format_errors += 1
            text = f"[swe_gym: format error: {exc}. Nothing was run.]"
            if turns >= max_steps:
                result = await _truncate(host, key, text)
                break
            segment = await interaction.turn(to_observation(text, max_chars))
            continue
        result = await host.call_async(host.act(key, command))
        observation, _, terminated, truncated, info = result
        if not (terminated or truncated) and turns >= max_steps:  # format errors count as turns here
            result = await _truncate(host, key, observation)
        if result[2] or result[3]:
            break
        segment = await interaction.turn(observation)
    return _outcome(task, result, turns, format_errors, interaction.trace)


async def _truncate(host: EpisodeHost, key: Hashable, text: str) -> StepResult:
    """End the live episode at ``key`` now, graded like a step limit, ``text`` its last output."""
    episode = host.episode(key)
    if episode is None or episode.done:
        raise RuntimeError(f"episode {key!r} is not live")
    return await host.call_async(episode.truncate(text, {"step": episode.steps}))


def _outcome(task: SWETask, result: StepResult, turns: int, format_errors: int, trace: vf.Trace) -> dict[str, Any]:
    _, reward, terminated, truncated, info = result
    outcome = {
        "instance_id": task.instance_id,
        "reward": float(reward),
        "resolved": bool(info.get("resolved")),
        "masked": bool(info.get("masked")),
        "masked_reason": info.get("masked_reason"),
        "submitted": terminated,
        "truncated": truncated,
        "turns": turns,
        "format_errors": format_errors,
        "patch": info.get("patch", ""),
        "report": info.get("report"),
    }
    trace.info[OUTCOME_KEY] = outcome
    if outcome["masked"]:
        raise MaskedEpisodeError(str(outcome["masked_reason"]))
    trace.stop("swe_gym_submitted" if terminated else "swe_gym_truncated")
    return outcome
