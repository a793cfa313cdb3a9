"""`SWEGymEnvironment`: swe_gym episodes behind NeMo RL's environment contract.

``step(message_log_batch, metadata)`` runs one turn of every sample concurrently on swe_gym's
background event loop (a batch costs about its slowest member) and returns an `EnvironmentReturn`;
``global_post_process_and_metrics(batch)`` marks masked rows (`post_process`) and closes episodes the
trainer stopped on its own; ``shutdown()`` frees every sandbox. Which sample is which episode is
`episodes.EpisodeLedger`'s; how a reply becomes a command is `actions.read_action`'s; the episodes
themselves, keyed by their ids, are an `EpisodeHost`'s (`swe_gym.envs.host`, every front end's).

A reply's tool calls (OpenAI ``tool_calls`` in the message, or Hermes ``<tool_call>`` elements in its
text; `actions.read_tool_calls`) run in order, one episode step each, in one turn; their results come back
as one tool-role message (``{"role": "tool", "tool_call_id": ..., "content": ...}``; several results are
one ``<tool_response>`` element each, their ids in ``tool_call_ids``). A reply without exactly one command
(or call) gets a format-error observation; it counts as a turn, and ends the episode only when
``max_steps`` is reached. An infrastructure failure (a sandbox that cannot start or
dies, a grading that cannot run, a turn over ``turn_timeout_s``) ends the sample masked, never as a
silent 0; bad input never raises and never leaves a sandbox behind.
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
from swe_gym.envs.text import to_observation
from swe_gym.errors import ConfigError
from swe_gym.integrations.nemo_rl.actions import read_action, read_tool_calls
from swe_gym.integrations.nemo_rl.config import SWEGymEnvConfig, as_config
from swe_gym.integrations.nemo_rl.episodes import (
    EPISODE_TAG,
    EpisodeLedger,
    EpisodeOutcome,
    LiveEpisode,
    Plan,
    Turn,
    row_episode,
)
from swe_gym.integrations.nemo_rl.post_process import column, mask_rows, rollout_metrics
from swe_gym.integrations.nemo_rl.prompt import build_prompt
from swe_gym.integrations.nemo_rl.types import (
    BatchedDataDict,
    EnvironmentInterface,
    EnvironmentReturn,
    require_torch,
)
from swe_gym.tasks import SWETask
from swe_gym.tools import tool_schemas

log = logging.getLogger(__name__)


class SWEGymEnvironment(EnvironmentInterface):
    """swe_gym tasks as a NeMo RL environment; one episode per sample, keyed by its metadata.

    >>> env = SWEGymEnvironment({"tasks": "bundled", "provider": "local", "max_steps": 20})
    >>> log = [{"role": "user", "content": "..."}, {"role": "assistant", "content": "```bash\\nls\\n```"}]
    >>> out = env.step([log], [{"instance_id": env.tasks[0].instance_id}])
    >>> out.observations[0]["role"], bool(out.terminateds[0]), out.metadata[0]["episode_id"] != ""
    ('environment', False, True)
    >>> env.shutdown()

    Args:
        cfg: a `SWEGymEnvConfig` or its dict (the YAML ``env.<name>`` section NeMo RL passes in).
    """

    def __init__(self, cfg: SWEGymEnvConfig | Mapping[str, Any] | None = None) -> None:
        require_torch()  # fail now, with the install hint, not on the first step
        self.config = as_config(cfg)
        self.host = EpisodeHost(self.config)
        self.tasks: list[SWETask] = self.host.tasks
        self.ledger = EpisodeLedger(
            self.tasks, max_live=self.config.max_live_episodes, max_remembered=self.config.max_remembered
        )

    # -- NeMo RL API ----------------------------------------------------------------------

    def step(
        self,
        message_log_batch: list[list[dict[str, Any]]],
        metadata: list[dict[str, Any] | None],
        return_extracted_answer: bool = False,
    ) -> EnvironmentReturn:
        """One turn for every sample of the batch, all concurrently.

        ``return_extracted_answer`` (NeMo RL's eval path passes it) changes nothing: ``answers`` always
        hold each ended episode's patch.
        """
        return self._result(self.host.call(self._step_batch(*self._checked(message_log_batch, metadata))))

    def global_post_process_and_metrics(self, batch: BatchedDataDict) -> tuple[BatchedDataDict, dict]:
        """Mark masked samples (``batch["mask_sample"]``, ``loss_multiplier`` 0, and ``total_reward`` the
        mean of the unmasked samples of the same prompt, so the group's baseline does not move), close
        episodes the trainer stopped on its own, and return swe_gym metrics for the batch.

        NeMo RL never calls this itself: `register_with_nemo_rl` installs `install_rollout_hook`, which
        calls it on every rollout's batch."""
        infos = column(batch, "extra_env_info")
        logs = column(batch, "message_log")
        rows = max(len(infos), len(logs))
        episode_ids = [
            row_episode(infos[i] if i < len(infos) else None, logs[i] if i < len(logs) else None) for i in range(rows)
        ]
        abandoned = [i for i in episode_ids if i is not None and i in self.ledger.live]
        if abandoned:  # cut by NeMo RL (turn or sequence limit) without the env hearing of it
            self.host.call(self._abandon(abandoned))
        outcomes = [self.ledger.ended.get(i) if i is not None else None for i in episode_ids]
        if rows:
            mask_rows(batch, [bool(o and o.masked) for o in outcomes], logs)
        return batch, rollout_metrics(rows, outcomes, len(abandoned))

    def rollout_done(self, batch: BatchedDataDict) -> tuple[BatchedDataDict, dict]:
        """What `swe_gym.integrations.nemo_rl.hook` calls after each NeMo RL rollout (and how it knows
        an env is ours): `global_post_process_and_metrics` of the rollout's rows."""
        return self.global_post_process_and_metrics(batch)

    def shutdown(self) -> None:
        """Close every live episode's sandbox (concurrently) and the warm pool; idempotent."""
        self.ledger.live = {}
        self.host.close()

    # -- extras ---------------------------------------------------------------------------

    @property
    def live_episodes(self) -> list[str]:
        return list(self.ledger.live)

    def outcome(self, episode_id: str) -> EpisodeOutcome | None:
        """How an ended episode ended (while the env still remembers it)."""
        return self.ledger.ended.get(episode_id)

    def tool_schemas(self) -> list[dict[str, Any]]:
        """The OpenAI schemas of the tools this env's episodes take (for a chat template's ``tools=``, or a
        generation server's); empty when it takes no tool calls."""
        return tool_schemas(self.config.tools) if self.config.tools else []

    def prompt(self, instance_id: str) -> str:
        """`build_prompt` for one of this env's tasks."""
        if instance_id not in self.ledger.by_id:
            raise ConfigError(f"unknown instance_id {instance_id!r}; this env has {len(self.tasks)} tasks")
        return build_prompt(self.ledger.by_id[instance_id], self.config)

    def close_episodes(self, episode_ids: Sequence[str]) -> None:
        """End these live episodes now (e.g. a custom loop dropped them): sandboxes closed, remembered as cut."""
        self.host.call(self._abandon(list(episode_ids)))

    # -- a batch ----------------------------------------------------------------------------

    def _checked(self, message_log_batch: list[Any], metadata: list[Any]) -> tuple[list[Any], list[Any]]:
        if self.host.closed:
            raise RuntimeError("this SWEGymEnvironment was shut down; make a new one")
        if len(message_log_batch) != len(metadata):
            raise ValueError(
                f"step got {len(message_log_batch)} message logs but {len(metadata)} metadata entries; "
                "NeMo RL sends one of each per sample"
            )
        return list(message_log_batch), list(metadata)

    def _result(self, turns: list[Turn]) -> EnvironmentReturn:
        torch = require_torch()
        stops = self.config.next_stop_strings()
        return EnvironmentReturn(
            observations=[
                {"role": self.config.observation_role, **(t.message or {}), "content": t.observation} for t in turns
            ],
            metadata=[t.metadata for t in turns],
            next_stop_strings=[None if t.terminated else stops for t in turns],
            rewards=torch.tensor([t.reward for t in turns], dtype=torch.float32),
            terminateds=torch.tensor([t.terminated for t in turns], dtype=torch.bool),
            answers=[t.answer for t in turns],
        )

    async def _step_batch(self, logs: list[list[dict[str, Any]]], metadata: list[Any]) -> list[Turn]:
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
        text = to_observation(f"[swe_gym: episode masked: {reason}]", self.config.max_observation_chars)
        return Turn(live.tagged(text), reward, True, meta, None)

    def _masked_reward(self, instance_id: str | None) -> float:
        """What a masked sample is paid where the trainer keeps it: the mean reward of this task's unmasked
        episodes the env remembers (so it moves no baseline and teaches nothing), else 0."""
        return self.ledger.task_mean(instance_id) if self.config.masked_reward == "task_mean" else 0.0

    # -- closing ------------------------------------------------------------------------------

    async def _abandon(self, episode_ids: list[str]) -> None:
        await self._close_all(self.ledger.cut(episode_ids))

    async def _reap_idle(self) -> None:
        idle = self.ledger.idle(self.config.idle_timeout_s)
        if idle:
            log.warning("closing %d episodes not stepped for %gs", len(idle), self.config.idle_timeout_s)
            await self._abandon(idle)

    async def _close_all(self, lives: list[LiveEpisode]) -> None:
        results = await asyncio.gather(*(self.host.end(live.episode_id) for live in lives), return_exceptions=True)
        for live, result in zip(lives, results, strict=True):
            if isinstance(result, BaseException):
                log.warning("could not close the sandbox of episode %s: %s", live.episode_id, result)
