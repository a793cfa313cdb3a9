"""`TurnRunner`: one NeMo RL turn of every sample, as steps of the episode host's episodes.

A sample's reply becomes a command (`actions.read_action`) or tool calls (`actions.read_tool_calls`), run
on the host's episode keyed by the sample's episode id; the result becomes the sample's `Turn` (its
observation message, reward, whether it ended, its metadata). Which sample is which episode is
`episodes.EpisodeLedger`'s.
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from collections.abc import Mapping, Sequence
from typing import Any

from swe_gym.envs.actions import ActionFormatError
from swe_gym.envs.episode import Episode
from swe_gym.envs.host import EpisodeHost
from swe_gym.envs.prompt import SUBMIT
from swe_gym.envs.text import masked_note, to_observation
from swe_gym.errors import ConfigError
from swe_gym.integrations.nemo_rl.actions import read_action, read_tool_calls
from swe_gym.integrations.nemo_rl.config import SWEGymEnvConfig
from swe_gym.integrations.nemo_rl.episodes import EPISODE_TAG, EpisodeLedger, EpisodeOutcome, LiveEpisode, Plan, Turn

log = logging.getLogger(__name__)


class TurnRunner:
    """The turns of a batch, each sample's on its own episode; the failure rule is the host's."""

    def __init__(self, host: EpisodeHost, config: SWEGymEnvConfig, ledger: EpisodeLedger) -> None:
        self.host, self.config, self.ledger = host, config, ledger

    async def batch(self, logs: list[list[dict[str, Any]]], metadata: list[Any]) -> list[Turn]:
        await self._reap_idle()
        plans = self.ledger.plan(metadata)
        return list(await asyncio.gather(*(self._turn(log, plan) for log, plan in zip(logs, plans, strict=True))))

    async def _turn(self, message_log: list[dict[str, Any]], plan: Plan) -> Turn:
        if plan.kind == "reject":
            log.warning("swe_gym NeMo RL env: %s", plan.reason)
            return self._rejected(plan.reason, plan.meta or {})
        if plan.kind == "start":
            assert plan.task is not None
            live = LiveEpisode(plan.task, plan.episode_id, base=plan.meta or {})
            self.ledger.live[plan.episode_id] = live
        else:
            assert plan.live is not None
            live = plan.live
        try:
            async with asyncio.timeout(self.config.turn_timeout_s):
                return await self._run_turn(live, message_log, starting=plan.kind == "start")
        except TimeoutError:
            reason = f"the turn took over turn_timeout_s={self.config.turn_timeout_s:g}s"
            return await self._mask(live, reason)
        except ConfigError:  # the caller's mistake (the host's failure rule): the config must change
            await self._close_all([live])
            self.ledger.live.pop(live.episode_id, None)
            raise
        except Exception as exc:  # an infrastructure failure of one episode never sinks the batch
            log.warning("swe_gym NeMo RL env: episode %s failed", live.episode_id, exc_info=True)
            return await self._mask(live, f"{type(exc).__name__}: {exc}")

    async def _run_turn(self, live: LiveEpisode, message_log: list[dict[str, Any]], *, starting: bool) -> Turn:
        cfg = self.config
        live.last_used = time.monotonic()
        if starting:
            _, info = await self.host.start(live.episode_id, live.task)
            if info.get("masked"):  # the host's failure rule: a sandbox that cannot start masks the episode
                return await self._mask(live, info["masked_reason"])
        episode = self._episode(live)
        live.turns += 1
        try:
            calls = read_tool_calls(message_log, cfg)
            command = read_action(message_log, cfg) if calls is None else ""
        except ActionFormatError as exc:
            live.format_errors += 1
            text = f"[swe_gym: format error: {exc}. Nothing was run.]"
            if live.turns < cfg.max_steps:
                return self._continuing(live, to_observation(text, cfg.max_observation_chars), format_error=True)
            info: dict[str, Any] = {"step": episode.steps}
            observation, reward, terminated, truncated, info = await episode.truncate(text, info)
            return self._ended_turn(live, observation, reward, info, truncated=truncated, format_error=True)
        if calls is not None:
            return await self._tool_turn(live, calls)
        if live.turns >= cfg.max_steps and command.strip() != SUBMIT:
            # Episode counts only commands; this env counts every turn, so it ends the episode itself.
            result = await episode.step(command)
            observation, reward, terminated, truncated, info = result
            if not (terminated or truncated):
                observation, reward, terminated, truncated, info = await episode.truncate(observation, info)
        else:
            observation, reward, terminated, truncated, info = await episode.step(command)
        if terminated or truncated:
            return self._ended_turn(live, observation, reward, info, truncated=truncated)
        return self._continuing(live, observation)

    def _episode(self, live: LiveEpisode) -> Episode:
        episode = self.host.episode(live.episode_id)
        if episode is None:
            raise RuntimeError(f"episode {live.episode_id} has no running episode in the host")
        return episode

    async def _tool_turn(self, live: LiveEpisode, calls: Sequence[Any]) -> Turn:
        """Run a reply's calls in order, one step each, until one ends the episode; one tool message back."""
        episode, cfg = self._episode(live), self.config
        results: list[tuple[str | None, str]] = []
        for call in calls:
            observation, reward, terminated, truncated, info = await episode.act(call)
            results.append((info.get("tool_call_id"), observation))
            if terminated or truncated:
                break
        else:
            if live.turns >= cfg.max_steps:  # this env counts turns; the episode counts steps
                observation, reward, terminated, truncated, info = await episode.truncate(observation, info)
                results[-1] = (results[-1][0], observation)
        ids = [call_id for call_id, _ in results]
        message: dict[str, Any] = {"role": "tool"}
        if len(results) == 1:
            text = results[0][1]
            if ids[0] is not None:
                message["tool_call_id"] = ids[0]
        else:
            text = "\n".join(f"<tool_response>\n{output}\n</tool_response>" for _, output in results)
            message["tool_call_ids"] = ids
        if terminated or truncated:
            return self._ended_turn(live, text, reward, info, truncated=truncated, message=message)
        return self._continuing(live, text, message=message)

    # -- turn results -------------------------------------------------------------------------

    def _meta(self, live: LiveEpisode, **extra: Any) -> dict[str, Any]:
        meta = dict(live.base)
        meta.update(
            instance_id=live.task.instance_id,
            episode_id=live.episode_id,
            step=live.turns,
            masked=False,
            masked_reason=None,
        )
        meta.update(extra)
        return meta

    def _continuing(
        self, live: LiveEpisode, observation: str, *, format_error: bool = False, message: dict[str, Any] | None = None
    ) -> Turn:
        live.last_used = time.monotonic()
        meta = self._meta(live, terminated=False, truncated=False, format_error=format_error)
        return Turn(live.tagged(observation), 0.0, False, meta, None, message)

    def _ended_turn(
        self,
        live: LiveEpisode,
        observation: str,
        reward: float,
        info: Mapping[str, Any],
        *,
        truncated: bool,
        format_error: bool = False,
        message: dict[str, Any] | None = None,
    ) -> Turn:
        masked = bool(info.get("masked"))
        reward = self._masked_reward(live.task.instance_id) if masked else float(reward)
        outcome = EpisodeOutcome(
            episode_id=live.episode_id,
            instance_id=live.task.instance_id,
            reward=reward,
            resolved=bool(info.get("resolved")),
            masked=masked,
            masked_reason=info.get("masked_reason"),
            turns=live.turns,
            format_errors=live.format_errors,
            truncated=truncated,
        )
        self.ledger.remember(outcome)
        meta = self._meta(
            live,
            terminated=True,
            truncated=truncated,
            format_error=format_error,
            masked=masked,
            masked_reason=outcome.masked_reason,
            resolved=outcome.resolved,
            reward=reward,
        )
        return Turn(live.tagged(observation), reward, True, meta, info.get("patch"), message)

    def _rejected(self, reason: str, meta: dict[str, Any]) -> Turn:
        """A sample the env cannot act on: masked and ended, remembered (by the tag of its observation)."""
        instance_id = meta.get("instance_id") if isinstance(meta.get("instance_id"), str) else None
        episode_id = f"rejected-{uuid.uuid4().hex}"
        reward = self._masked_reward(instance_id)
        self.ledger.remember(EpisodeOutcome(episode_id, instance_id, reward, False, True, reason, 0, 0, False))
        meta = {**meta, "masked": True, "masked_reason": reason, "terminated": True, "truncated": False}
        text = to_observation(f"[swe_gym: sample masked: {reason}]", self.config.max_observation_chars)
        return Turn(f"{EPISODE_TAG.format(episode_id)}\n{text}", reward, True, meta, None)

    async def _mask(self, live: LiveEpisode, reason: str) -> Turn:
        """End a live episode as an infrastructure failure: sandbox closed, masked, a harmless reward."""
        self.ledger.live.pop(live.episode_id, None)
        await self._close_all([live])
        instance_id = live.task.instance_id
        reward = self._masked_reward(instance_id)
        turns, errors = live.turns, live.format_errors
        self.ledger.remember(
            EpisodeOutcome(live.episode_id, instance_id, reward, False, True, reason, turns, errors, True)
        )
        meta = self._meta(live, masked=True, masked_reason=reason, terminated=True, truncated=True, reward=reward)
        text = to_observation(masked_note(reason), self.config.max_observation_chars)
        return Turn(live.tagged(text), reward, True, meta, None)

    def _masked_reward(self, instance_id: str | None) -> float:
        """What a masked sample is paid where the trainer keeps it: the mean reward of this task's unmasked
        episodes the env remembers (so it moves no baseline and teaches nothing), else 0."""
        return self.ledger.task_mean(instance_id) if self.config.masked_reward == "task_mean" else 0.0

    # -- closing ------------------------------------------------------------------------------

    async def abandon(self, episode_ids: list[str]) -> None:
        await self._close_all(self.ledger.cut(episode_ids))

    async def _reap_idle(self) -> None:
        idle = self.ledger.idle(self.config.idle_timeout_s)
        if idle:
            log.warning("closing %d episodes not stepped for %gs", len(idle), self.config.idle_timeout_s)
            await self.abandon(idle)

    async def _close_all(self, lives: list[LiveEpisode]) -> None:
        results = await asyncio.gather(*(self.host.end(live.episode_id) for live in lives), return_exceptions=True)
        for live, result in zip(lives, results, strict=True):
            if isinstance(result, BaseException):
                log.warning("could not close the sandbox of episode %s: %s", live.episode_id, result)
