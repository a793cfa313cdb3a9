"""swe_gym episodes as a NeMo RL environment.

`SWEGymEnvironment` meets NeMo RL's environment contract
(``nemo_rl/environments/interfaces.py``): ``step(message_log_batch, metadata)``
returns an `EnvironmentReturn` (``observations``, ``metadata``,
``next_stop_strings``, ``rewards``, ``terminateds``, ``answers``) with rewards
and terminateds as torch tensors; ``global_post_process_and_metrics(batch)``
returns ``(batch, metrics)``; ``shutdown()`` frees every sandbox. As a Ray actor
it is `SWEGymEnvironmentActor` (``ray.remote(SWEGymEnvironment)``, made on first
use), which is what NeMo RL's registries name. ``nemo-rl`` on PyPI is an empty
placeholder, so when NeMo RL cannot be imported this module defines
structurally identical `EnvironmentReturn` and `EnvironmentInterface`.

**Episodes are keyed by their metadata** (NeMo RL's ``extra_env_info``):

- an entry with ``instance_id`` and no ``episode_id`` starts a new episode on that
  task; the env gives it an ``episode_id`` in the metadata it returns, which NeMo
  RL hands back on the next turn. (Datasets should carry only ``instance_id``:
  GRPO repeats each prompt, and every repeat must become its own episode.)
- an entry whose ``episode_id`` is live steps that episode;
- an entry with an ``episode_id`` the env never saw starts it under that id if
  its ``step`` is 0 or missing (callers that pick their own ids), else it is
  *unknown* (e.g. the env actor was restarted): the sample ends masked;
- an entry for an episode that already ended, an ``instance_id`` the env does
  not have, a repeated ``episode_id`` within one batch, or no usable metadata at
  all: the sample ends masked with a reason. Bad input never raises and never
  leaves a sandbox behind.

**Actions** come from the last message, which must be the assistant's: exactly
one fenced ``bash``/``sh`` block (``action_format="bash_block"``, the
mini-swe-agent convention) or one ``<bash>...</bash>`` element
(``action_format="tag"``, tag configurable). A block holding only ``submit``
ends the episode and grades it. A reply without exactly one command gets a
format-error observation; it counts as a turn, and ends the episode only when
``max_steps`` is reached. All episodes of a batch run concurrently on swe_gym's
background event loop, so a batch costs about its slowest member.

**Masking.** An infrastructure failure (sandbox that cannot start or dies, a
grading that cannot run, a turn over ``turn_timeout_s``) ends the sample with
reward 0.0, ``terminated``, and ``masked: True`` plus ``masked_reason`` in the
returned metadata, never as a silent 0. NeMo RL keeps returned metadata only for
samples that continue, so the env also remembers each ended episode;
``global_post_process_and_metrics(batch)`` then sets ``batch["mask_sample"]``
(which NeMo RL's GRPO turns into ``loss_multiplier = 0``) and zeroes
``batch["loss_multiplier"]`` for those rows, and closes episodes the trainer
stopped on its own (turn or sequence limits).
"""

from __future__ import annotations

import abc
import asyncio
import logging
import re
import time
import uuid
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Generic, Literal, NamedTuple, TypeVar

from pydantic import ConfigDict, Field, ValidationError

from swe_gym.envs.episode import Episode, make_settings, warm_up
from swe_gym.envs.options import EnvOptions, TaskSelection
from swe_gym.envs.prompt import SUBMIT, task_prompt
from swe_gym.envs.text import to_observation
from swe_gym.errors import ConfigError, validation_problems
from swe_gym.grading.certificate import env_tasks
from swe_gym.sandbox.loop import background_loop, run_sync
from swe_gym.tasks import SWETask, load_tasks

if TYPE_CHECKING:
    from torch import Tensor

log = logging.getLogger(__name__)

#: What NeMo RL's registries name: the Ray actor class (see `register_with_nemo_rl`).
ACTOR_CLASS_FQN = "swe_gym.integrations.nemo_rl.SWEGymEnvironmentActor"
#: Starts an episode's first observation; `_row_episode` reads it back from a finished batch row.
EPISODE_TAG = "[swe_gym episode {}]"
_EPISODE_TAG = re.compile(r"^\[swe_gym episode ([\w-]+)\]")
#: The name `register_with_nemo_rl` registers by default (``data.default.env_name`` and the ``env:`` key in YAML).
DEFAULT_ENV_NAME = "swe_gym"

