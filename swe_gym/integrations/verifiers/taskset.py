"""`SWEGymTaskset`: swe_gym's tasks as a verifiers taskset, and the one reward its tasks score.

The taskset is the data half (verifiers' split): each row names one swe_gym task by instance id; the episode
itself (sandbox, actions, grading) is `SWEGymEnv`'s. Its config carries what an `EpisodeHost` is built from
(`swe_gym.envs.options.HostConfig`): the task source and selection, the provider, and any env option.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import verifiers.v1 as vf
from pydantic import Field

from swe_gym.envs.host import host_tasks
from swe_gym.envs.options import HostConfig
from swe_gym.integrations.verifiers.exchange import OUTCOME_KEY
from swe_gym.policies.llm.templates import SYSTEM_TEMPLATE


class SWEGymTasksetConfig(vf.TasksetConfig):
    """Which swe_gym tasks, and how their episodes run (``--env.taskset.*`` on ``vf-eval``)."""

    tasks: str = Field(default="bundled", description="'bundled', a .json/.jsonl/.parquet file, a dataset")
    split: str = "test"
    instance_ids: list[str] | None = None
    limit: int | None = Field(default=None, ge=1)
    provider: str | dict[str, Any] = Field(default="local", description="a provider name or {type: NAME, ...}")
    max_steps: int = Field(default=30, ge=1, description="actions per episode (format errors count too)")
    options: dict[str, Any] = Field(
        default_factory=dict, description="any other swe_gym env option (HostConfig), e.g. step_timeout, image"
    )

    def host_config(self) -> HostConfig:
        """This config as an episode host's (a `ConfigError` naming every bad option)."""
        selection = {"tasks": self.tasks, "split": self.split, "instance_ids": self.instance_ids, "limit": self.limit}
        return HostConfig.parse({**selection, "provider": self.provider, "max_steps": self.max_steps, **self.options})


class SWEGymData(vf.TaskData):
    """One row: the swe_gym task's instance id (``id``) and repository. No prompt: the env opens each exchange
    with the episode's first observation, which names the sandbox's working directory."""

    repo: str


class SWEGymTask(vf.Task[SWEGymData, vf.State, vf.TaskConfig]):
    """A swe_gym task; its score is the grade `SWEGymEnv` left on the trace."""

    @property
    def key(self) -> str:
        return self.data.id or self.hash

    @vf.reward
    async def swe_gym_reward(self, trace: vf.Trace) -> float:
        """swe_gym's graded reward of the episode (binary or partial, as the taskset's options say).

        An episode swe_gym masked never gets here: its trace carries a `MaskedEpisodeError` instead."""
        outcome = trace.info.get(OUTCOME_KEY)
        if not isinstance(outcome, dict) or "reward" not in outcome:
            raise ValueError("the trace carries no swe_gym outcome: the episode was not run by SWEGymEnv")
        return float(outcome["reward"])


class SWEGymTaskset(vf.Taskset[SWEGymTask, SWEGymTasksetConfig]):
    """The tasks an episode host of this config runs (loaded, then screened by its certificate)."""

    def load(self) -> Iterator[SWEGymTask]:
        for task in host_tasks(self.config.host_config()):
            data = SWEGymData(
                id=task.instance_id, name=task.instance_id, repo=task.repo, prompt=None, system_prompt=SYSTEM_TEMPLATE
            )
            yield SWEGymTask(data, self.config.task)
