"""`SessionServer`: OpenEnv's ``HTTPEnvServer`` with what a served SWE env needs beyond it.

OpenEnv already gives each WebSocket connection its own session (an id, an env made by the factory), refuses
connections past ``max_concurrent_envs`` (``CAPACITY_REACHED``) and closes a session's env when its client
disconnects or sends ``close``. This adds: the session's id is its episodes' key in the shared host; a
session is idle only while it runs no call (OpenEnv's reaper would close one whose grading outlasts the
timeout) and is checked every quarter of the timeout (OpenEnv's checks at most every 5 s); a call on a
session closed for idleness says so; and stopping the server closes every session, then the host.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import time

from openenv.core.env_server.http_server import HTTPEnvServer
from openenv.core.env_server.types import ConcurrencyConfig, SessionInfo

from swe_gym.envs.host import EpisodeHost
from swe_gym.integrations.openenv.environment import SWEGymOpenEnv
from swe_gym.integrations.openenv.models import SWEAction, SWEObservation

log = logging.getLogger(__name__)


class SessionServer(HTTPEnvServer):
    """Sessions of `SWEGymOpenEnv` over one ``host``: at most ``max_sessions``, closed after ``idle_timeout_s``
    without a message (None: never)."""

    def __init__(self, host: EpisodeHost, max_sessions: int, idle_timeout_s: float | None) -> None:
        concurrency = ConcurrencyConfig(max_concurrent_envs=max_sessions, session_timeout=idle_timeout_s)
        super().__init__(
            functools.partial(SWEGymOpenEnv, host), SWEAction, SWEObservation, concurrency_config=concurrency
        )
        self.host = host

    async def _create_session(self) -> tuple[str, SWEGymOpenEnv]:  # type: ignore[override]
        session_id, env = await super()._create_session()
        assert isinstance(env, SWEGymOpenEnv)
        env.bind(session_id)
        log.info("session %s opened (%d of %d)", session_id, self.active_sessions, self.max_concurrent_envs)
        return session_id, env

    async def _destroy_session(self, session_id: str) -> None:
        known = session_id in self._sessions
        await super()._destroy_session(session_id)
        if known:
            log.info("session %s closed; its sandboxes removed", session_id)

    def sessions(self) -> list[SessionInfo]:
        return list(self._session_info.values())

    def idle(self, timeout_s: float) -> list[str]:
        """Sessions with no message for ``timeout_s`` and no call running."""
        now = time.time()
        return [
            session_id
            for session_id, info in list(self._session_info.items())
            if now - info.last_activity_at > timeout_s and not getattr(self._sessions.get(session_id), "inflight", 0)
        ]

    async def _reap_idle_sessions(self) -> None:
        """OpenEnv's reaper task (started and cancelled with the app), with the rules of the module."""
        timeout = self._session_idle_timeout_s
        if timeout is None:
            return
        while True:
            await asyncio.sleep(min(timeout / 4, 5.0))
            for session_id in self.idle(timeout):
                env = self._sessions.get(session_id)
                if isinstance(env, SWEGymOpenEnv):
                    env.expire(f"its client sent nothing for {timeout:g} s, the server's idle timeout")
                log.info("session %s idle for %g s: closing it", session_id, timeout)
                try:
                    await self._destroy_session(session_id)
                except Exception as exc:  # the next round tries the others again
                    log.warning("could not close idle session %s: %s", session_id, exc)

    async def shutdown(self) -> None:
        """Close every session, then the host (what is left of every episode, and the pool)."""
        for session_id in list(self._sessions):
            env = self._sessions.get(session_id)
            if isinstance(env, SWEGymOpenEnv):
                env.expire("the server is stopping")
            await self._destroy_session(session_id)
        await asyncio.to_thread(self.host.close)