MetadataT = TypeVar("MetadataT")

try:  # NeMo RL's own types when it is installed, so isinstance and type checks see one class
    from nemo_rl.distributed.batched_data_dict import BatchedDataDict
    from nemo_rl.environments.interfaces import EnvironmentInterface, EnvironmentReturn

    NEMO_RL_AVAILABLE = True
    log.info("swe_gym NeMo RL env: using NeMo RL's own EnvironmentInterface and EnvironmentReturn")
except ImportError as _exc:  # the PyPI `nemo-rl` is an empty placeholder: same names, same fields, same order
    NEMO_RL_AVAILABLE = False
    if _exc.name is not None and _exc.name.split(".")[0] == "nemo_rl":
        log.info("swe_gym NeMo RL env: NeMo RL is not installed; using swe_gym's copies of its types")
    else:  # NeMo RL is there but one of its own imports failed: say so, never switch silently
        log.warning("swe_gym NeMo RL env: NeMo RL failed to import (%s); using swe_gym's copies of its types", _exc)
    BatchedDataDict = dict  # type: ignore[assignment,misc]  # NeMo RL's is a dict-like UserDict

    class EnvironmentReturn(NamedTuple, Generic[MetadataT]):  # type: ignore[no-redef]
        """Batched return of ``step`` (NeMo RL ``nemo_rl/environments/interfaces.py``).

        observations: one ``{"role": ..., "content": ...}`` message per sample.
        metadata: the updated metadata (``extra_env_info``) per sample.
        next_stop_strings: stop strings for the next turn per sample (or None).
        rewards: ``Tensor[B]`` (or a dict of named ``Tensor[B]`` for multi-reward).
        terminateds: ``Tensor[B]``, whether each episode ended this turn.
        answers: per-sample answers (here: the final patch), or None.
        """

        observations: list[dict[str, str]]
        metadata: list[MetadataT]
        next_stop_strings: list[list[str] | None] | list[None]
        rewards: Tensor | dict[str, Tensor]
        terminateds: Tensor
        answers: list[str | None] | None

    class EnvironmentInterface(abc.ABC, Generic[MetadataT]):  # type: ignore[no-redef]
        """NeMo RL's environment contract (``nemo_rl/environments/interfaces.py``)."""

        @abc.abstractmethod
        def step(
            self, message_log_batch: list[list[dict[str, Any]]], metadata: list[MetadataT]
        ) -> EnvironmentReturn[MetadataT]:
            """Run one turn for a batch of message logs; metadata is each sample's ``extra_env_info``."""

        @abc.abstractmethod
        def global_post_process_and_metrics(self, batch: BatchedDataDict) -> tuple[BatchedDataDict, dict]:
            """Post-process the finished rollout batch and return it with metrics."""


class SWEGymEnvConfig(EnvOptions, TaskSelection):
    """The ``env.<name>`` section of a NeMo RL YAML: what `SWEGymEnvironment` takes.

    The episode options and the task selection are `swe_gym.envs.options`' (the same names, defaults
    and meaning as for ``swe_gym.SWEEnv``); the rest is how NeMo RL's turns map onto episodes.
    """

    model_config = ConfigDict(extra="forbid")

    provider: str | dict[str, Any] = Field(default="local", description="a provider name or {type: ..., ...} config")
    action_format: Literal["bash_block", "tag"] = "bash_block"
    action_tag: str = Field(default="bash", pattern=r"^[A-Za-z][\w.-]*$")
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

    def episode_options(self) -> EnvOptions:
        return EnvOptions(**{name: getattr(self, name) for name in EnvOptions.model_fields})

    def next_stop_strings(self) -> list[str] | None:
        if self.stop_strings is not None:
            return list(self.stop_strings)
        return [f"</{self.action_tag}>"] if self.action_format == "tag" else None


# -- actions ------------------------------------------------------------------------------

_COMMAND_LANGUAGES = frozenset({"", "bash", "sh", "shell", "console"})
_FENCE = re.compile(r"^[ \t]*```[ \t]*([\w+-]*)[^\n]*\n(.*?)^[ \t]*```[ \t]*$", re.MULTILINE | re.DOTALL)


class ActionFormatError(ValueError):
    """The reply holds no single command; its message is shown to the model."""


