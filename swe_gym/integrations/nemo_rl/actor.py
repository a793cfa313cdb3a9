"""The Ray actor NeMo RL's registries name: `SWEGymEnvironment` as an asyncio actor, made on first use.

`actor_class` builds ``ray.remote(max_restarts=-1, max_task_retries=-1)`` of `ActorEnvironment` once
(Ray is optional); the package exposes it as ``swe_gym.integrations.nemo_rl.SWEGymEnvironmentActor``.
A restarted actor knows none of the old episodes, so their samples end masked ("unknown episode").
"""

from __future__ import annotations

import asyncio
from typing import Any

from swe_gym.errors import ConfigError
from swe_gym.integrations.nemo_rl.environment import SWEGymEnvironment
from swe_gym.integrations.nemo_rl.types import BatchedDataDict, EnvironmentReturn


class ActorEnvironment(SWEGymEnvironment):
    """What the Ray actor runs. Its methods are coroutines, so Ray makes it an asyncio actor that serves
    many calls at once (NeMo RL's async rollout sends one ``step`` per sample): each call's episodes run
    on swe_gym's own loop, and the actor's loop only waits for them."""

    async def step(  # type: ignore[override]
        self,
        message_log_batch: list[list[dict[str, Any]]],
        metadata: list[dict[str, Any] | None],
        return_extracted_answer: bool = False,
    ) -> EnvironmentReturn:
        return self._result(await self.host.call_async(self.turns.batch(*self._checked(message_log_batch, metadata))))

    async def global_post_process_and_metrics(self, batch: BatchedDataDict) -> tuple[BatchedDataDict, dict]:  # type: ignore[override]
        return await asyncio.to_thread(SWEGymEnvironment.global_post_process_and_metrics, self, batch)

    async def rollout_done(self, batch: BatchedDataDict) -> tuple[BatchedDataDict, dict]:  # type: ignore[override]
        return await self.global_post_process_and_metrics(batch)

    async def shutdown(self) -> None:  # type: ignore[override]
        await asyncio.to_thread(SWEGymEnvironment.shutdown, self)


_actor_class: Any = None


def actor_class() -> Any:
    """``SWEGymEnvironmentActor``: ``ray.remote`` of `ActorEnvironment`, made once.

    Restarted like NeMo RL's own environments (``max_restarts=-1, max_task_retries=-1``)."""
    global _actor_class
    if _actor_class is None:
        try:
            import ray
        except ImportError:
            raise ConfigError("SWEGymEnvironmentActor needs Ray: pip install 'swe_gym[ray]'") from None
        _actor_class = ray.remote(max_restarts=-1, max_task_retries=-1)(ActorEnvironment)
    return _actor_class
