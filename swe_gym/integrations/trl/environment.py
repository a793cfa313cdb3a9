"""`SWEGymEnvironment`: one swe_gym episode per rollout of TRL's `GRPOTrainer`, in its ``environment_factory`` shape.

TRL's contract (``trl/trainer/grpo_trainer.py``, ``environment_factory``): the trainer makes one instance per
concurrent rollout and reuses it; ``reset(**row)`` starts a rollout and returns text appended to the prompt's
last user message; every other public method is a tool the model calls (its name, type hints and docstring
become the tool schema); ``get_reward()`` is called once per finished rollout and is the environment's reward.

Here ``reset`` starts an episode of the row's ``instance_id`` on the factory's `EpisodeHost` (the one lifecycle
of every front end), ``bash`` and ``submit`` are swe_gym's tools of the same names dispatched by the host, and
``get_reward`` is the episode's graded reward: a rollout that stopped before the episode ended (no more tool
calls, or the completion budget spent) is graded as a truncated episode, as `SWEEnv` grades one at
``max_steps``. A masked episode (the environment failed) rewards ``None``: TRL turns it into NaN, leaves it
out of the group baseline and of the logged reward, and gives it advantage 0, so it never trains as a 0.
The episode's sandboxes are closed as soon as it ends, and the factory's `close` ends whatever is left.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict

from swe_gym.envs.episode import StepResult
from swe_gym.envs.host import EpisodeHost
from swe_gym.envs.prompt import SUBMIT
from swe_gym.tools import BASH, SUBMIT_TOOL

#: The swe_gym tools the environment's methods are: the host is configured with exactly these.
TOOL_NAMES = (BASH, SUBMIT_TOOL)


class EpisodeOutcome(BaseModel):
    """How one rollout's episode ended: what `get_reward` gave TRL, and why."""

    model_config = ConfigDict(frozen=True)

    episode: int  # the factory's count of resets: rollout ``i`` of a run is episode ``i``
    instance_id: str
    reward: float | None  # None: masked (TRL's "no reward" for this rollout)
    resolved: bool
    masked: bool
    masked_reason: str | None
    steps: int
    ended_by_model: bool  # it ended in a tool call (submit, max_steps, a mask); False: cut off when the rollout ended


class SWEGymEnvironment:
    """One rollout's swe_gym episode; made by `swe_gym.integrations.trl.SWEGymEnvironments`, never directly.

    Public methods other than ``reset`` and ``get_reward`` are TRL tools: add none without meaning one.
    """

    def __init__(
        self,
        host: EpisodeHost,
        key: str,
        starts: Callable[[], int],
        rng: np.random.Generator,
        record: Callable[[EpisodeOutcome], None],
    ) -> None:
        self._host, self._key, self._starts, self._rng, self._record = host, key, starts, rng, record
        self._episode = -1
        self._instance_id = ""
        self._outcome: EpisodeOutcome | None = None

    def reset(self, instance_id: str | None = None, **row: Any) -> str:
        """Start an episode of ``instance_id`` (a random task when None); its first observation is the prompt.

        The dataset row's other columns (``prompt`` among them) are TRL's and are ignored."""
        task = self._host.pick(self._rng, instance_id)
        self._episode, self._instance_id, self._outcome = self._starts(), task.instance_id, None
        observation, _ = self._host.call(self._host.start(self._key, task))
        return observation

    def bash(self, command: str) -> str:
        """Run a bash command in the repository's sandbox and get what it printed (stdout and stderr).

        Args:
            command: the bash command to run, in a fresh shell in the repository
        """
        return self._act({"name": BASH, "arguments": {"command": command}})

    def submit(self) -> str:
        """Submit the repository as it is now: the episode ends and the change is graded by hidden tests."""
        return self._act({"name": SUBMIT_TOOL, "arguments": {}})

    def get_reward(self) -> float | None:
        """The episode's swe_gym reward; None when it was masked. A live episode is graded as truncated first."""
        if self._outcome is None:
            self._end(self._host.call(self._cut_off()), ended_by_model=False)
        assert self._outcome is not None
        return self._outcome.reward

    @property
    def outcome(self) -> EpisodeOutcome | None:
        """How the current rollout's episode ended (None while it runs)."""
        return self._outcome

    def _act(self, call: dict[str, Any]) -> str:
        if self._outcome is not None:
            raise RuntimeError("the episode has ended (submitted, out of steps or masked); no tool runs any more")
        result = self._host.call(self._host.act(self._key, call))
        observation, _, terminated, truncated, _ = result
        if terminated or truncated:
            self._end(result, ended_by_model=True)
        return observation

    async def _cut_off(self) -> StepResult:
        """End the episode now, graded as a truncated one (a failed start: its masked step)."""
        episode = self._host.episode(self._key)
        if episode is None or episode.done:
            return await self._host.act(self._key, SUBMIT)  # the start failed: the host answers its masked step
        return await episode.truncate("", {"step": episode.steps})

    def _end(self, result: StepResult, *, ended_by_model: bool) -> None:
        """Record how the episode ended and close its sandboxes now."""
        _, reward, _, _, info = result
        masked = bool(info.get("masked"))
        self._outcome = EpisodeOutcome(
            episode=self._episode,
            instance_id=self._instance_id,
            reward=None if masked else float(reward),
            resolved=bool(info.get("resolved")),
            masked=masked,
            masked_reason=info.get("masked_reason"),
            steps=int(info.get("step", 0)),
            ended_by_model=ended_by_model,
        )
        self._host.call(self._host.end(self._key))
        self._record(self._outcome)
