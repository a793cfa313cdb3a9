"""`SWEGymEnvironments`: the ``environment_factory`` of TRL's `GRPOTrainer`, and the dataset that picks its tasks."""

from __future__ import annotations

from collections.abc import Iterable
from types import TracebackType
from typing import TYPE_CHECKING, Any

import numpy as np

from swe_gym.envs.host import EpisodeHost, host_config
from swe_gym.errors import ConfigError
from swe_gym.integrations.trl.environment import TOOL_NAMES, EpisodeOutcome, SWEGymEnvironment
from swe_gym.sandbox.facade import ProviderLike
from swe_gym.tasks.loader import TaskSource

if TYPE_CHECKING:
    from datasets import Dataset

#: The system message of `SWEGymEnvironments.dataset`'s prompts; each episode's task prompt follows as the user's.
SYSTEM_PROMPT = (
    "You are a software engineer working in a sandbox. Act only by calling the tools: `bash` runs one command "
    "in the repository and returns its output, `submit` ends the episode and hidden tests grade your change."
)


class SWEGymEnvironments:
    """What ``GRPOTrainer(environment_factory=...)`` calls: each call is one rollout's `SWEGymEnvironment`, all
    of them episodes of one `EpisodeHost` (one set of tasks, options and provider, as for `swe_gym.SWEEnv`).

    The keywords are `SWEEnv`'s, except ``tools``: the environment's tools are its methods, ``bash`` and
    ``submit``. ``outcomes`` lists how every episode ended, in the order they started (one per rollout).
    Close it (or use it as a context manager around ``trainer.train()``): every sandbox left goes.

    >>> from swe_gym.integrations.trl import SWEGymEnvironments
    >>> with SWEGymEnvironments(max_steps=4) as environments:     # doctest: +SKIP
    ...     trainer = GRPOTrainer(model, args=config, processing_class=tokenizer,
    ...                           train_dataset=environments.dataset(), environment_factory=environments)
    ...     trainer.train()
    """

    def __init__(
        self,
        tasks: TaskSource = "bundled",
        provider: ProviderLike = "local",
        *,
        instance_ids: Iterable[str] | None = None,
        split: str = "test",
        limit: int | slice | None = None,
        seed: int = 0,
        **options: Any,
    ) -> None:
        if "tools" in options:
            raise ConfigError(f"a TRL environment's tools are its methods ({', '.join(TOOL_NAMES)}); drop tools=")
        config = host_config(tasks, provider, instance_ids, split, limit, {**options, "tools": list(TOOL_NAMES)})
        self.host = EpisodeHost(config)
        self.outcomes: list[EpisodeOutcome] = []
        self._rng = np.random.default_rng(seed)
        self._made = 0
        self._started = 0

    def __call__(self) -> SWEGymEnvironment:
        key, self._made = f"trl-{self._made}", self._made + 1
        return SWEGymEnvironment(self.host, key, self._next_episode, self._rng, self.outcomes.append)

    def _next_episode(self) -> int:
        self._started += 1
        return self._started - 1

    def dataset(self, system_prompt: str = SYSTEM_PROMPT, repeats: int = 1) -> Dataset:
        """A training set with one row per task (``repeats`` times over): a conversational ``prompt`` (the
        system message, and an empty user message the episode's task prompt fills) and its ``instance_id``,
        which TRL passes to `SWEGymEnvironment.reset`. GRPO repeats each row ``num_generations`` times: each
        repeat is its own episode of that task."""
        from datasets import Dataset

        if repeats < 1:
            raise ConfigError(f"repeats must be >= 1, got {repeats}")
        ids = [task.instance_id for task in self.host.tasks] * repeats
        prompt = [{"role": "system", "content": system_prompt}, {"role": "user", "content": ""}]
        return Dataset.from_dict({"prompt": [prompt] * len(ids), "instance_id": ids})

    def close(self) -> None:
        """End every episode still running and remove its sandboxes (and the warm pool); idempotent."""
        self.host.close()

    def __enter__(self) -> SWEGymEnvironments:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()