def parse_action(text: str, *, action_format: str = "bash_block", tag: str = "bash") -> str:
    """The command in ``text``: its one fenced bash block, or its one ``<tag>...</tag>`` element."""
    if action_format == "tag":
        found = re.findall(rf"<{re.escape(tag)}>(.*?)</{re.escape(tag)}>", text, re.DOTALL)
        how = f"one <{tag}>...</{tag}> element"
    else:
        found = [body for language, body in _FENCE.findall(text) if language.lower() in _COMMAND_LANGUAGES]
        how = "one ```bash block"
    if not found:
        raise ActionFormatError(f"no command found: reply with exactly {how} holding the command")
    if len(found) > 1:
        raise ActionFormatError(f"your reply holds {len(found)} commands: reply with exactly {how}")
    command = found[0].strip("\n")
    if not command.strip():
        raise ActionFormatError(f"the command is empty: reply with exactly {how} holding the command")
    return command


def last_assistant_text(message_log: Sequence[Mapping[str, Any]] | None) -> str:
    """The content of the log's last message, which must be the assistant's turn."""
    if not message_log:
        raise ActionFormatError("the message log is empty: there is no assistant reply to act on")
    last = message_log[-1]
    if not isinstance(last, Mapping) or last.get("role") != "assistant":
        role = last.get("role") if isinstance(last, Mapping) else type(last).__name__
        raise ActionFormatError(f"the last message is not the assistant's (role {role!r}): nothing to act on")
    content = last.get("content")
    return content if isinstance(content, str) else str(content)


def build_prompt(task: SWETask, config: SWEGymEnvConfig | Mapping[str, Any] | None = None) -> str:
    """The first user message for ``task``: the issue, the rules, and how to write an action.

    A NeMo RL data processor puts it in the datum's ``message_log`` and ``{"instance_id": ...}``
    in its ``extra_env_info``.
    """
    cfg = _as_config(config)
    if cfg.action_format == "tag":
        tag = cfg.action_tag
        how = f"Put the command in one <{tag}>...</{tag}> element, e.g. <{tag}>ls</{tag}>."
    else:
        how = "Put the command in exactly one fenced block, e.g.\n```bash\nls\n```"
    rules = task_prompt(task, workdir=task.workdir, step_timeout=cfg.step_timeout, max_steps=cfg.max_steps)
    return f"{rules}\nReply format: think, then give one command. {how}\nTo submit, the command is `{SUBMIT}`.\n"


# -- the environment ----------------------------------------------------------------------


@dataclass
class _Live:
    episode: Episode
    episode_id: str
    base: dict[str, Any] = field(default_factory=dict)  # the metadata the episode started with
    turns: int = 0
    format_errors: int = 0
    last_used: float = field(default_factory=time.monotonic)


@dataclass(frozen=True)
class EpisodeOutcome:
    """What the env remembers of an ended episode."""

    episode_id: str
    instance_id: str | None
    reward: float
    resolved: bool
    masked: bool
    masked_reason: str | None
    turns: int
    format_errors: int
    truncated: bool


