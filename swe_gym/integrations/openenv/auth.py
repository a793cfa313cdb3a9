"""The served env's token: an ASGI middleware that refuses every request and WebSocket handshake without it.

OpenEnv's client sends no headers of its own, but the WebSocket library it uses turns credentials in the URL
into an ``Authorization: Basic`` header, so a ``base_url`` of ``http://swe-gym:TOKEN@127.0.0.1:PORT``
(`client_url`) authenticates OpenEnv's own client unchanged. ``Authorization: Bearer TOKEN`` works too.
"""

from __future__ import annotations

import base64
import binascii
import hmac
import json
import secrets
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any
from urllib.parse import quote, urlsplit, urlunsplit

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

#: The user name `client_url` puts before the token (the server reads only the password).
USER = "swe-gym"
#: Paths served without the token: a liveness probe that shows nothing.
OPEN_PATHS = frozenset({"/health"})


def new_token() -> str:
    return secrets.token_urlsafe(32)


def client_url(url: str, token: str | None) -> str:
    """``url`` (``http://HOST:PORT``) with the token as its credentials: what OpenEnv's client takes as base_url."""
    if token is None:
        return url
    parts = urlsplit(url)
    netloc = f"{USER}:{quote(token, safe='')}@{parts.netloc.rsplit('@', 1)[-1]}"
    return urlunsplit(parts._replace(netloc=netloc))


def presented_token(authorization: str) -> str | None:
    """The token an ``Authorization`` header carries: a Bearer token, or a Basic password."""
    scheme, _, value = authorization.strip().partition(" ")
    if scheme.lower() == "bearer":
        return value.strip()
    if scheme.lower() == "basic":
        try:
            decoded = base64.b64decode(value.strip(), validate=True).decode()
        except (binascii.Error, UnicodeDecodeError):
            return None
        return decoded.partition(":")[2]
    return None


class TokenAuth:
    """Refuse what does not carry ``token``: HTTP with 401, a WebSocket handshake with 403 (closed unaccepted)."""

    def __init__(self, app: ASGIApp, token: str) -> None:
        self.app = app
        self._token = token.encode()

    def authorized(self, scope: Scope) -> bool:
        headers = dict(scope.get("headers") or [])
        presented = presented_token(headers.get(b"authorization", b"").decode("latin-1"))
        return presented is not None and hmac.compare_digest(presented.encode(), self._token)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket") or scope["path"] in OPEN_PATHS or self.authorized(scope):
            await self.app(scope, receive, send)
        elif scope["type"] == "websocket":
            await receive()  # the handshake's websocket.connect
            await send({"type": "websocket.close", "code": 1008, "reason": "missing or wrong token"})
        else:
            body = json.dumps({"detail": "missing or wrong token (Authorization: Bearer TOKEN)"}).encode()
            headers = [(b"content-type", b"application/json"), (b"www-authenticate", b'Bearer realm="swe-gym"')]
            await send({"type": "http.response.start", "status": 401, "headers": headers})
            await send({"type": "http.response.body", "body": body})
