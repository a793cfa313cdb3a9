"""`SWEGymOpenEnv`: one OpenEnv session as a thin adapter over a shared `EpisodeHost`.

The server makes one per session (OpenEnv's ``HTTPEnvServer`` calls the factory per WebSocket connection);
each runs its episodes in the host at its own key, the session's id, so every lifecycle rule (the failure
rule, masking, grading, closing) is the host's, as for `SWEEnv`. ``reset`` draws a task as `SWEEnv` does (the
same seed picks the same task) or runs the one named ``task_id``; ``step`` takes a bash command or a tool
call (`SWEAction`); ``close`` removes the session's sandboxes.
"""

from __future__ import annotations

import uuid
from collections.abc import Coroutine
from typing import Any, TypeVar

from gymnasium.utils import seeding
from openenv.core.env_server.interfaces import Environment
from openenv.core.env_server.types import EnvironmentMetadata
from pydantic_core import to_jsonable_python

import swe_gym
from swe_gym.envs.episode import Reset, StepResult
from swe_gym.envs.host import EpisodeHost
from swe_gym.errors import ConfigError
from swe_gym.integrations.openenv.models import SWEAction, SWEObservation, SWEState
from swe_gym.shown_text import as_shown

T = TypeVar("T")

#: What ``reset`` takes beyond OpenEnv's ``seed`` and ``episode_id``.
RESET_OPTIONS = frozenset({"task_id"})


def _shown(value: Any) -> Any:
    if isinstance(value, str):
        return as_shown(value)
    if isinstance(value, dict):
        return {as_shown(key): _shown(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_shown(item) for item in value]
    return value


def jsonable(info: dict[str, Any]) -> dict[str, Any]:
    """``info`` as JSON values (numpy scalars, paths and the like as their plain forms, else their text); text
    holding bytes that are not UTF-8 (a patch of a Latin-1 file) as observations show it, marked
    (`swe_gym.shown_text.to_bytes` gives the bytes back)."""
    return _shown(to_jsonable_python(info, fallback=str))


class SessionClosedError(RuntimeError):
    """A call on a session the server already closed (its client idle past the timeout, or the server stopping)."""


class SWEGymOpenEnv(Environment[SWEAction, SWEObservation, SWEState]):
    """One session's episodes, run by ``host`` at the session's key (see the module)."""

    SUPPORTS_CONCURRENT_SESSIONS = True

    def __init__(self, host: EpisodeHost) -> None:
        super().__init__()
        self.host = host
        self.key = uuid.uuid4().hex  # the session's id once the server binds it
        self.inflight = 0  # calls running now: a session that runs one is never idle
        self.closed_why: str | None = None
        self._rng, _ = seeding.np_random()
        self._state = SWEState(session_id=self.key, done=True)

    def bind(self, session_id: str) -> None:
        """Run this session's episodes at ``session_id`` (before its first reset)."""
        self.key = session_id
        self._state.session_id = session_id

    # -- OpenEnv's Environment -------------------------------------------------------------------

    async def reset_async(
        self, seed: int | None = None, episode_id: str | None = None, **options: Any
    ) -> SWEObservation:
        return self._reset_result(await self._run_async(self._start(seed, episode_id, options)))

    def reset(self, seed: int | None = None, episode_id: str | None = None, **options: Any) -> SWEObservation:
        return self._reset_result(self._run(self._start(seed, episode_id, options)))

    async def step_async(self, action: SWEAction, timeout_s: float | None = None, **_: Any) -> SWEObservation:
        """One action; ``timeout_s`` is not used: the env's ``step_timeout`` bounds every action."""
        return self._step_result(await self._run_async(self.host.act(self.key, action.payload)))

    def step(self, action: SWEAction, timeout_s: float | None = None, **_: Any) -> SWEObservation:
        return self._step_result(self._run(self.host.act(self.key, action.payload)))

    @property
    def state(self) -> SWEState:
        return self._state

    def get_metadata(self) -> EnvironmentMetadata:
        return EnvironmentMetadata(
            name="swe_gym",
            description=f"software-engineering tasks: {len(self.host.tasks)} on provider "
            f"{self.host.settings.provider.name}; a step is a bash command or a tool call",
            version=swe_gym.__version__,
        )

    def close(self) -> None:
        """Remove this session's sandboxes; idempotent, and a no-op once the host itself is closed."""
        if self.closed_why is None:
            self.closed_why = "it was closed"
        if self.host.closed:
            return
        try:
            self.host.call(self.host.end(self.key))
        except RuntimeError:
            if not self.host.closed:  # the host closing meanwhile removes everything itself
                raise

    def expire(self, why: str) -> None:
        """Say why later calls are refused (then `close`)."""
        self.closed_why = why

    # -- the host's calls --------------------------------------------------------------------------

    async def _start(self, seed: int | None, episode_id: str | None, options: dict[str, Any]) -> Reset:
        unknown = sorted(set(options) - RESET_OPTIONS)
        if unknown:
            raise ConfigError(f"reset takes seed, episode_id and task_id; got unknown {', '.join(unknown)}")
        if seed is not None:
            self._rng, _ = seeding.np_random(seed)
        task = self.host.pick(self._rng, options.get("task_id"))
        self._state = SWEState(
            episode_id=episode_id or uuid.uuid4().hex, session_id=self.key, instance_id=task.instance_id
        )
        return await self.host.start(self.key, task)

    def _check_open(self, coro: Coroutine[Any, Any, Any]) -> None:
        if self.closed_why is not None:
            coro.close()
            raise SessionClosedError(f"this session is closed ({self.closed_why}); connect again for a new one")

    def _run(self, coro: Coroutine[Any, Any, T]) -> T:
        self._check_open(coro)
        return self.host.call(coro)

    async def _run_async(self, coro: Coroutine[Any, Any, T]) -> T:
        self._check_open(coro)
        self.inflight += 1
        try:
            return await self.host.call_async(coro)
        finally:
            self.inflight -= 1

    def _reset_result(self, reset: Reset) -> SWEObservation:
        observation, info = reset
        return SWEObservation(output=observation, info=jsonable(info))

    def _step_result(self, result: StepResult) -> SWEObservation:
        observation, reward, terminated, truncated, info = result
        self._state.step_count += 1
        self._state.done = terminated or truncated
        return SWEObservation(
            output=observation,
            reward=float(reward),
            done=terminated or truncated,
            terminated=terminated,
            truncated=truncated,
            info=jsonable(info),
        )