class _Turn(NamedTuple):
    observation: str
    reward: float
    terminated: bool
    metadata: dict[str, Any]
    answer: str | None


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
        _torch()  # fail now, with the install hint, not on the first step
        self.config = _as_config(cfg)
        self.settings = make_settings(self.config.provider, self.config.episode_options())
        self.tasks: list[SWETask] = env_tasks(
            load_tasks(
                self.config.tasks,
                split=self.config.split,
                instance_ids=self.config.instance_ids,
                limit=self.config.limit,
            ),
            self.settings.certificate,
            self.config.uncertified,
        )
        self._by_id = {task.instance_id: task for task in self.tasks}
        self._live: dict[str, _Live] = {}
        self._ended: OrderedDict[str, EpisodeOutcome] = OrderedDict()
        self._closed = False
        run_sync(warm_up(self.settings, self.tasks))

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
        return self._result(run_sync(self._step_batch(*self._checked(message_log_batch, metadata))))

    def global_post_process_and_metrics(self, batch: BatchedDataDict) -> tuple[BatchedDataDict, dict]:
        """Mark masked samples (``batch["mask_sample"]``, ``loss_multiplier`` 0, and ``total_reward`` the
        mean of the unmasked samples of the same prompt, so the group's baseline does not move), close
        episodes the trainer stopped on its own, and return swe_gym metrics for the batch.

        NeMo RL never calls this itself: `register_with_nemo_rl` installs `install_rollout_hook`, which
        calls it on every rollout's batch."""
        torch = _torch()
        infos = _column(batch, "extra_env_info")
        logs = _column(batch, "message_log")
        rows = max(len(infos), len(logs))
        episode_ids = [
            self._row_episode(infos[i] if i < len(infos) else None, logs[i] if i < len(logs) else None)
            for i in range(rows)
        ]
        abandoned = [i for i in episode_ids if i is not None and i in self._live]
        if abandoned:  # cut by NeMo RL (turn or sequence limit) without the env hearing of it
            run_sync(self._abandon(abandoned))
        outcomes = [self._ended.get(i) if i is not None else None for i in episode_ids]
        masked = torch.tensor([bool(o and o.masked) for o in outcomes], dtype=torch.bool)
        if rows:
            earlier = batch["mask_sample"] if "mask_sample" in batch else None  # e.g. set by another env
            if earlier is not None and len(earlier) == rows:
                masked = masked | torch.as_tensor(earlier, dtype=torch.bool)
            batch["mask_sample"] = masked
            if "total_reward" in batch and bool(masked.any()):
                batch["total_reward"] = _group_mean_for_masked(batch, masked.tolist(), logs)
            if "loss_multiplier" in batch:
                multiplier = batch["loss_multiplier"]
                if isinstance(multiplier, torch.Tensor):
                    batch["loss_multiplier"] = multiplier * (~masked).to(multiplier.dtype)
                else:
                    batch["loss_multiplier"] = [
                        0.0 if m else x for m, x in zip(masked.tolist(), multiplier, strict=False)
                    ]
        known = [o for o in outcomes if o is not None]
        metrics = {
            "swe_gym/num_samples": rows,
            "swe_gym/num_episodes": len(known),
            "swe_gym/unmatched_samples": rows - len(known),
            "swe_gym/resolved_rate": _mean([o.resolved for o in known]),
            "swe_gym/masked_rate": _mean([o.masked for o in known]),
            "swe_gym/truncated_rate": _mean([o.truncated for o in known]),
            "swe_gym/mean_reward": _mean([o.reward for o in known]),
            "swe_gym/mean_steps": _mean([o.turns for o in known]),
            "swe_gym/format_errors_per_episode": _mean([o.format_errors for o in known]),
            "swe_gym/abandoned_episodes": len(abandoned),
        }
        return batch, metrics

    def rollout_done(self, batch: BatchedDataDict) -> tuple[BatchedDataDict, dict]:
        """What `swe_gym.integrations.nemo_rl_hook` calls after each NeMo RL rollout (and how it knows
        an env is ours): `global_post_process_and_metrics` of the rollout's rows."""
        return self.global_post_process_and_metrics(batch)

    def shutdown(self) -> None:
        """Close every live episode's sandbox (concurrently) and the warm pool; idempotent."""
        if self._closed:
            return
        self._closed = True
        live, self._live = list(self._live.values()), {}
        run_sync(self._close_all(live))
        if self.settings.pool is not None:
            run_sync(self.settings.pool.close())

    # -- extras ---------------------------------------------------------------------------

    def _checked(self, message_log_batch: list[Any], metadata: list[Any]) -> tuple[list[Any], list[Any]]:
        if self._closed:
            raise RuntimeError("this SWEGymEnvironment was shut down; make a new one")
        if len(message_log_batch) != len(metadata):
            raise ValueError(
                f"step got {len(message_log_batch)} message logs but {len(metadata)} metadata entries; "
                "NeMo RL sends one of each per sample"
            )
        return list(message_log_batch), list(metadata)

    def _result(self, turns: list[_Turn]) -> EnvironmentReturn:
        torch = _torch()
        stops = self.config.next_stop_strings()
        return EnvironmentReturn(
            observations=[{"role": self.config.observation_role, "content": t.observation} for t in turns],
            metadata=[t.metadata for t in turns],
            next_stop_strings=[None if t.terminated else stops for t in turns],
            rewards=torch.tensor([t.reward for t in turns], dtype=torch.float32),
            terminateds=torch.tensor([t.terminated for t in turns], dtype=torch.bool),
            answers=[t.answer for t in turns],
        )

    @property
    def live_episodes(self) -> list[str]:
        return list(self._live)

    def outcome(self, episode_id: str) -> EpisodeOutcome | None:
        """How an ended episode ended (while the env still remembers it)."""
        return self._ended.get(episode_id)

    def prompt(self, instance_id: str) -> str:
        """`build_prompt` for one of this env's tasks."""
        if instance_id not in self._by_id:
            raise ConfigError(f"unknown instance_id {instance_id!r}; this env has {len(self.tasks)} tasks")
        return build_prompt(self._by_id[instance_id], self.config)

    def close_episodes(self, episode_ids: Sequence[str]) -> None:
        """End these live episodes now (e.g. a custom loop dropped them): sandboxes closed, remembered as cut."""
        run_sync(self._abandon(list(episode_ids)))

    # -- internals -------------------------------------------------------------------------

    @staticmethod
    def _row_episode(info: Any, message_log: Any) -> str | None:
        """The episode a finished batch row belongs to: the tag of its first environment message
        (which NeMo RL keeps even for a sample that ended, or was cut, on its first turn), else the
        ``episode_id`` of its ``extra_env_info``. Never its history: GRPO's repeats share one."""
        for message in message_log if isinstance(message_log, Sequence) else ():
            content = message.get("content") if isinstance(message, Mapping) else None
            if isinstance(content, str) and message.get("role") != "assistant":  # the model cannot pose as one
                found = _EPISODE_TAG.match(content)
                if found:
                    return found.group(1)
        episode_id = info.get("episode_id") if isinstance(info, Mapping) else None
        return episode_id if isinstance(episode_id, str) else None

    async def _step_batch(self, logs: list[list[dict[str, Any]]], metadata: list[Any]) -> list[_Turn]:
        await self._reap_idle()
        claimed: set[str] = set()
        starts = [0]
        plans = [self._plan(entry, claimed, starts) for entry in metadata]
        return list(await asyncio.gather(*(self._turn(log, plan) for log, plan in zip(logs, plans, strict=True))))

    def _plan(self, entry: Any, claimed: set[str], starts: list[int]) -> tuple[str, Any]:
        """Decide, before anything runs, what each sample is: ("step", live), ("start", (id, task, meta)),
        or ("reject", (reason, meta)). Claims ids so one batch cannot step one episode twice."""
        if not isinstance(entry, Mapping):
            return "reject", (
                f"metadata must be a dict with an instance_id (NeMo RL extra_env_info), got {type(entry).__name__}",
                {},
            )
        meta = dict(entry)
        episode_id = meta.get("episode_id")
        if episode_id is not None and not isinstance(episode_id, str):
            return "reject", (f"episode_id must be a string, got {type(episode_id).__name__}", meta)
        if episode_id in claimed:
            return "reject", (f"episode {episode_id} appears more than once in this batch", meta)
        if episode_id is not None:
            claimed.add(episode_id)
            if episode_id in self._live:
                return "step", self._live[episode_id]
            if episode_id in self._ended:
                return "reject", (f"episode {episode_id} already ended; NeMo RL sent it another turn", meta)
            if meta.get("step") not in (None, 0):
                return "reject", (
                    f"unknown episode {episode_id} (at step {meta.get('step')}): this env never "
                    "started it, or has forgotten it (was the env actor restarted?)",
                    meta,
                )
        instance_id = meta.get("instance_id")
        if instance_id not in self._by_id:
            return "reject", (f"unknown instance_id {instance_id!r}; this env has {len(self.tasks)} tasks", meta)
        if len(self._live) + starts[0] >= self.config.max_live_episodes:
            limit = self.config.max_live_episodes
            return "reject", (f"max_live_episodes={limit} episodes are live: end some before starting more", meta)
        new_id = episode_id or uuid.uuid4().hex
        claimed.add(new_id)
        starts[0] += 1
        return "start", (new_id, self._by_id[instance_id], meta)

    async def _turn(self, message_log: list[dict[str, Any]], plan: tuple[str, Any]) -> _Turn:
        kind, payload = plan
        if kind == "reject":
            reason, meta = payload
            log.warning("swe_gym NeMo RL env: %s", reason)
            return self._rejected(reason, meta)
        if kind == "start":
            episode_id, task, meta = payload
            live = _Live(Episode(self.settings, task), episode_id, base=meta)
            self._live[episode_id] = live
        else:
            live = payload
        try:
            return await asyncio.wait_for(
                self._run_turn(live, message_log, starting=kind == "start"), self.config.turn_timeout_s
            )
        except TimeoutError:
            reason = f"the turn took over turn_timeout_s={self.config.turn_timeout_s:g}s"
            return await self._mask(live, reason)
        except Exception as exc:  # an infrastructure failure of one episode never sinks the batch
            log.warning("swe_gym NeMo RL env: episode %s failed", live.episode_id, exc_info=True)
            return await self._mask(live, f"{type(exc).__name__}: {exc}")

    async def _run_turn(self, live: _Live, message_log: list[dict[str, Any]], *, starting: bool) -> _Turn:
        episode, cfg = live.episode, self.config
        live.last_used = time.monotonic()
        if starting:
            await episode.start()
        live.turns += 1
        try:
            command = parse_action(
                last_assistant_text(message_log), action_format=cfg.action_format, tag=cfg.action_tag
            )
        except ActionFormatError as exc:
            live.format_errors += 1
            text = f"[swe_gym: format error: {exc}. Nothing was run.]"
            if live.turns < cfg.max_steps:
                return self._continuing(live, to_observation(text, cfg.max_observation_chars), format_error=True)
            info: dict[str, Any] = {"step": episode.steps}
            observation, reward, terminated, truncated, info = await episode.truncate(text, info)
            return self._ended_turn(live, observation, reward, info, truncated=truncated, format_error=True)
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

    def _meta(self, live: _Live, **extra: Any) -> dict[str, Any]:
        meta = dict(live.base)
        meta.update(
            instance_id=live.episode.task.instance_id,
            episode_id=live.episode_id,
            step=live.turns,
            masked=False,
            masked_reason=None,
        )
        meta.update(extra)
        return meta

    def _continuing(self, live: _Live, observation: str, *, format_error: bool = False) -> _Turn:
        live.last_used = time.monotonic()
        meta = self._meta(live, terminated=False, truncated=False, format_error=format_error)
        return _Turn(self._tagged(live, observation), 0.0, False, meta, None)

    def _ended_turn(
        self,
        live: _Live,
        observation: str,
        reward: float,
        info: Mapping[str, Any],
        *,
        truncated: bool,
        format_error: bool = False,
    ) -> _Turn:
        masked = bool(info.get("masked"))
        reward = self._masked_reward(live.episode.task.instance_id) if masked else float(reward)
        outcome = EpisodeOutcome(
            episode_id=live.episode_id,
            instance_id=live.episode.task.instance_id,
            reward=reward,
            resolved=bool(info.get("resolved")),
            masked=masked,
            masked_reason=info.get("masked_reason"),
            turns=live.turns,
            format_errors=live.format_errors,
            truncated=truncated,
        )
        self._remember(outcome)
        self._live.pop(live.episode_id, None)
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
        return _Turn(self._tagged(live, observation), reward, True, meta, info.get("patch"))

    def _rejected(self, reason: str, meta: dict[str, Any]) -> _Turn:
        """A sample the env cannot act on: masked and ended, remembered (by the tag of its observation)."""
        instance_id = meta.get("instance_id") if isinstance(meta.get("instance_id"), str) else None
        episode_id = f"rejected-{uuid.uuid4().hex}"
        reward = self._masked_reward(instance_id)
        self._remember(EpisodeOutcome(episode_id, instance_id, reward, False, True, reason, 0, 0, False))
        meta = {**meta, "masked": True, "masked_reason": reason, "terminated": True, "truncated": False}
        text = to_observation(f"[swe_gym: sample masked: {reason}]", self.config.max_observation_chars)
        return _Turn(f"{EPISODE_TAG.format(episode_id)}\n{text}", reward, True, meta, None)

    async def _mask(self, live: _Live, reason: str) -> _Turn:
        """End a live episode as an infrastructure failure: sandbox closed, masked, a harmless reward."""
        self._live.pop(live.episode_id, None)
        live.episode.done = True
        try:
            await live.episode.close()
        except Exception as exc:
            log.warning("could not close the sandbox of episode %s: %s", live.episode_id, exc)
        instance_id = live.episode.task.instance_id
        reward = self._masked_reward(instance_id)
        turns, errors = live.turns, live.format_errors
        self._remember(EpisodeOutcome(live.episode_id, instance_id, reward, False, True, reason, turns, errors, True))
        meta = self._meta(live, masked=True, masked_reason=reason, terminated=True, truncated=True, reward=reward)
        text = to_observation(f"[swe_gym: episode masked: {reason}]", self.config.max_observation_chars)
        return _Turn(self._tagged(live, text), reward, True, meta, None)

    @staticmethod
    def _tagged(live: _Live, observation: str) -> str:
        """The episode's first observation starts with its tag: how a finished batch row finds its episode."""
        return f"{EPISODE_TAG.format(live.episode_id)}\n{observation}" if live.turns <= 1 else observation

    def _masked_reward(self, instance_id: str | None) -> float:
        """What a masked sample is paid where the trainer keeps it: the mean reward of this task's unmasked
        episodes the env remembers (so it moves no baseline and teaches nothing), else 0."""
        if self.config.masked_reward != "task_mean":
            return 0.0
        return _mean([o.reward for o in self._ended.values() if o.instance_id == instance_id and not o.masked])

    def _remember(self, outcome: EpisodeOutcome) -> None:
        self._ended[outcome.episode_id] = outcome
        while len(self._ended) > self.config.max_remembered:
            self._ended.popitem(last=False)

    async def _abandon(self, episode_ids: list[str]) -> None:
        lives = [self._live.pop(i) for i in dict.fromkeys(episode_ids) if i in self._live]
        for live in lives:
            outcome = EpisodeOutcome(
                live.episode_id,
                live.episode.task.instance_id,
                0.0,
                False,
                False,
                None,
                live.turns,
                live.format_errors,
                True,
            )
            self._remember(outcome)
        await self._close_all(lives)

    async def _reap_idle(self) -> None:
        cutoff = time.monotonic() - self.config.idle_timeout_s
        idle = [i for i, live in self._live.items() if live.last_used < cutoff]
        if idle:
            log.warning("closing %d episodes not stepped for %gs", len(idle), self.config.idle_timeout_s)
            await self._abandon(idle)

    @staticmethod
    async def _close_all(lives: list[_Live]) -> None:
        results = await asyncio.gather(*(live.episode.close() for live in lives), return_exceptions=True)
        for live, result in zip(lives, results, strict=True):
            if isinstance(result, BaseException):
                log.warning("could not close the sandbox of episode %s: %s", live.episode_id, result)


