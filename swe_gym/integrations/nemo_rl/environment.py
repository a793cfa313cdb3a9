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

from collections.abc import Mapping, Sequence
from typing import Any

from swe_gym.envs.host import EpisodeHost
from swe_gym.errors import ConfigError
from swe_gym.integrations.nemo_rl.config import SWEGymEnvConfig, as_config
from swe_gym.integrations.nemo_rl.episodes import (
    EpisodeLedger,
    EpisodeOutcome,
    Turn,
    row_episode,
)
from swe_gym.integrations.nemo_rl.post_process import column, mask_rows, rollout_metrics
from swe_gym.integrations.nemo_rl.prompt import build_prompt
from swe_gym.integrations.nemo_rl.turns import TurnRunner
from swe_gym.integrations.nemo_rl.types import (
    BatchedDataDict,
    EnvironmentInterface,
    EnvironmentReturn,
    require_torch,
)
from swe_gym.tasks import SWETask
from swe_gym.tools import tool_schemas


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
        self.turns = TurnRunner(self.host, self.config, self.ledger)

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
        return self._result(self.host.call(self.turns.batch(*self._checked(message_log_batch, metadata))))

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
            self.host.call(self.turns.abandon(abandoned))
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
        self.host.call(self.turns.abandon(list(episode_ids)))

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
