"""`create_app`: the served env as a FastAPI app speaking OpenEnv's protocol.

Episodes run over OpenEnv's WebSocket endpoint ``/ws`` (what ``EnvClient`` and ``GenericEnvClient`` use: one
session per connection, reset, step, state, close). The app is registered in OpenEnv's production mode, which
leaves out its stateless HTTP ``/reset`` and ``/step`` (each would start an episode in a throwaway env); kept:
``/ws``, ``/health``, ``/schema``, ``/metadata``, plus ``/sessions`` (the open sessions and the bound).
Everything but ``/health`` needs the token when one is given (`swe_gym.integrations.openenv.auth`).
"""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI
from openenv.core.env_server.types import ServerMode

import swe_gym
from swe_gym.envs.host import EpisodeHost
from swe_gym.integrations.openenv.auth import ASGIApp, Receive, Scope, Send, TokenAuth
from swe_gym.integrations.openenv.sessions import SessionServer


class SessionBound:
    """Refuse a session past the bound with a close frame saying why (code 1013, try again later).

    OpenEnv's own refusal (still the authority when two connections race) sends an error message and closes,
    which OpenEnv's client, sending its reset first, mostly never reads: it sees only a closed connection."""

    def __init__(self, app: ASGIApp, server: SessionServer) -> None:
        self.app, self.server = app, server

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        server = self.server
        if (
            scope["type"] != "websocket"
            or scope["path"] != "/ws"
            or server.active_sessions < server.max_concurrent_envs
        ):
            await self.app(scope, receive, send)
            return
        await receive()  # the handshake's websocket.connect
        await send({"type": "websocket.accept"})
        reason = f"server at capacity: {server.active_sessions}/{server.max_concurrent_envs} sessions; try again later"
        await send({"type": "websocket.close", "code": 1013, "reason": reason})


def create_app(host: EpisodeHost, *, token: str | None, max_sessions: int, idle_timeout_s: float | None) -> FastAPI:
    """An app serving ``host``'s tasks; stopping it closes every session and then ``host``.

    ``token``: what every request must carry (None: no check, for a trusted network only).
    """
    server = SessionServer(host, max_sessions, idle_timeout_s)
    app = FastAPI(title="swe_gym served env (OpenEnv protocol)", version=swe_gym.__version__)
    server.register_routes(app, mode=ServerMode.PRODUCTION)

    @app.get("/sessions", tags=["State Management"], summary="Open sessions and the bound")
    async def sessions() -> dict[str, Any]:
        capacity = server.get_capacity_status()
        return {
            "active_sessions": capacity.active_sessions,
            "max_sessions": capacity.max_sessions,
            "sessions": [info.model_dump() for info in server.sessions()],
        }

    app.router.on_shutdown.append(server.shutdown)
    app.add_middleware(SessionBound, server=server)
    if token is not None:
        app.add_middleware(TokenAuth, token=token)
    app.state.session_server = server
    return app