# -- helpers -------------------------------------------------------------------------------


def _as_config(cfg: SWEGymEnvConfig | Mapping[str, Any] | None) -> SWEGymEnvConfig:
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


def _torch() -> Any:
    try:
        import torch
    except ImportError:
        raise ConfigError(
            "the NeMo RL environment returns torch tensors: install torch (pip install 'swe_gym[nemo_rl]')"
        ) from None
    return torch


def _group_mean_for_masked(batch: Any, masked: list[bool], logs: list[Any]) -> Any:
    """``total_reward`` with each masked row's value replaced by the mean of the unmasked rows of its prompt
    group (GRPO's repeats of one prompt: the same messages before the first reply; ``idx`` is no key, the
    async rollout renumbers it), or 0 when all of them are masked."""
    torch = _torch()
    rewards = torch.as_tensor(batch["total_reward"], dtype=torch.float32).clone()

    def prompt(i: int) -> str:
        log = logs[i] if i < len(logs) else []
        before: list[Any] = []
        for message in log:
            if isinstance(message, Mapping) and message.get("role") == "assistant":
                break
            before.append((message.get("role"), message.get("content")) if isinstance(message, Mapping) else message)
        return repr(before)

    keys = [prompt(i) for i in range(len(masked))]
    for i, is_masked in enumerate(masked):
        if is_masked:
            rewards[i] = _mean([float(rewards[j]) for j, key in enumerate(keys) if key == keys[i] and not masked[j]])
    return rewards


def _column(batch: Any, key: str) -> list[Any]:
    try:
        value = batch[key] if key in batch else []
    except (TypeError, KeyError):
        return []
    return list(value) if value is not None else []


def _mean(values: Sequence[float | bool | int]) -> float:
    return float(sum(values)) / len(values) if values else 0.0


# -- Ray and NeMo RL registries -------------------------------------------------------------


class _ActorEnvironment(SWEGymEnvironment):
    """What the Ray actor runs. Its methods are coroutines, so Ray makes it an asyncio actor that serves
    many calls at once (NeMo RL's async rollout sends one ``step`` per sample): each call's episodes run
    on swe_gym's own loop, and the actor's loop only waits for them."""

    async def step(  # type: ignore[override]
        self,
        message_log_batch: list[list[dict[str, Any]]],
        metadata: list[dict[str, Any] | None],
        return_extracted_answer: bool = False,
    ) -> EnvironmentReturn:
        work = self._step_batch(*self._checked(message_log_batch, metadata))
        return self._result(await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(work, background_loop())))

    async def global_post_process_and_metrics(self, batch: BatchedDataDict) -> tuple[BatchedDataDict, dict]:  # type: ignore[override]
        return await asyncio.to_thread(SWEGymEnvironment.global_post_process_and_metrics, self, batch)

    async def rollout_done(self, batch: BatchedDataDict) -> tuple[BatchedDataDict, dict]:  # type: ignore[override]
        return await self.global_post_process_and_metrics(batch)

    async def shutdown(self) -> None:  # type: ignore[override]
        await asyncio.to_thread(SWEGymEnvironment.shutdown, self)


_actor_class: Any = None


def __getattr__(name: str) -> Any:
    """``SWEGymEnvironmentActor``: the Ray actor class, made on first access (Ray is optional).

    Restarted like NeMo RL's own environments (``max_restarts=-1, max_task_retries=-1``): a restarted
    actor knows none of the old episodes, so their samples end masked ("unknown episode")."""
    if name != "SWEGymEnvironmentActor":
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    global _actor_class
    if _actor_class is None:
        try:
            import ray
        except ImportError:
            raise ConfigError("SWEGymEnvironmentActor needs Ray: pip install 'swe_gym[ray]'") from None
        _actor_class = ray.remote(max_restarts=-1, max_task_retries=-1)(_ActorEnvironment)
    return _actor_class


def register_with_nemo_rl(env_name: str = DEFAULT_ENV_NAME) -> str:
    """Add swe_gym to NeMo RL's environment registry and actor-environment registry; returns ``env_name``.

    Call it in the training script before NeMo RL sets up its environments (``setup_data`` /
    ``create_env``). It also installs the rollout hook (`swe_gym.integrations.nemo_rl_hook`) that
    brings swe_gym's masks into the rollout batch GRPO filters. Idempotent for the same name; a name
    taken by another env is an error.
    """
    try:
        from nemo_rl.distributed.ray_actor_environment_registry import ACTOR_ENVIRONMENT_REGISTRY
        from nemo_rl.distributed.virtual_cluster import PY_EXECUTABLES
        from nemo_rl.environments.utils import ENV_REGISTRY, register_env
    except ImportError as exc:
        raise ConfigError(
            f"NeMo RL's registries cannot be imported ({exc}): install NeMo RL from its repository "
            "(the PyPI 'nemo-rl' is an empty placeholder), or use SWEGymEnvironmentActor directly"
        ) from None
    from swe_gym.integrations.nemo_rl_hook import install_rollout_hook

    # The actor runs in the driver's interpreter, which has swe_gym installed.
    ACTOR_ENVIRONMENT_REGISTRY.setdefault(ACTOR_CLASS_FQN, PY_EXECUTABLES.SYSTEM)
    install_rollout_hook()
    current = ENV_REGISTRY.get(env_name)
    if current is None:
        register_env(env_name, ACTOR_CLASS_FQN)
    elif current.get("actor_class_fqn") != ACTOR_CLASS_FQN:
        raise ConfigError(f"NeMo RL env name {env_name!r} is taken by {current.get('actor_class_fqn')}")
    return env_name


__all__ = [
    "ACTOR_CLASS_FQN",
    "DEFAULT_ENV_NAME",
    "NEMO_RL_AVAILABLE",
    "ActionFormatError",
    "BatchedDataDict",
    "EnvironmentInterface",
    "EnvironmentReturn",
    "EpisodeOutcome",
    "SWEGymEnvConfig",
    "SWEGymEnvironment",
    "SWEGymEnvironmentActor",  # noqa: F822 - made lazily by the module __getattr__
    "build_prompt",
    "parse_action",
    "register_with_nemo_rl",
]
