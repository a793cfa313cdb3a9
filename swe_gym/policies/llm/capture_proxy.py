"""`CaptureProxy`: an OpenAI-compatible pass-through that records the exact tokens of every call.

For a black-box harness (mini-swe-agent, any agent that only takes a ``base_url``): point it at the proxy,
and the proxy forwards ``/v1/chat/completions``, ``/v1/completions`` and ``/v1/models`` to the upstream
server. It asks the upstream for its token ids and logprobs (`swe_gym.policies.llm.token_capture`), writes one
JSON line per call to ``out`` (the client's request, the response it got, and the call's `TokenCall`), and
returns the response the client would have had from the upstream: the logprobs and token-id fields it did
not ask for are taken out. ``extends_previous`` is against the call before it in the file (one client at a
time: one conversation). A streamed request is passed through whole and recorded without tokens.
"""

from __future__ import annotations

import asyncio
import json
import logging
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
from pydantic import BaseModel, Field

from swe_gym.policies.llm.chat_template import ChatTemplate
from swe_gym.policies.llm.token_capture import COMPLETION_TOKEN_FIELDS, TOKEN_FIELDS, ServerTokenizer, capture
from swe_gym.policies.llm.tokens import TokenCall

log = logging.getLogger(__name__)
_TOKEN_ID_KEYS = ("prompt_token_ids", "token_ids")


class CapturedCall(BaseModel):
    """One line of the proxy's JSONL file."""

    endpoint: str
    request: dict[str, Any] = Field(description="what the client sent")
    response: dict[str, Any] | None = Field(default=None, description="what the client got (JSON answers)")
    status: int
    tokens: TokenCall
    latency_s: float


class CaptureProxy:
    """Forwards to ``upstream`` (e.g. ``http://127.0.0.1:18791/v1``) and appends a `CapturedCall` per call to ``out``.

    Args:
        upstream: the server's OpenAI base URL.
        out: the JSONL file (appended; parent directories created).
        chat_template: the model's chat template (`ChatTemplate.load`'s source), for the prompt ids of an
            upstream that returns none (llama-cpp-python).
        api_key: sent upstream when the client sends none.
    """

    def __init__(
        self,
        upstream: str,
        out: str | Path,
        *,
        chat_template: str | Path | None = None,
        api_key: str | None = None,
        timeout_s: float = 600.0,
    ) -> None:
        self.upstream = upstream.rstrip("/")
        self.out = Path(out)
        self.template = ChatTemplate.load(chat_template) if chat_template else None
        self.api_key = api_key
        self.timeout_s = timeout_s
        self._previous: TokenCall | None = None
        self._lock = asyncio.Lock()

    def app(self) -> Any:
        """The aiohttp application."""
        from aiohttp import web

        app = web.Application(client_max_size=64 * 2**20)
        app.router.add_get("/v1/models", self._models)
        app.router.add_post("/v1/chat/completions", self._completion)
        app.router.add_post("/v1/completions", self._completion)
        app.cleanup_ctx.append(self._client_context)
        return app

    async def _client_context(self, app: Any) -> Any:
        self._client = httpx.AsyncClient(timeout=self.timeout_s)
        self._tokenizer = ServerTokenizer(
            self.upstream, self._client, self.api_key, self.template.eos_token if self.template else None
        )
        yield
        await self._client.aclose()

    def _headers(self, request: Any) -> dict[str, str]:
        auth = request.headers.get("Authorization") or (f"Bearer {self.api_key}" if self.api_key else None)
        return {"Authorization": auth} if auth else {}

    async def _models(self, request: Any) -> Any:
        from aiohttp import web

        response = await self._client.get(f"{self.upstream}/models", headers=self._headers(request))
        return web.Response(body=response.content, status=response.status_code, content_type="application/json")

    async def _completion(self, request: Any) -> Any:
        from aiohttp import web

        endpoint = request.path[len("/v1/") :]
        body = await request.json()
        started = time.perf_counter()
        if body.get("stream"):
            response = await self._client.post(f"{self.upstream}/{endpoint}", json=body, headers=self._headers(request))
            tokens = TokenCall(problems=["a streamed call: passed through without its tokens"])
            await self._record(endpoint, body, None, response.status_code, tokens, started)
            content_type = response.headers.get("content-type", "text/event-stream").split(";")[0]
            return web.Response(body=response.content, status=response.status_code, content_type=content_type)
        asked = COMPLETION_TOKEN_FIELDS if endpoint == "completions" else TOKEN_FIELDS
        sent = {**asked, **body}  # what the client asked for itself wins
        response = await self._client.post(f"{self.upstream}/{endpoint}", json=sent, headers=self._headers(request))
        try:
            answer = response.json()
        except ValueError:
            answer = None
        if response.status_code != 200 or not isinstance(answer, dict):
            tokens = TokenCall(problems=[f"the upstream answered HTTP {response.status_code} without a completion"])
            await self._record(endpoint, body, answer if isinstance(answer, dict) else None, response.status_code,
                               tokens, started)  # fmt: skip
            content_type = response.headers.get("content-type", "application/json").split(";")[0]
            return web.Response(body=response.content, status=response.status_code, content_type=content_type)
        try:
            tokens = await capture(sent, answer, tokenizer=self._tokenizer, template=self.template)
        except (httpx.HTTPError, ValueError, KeyError, TypeError) as exc:
            tokens = TokenCall(problems=[f"the upstream's tokenizer endpoints failed: {type(exc).__name__}: {exc}"])
        shown = _as_asked(answer, body)
        await self._record(endpoint, body, shown, 200, tokens, started)
        return web.json_response(shown)

    async def _record(
        self,
        endpoint: str,
        request: dict[str, Any],
        response: dict[str, Any] | None,
        status: int,
        tokens: TokenCall,
        started: float,
    ) -> None:
        async with self._lock:
            tokens = tokens.link(self._previous)
            self._previous = tokens if tokens.exact else None
            call = CapturedCall(
                endpoint=endpoint,
                request=request,
                response=response,
                status=status,
                tokens=tokens,
                latency_s=round(time.perf_counter() - started, 3),
            )
            self.out.parent.mkdir(parents=True, exist_ok=True)
            with self.out.open("a", encoding="utf-8") as handle:
                handle.write(json.dumps(call.model_dump(mode="json")) + "\n")


def _as_asked(answer: dict[str, Any], body: dict[str, Any]) -> dict[str, Any]:
    """The answer without the token fields the client did not ask for."""
    shown = dict(answer)
    if not body.get("return_token_ids"):
        for key in _TOKEN_ID_KEYS:
            shown.pop(key, None)
    choices = []
    for choice in shown.get("choices") or []:
        choice = dict(choice)
        if not body.get("return_token_ids"):
            for key in _TOKEN_ID_KEYS:
                choice.pop(key, None)
        if body.get("logprobs") in (None, False):
            choice["logprobs"] = None
        choices.append(choice)
    if "choices" in shown:
        shown["choices"] = choices
    return shown


def read_captured(path: str | Path) -> list[CapturedCall]:
    """Every call a proxy wrote to ``path``."""
    lines = Path(path).read_text(encoding="utf-8").splitlines()
    return [CapturedCall.model_validate_json(line) for line in lines if line.strip()]


@contextmanager
def running_proxy(proxy: CaptureProxy, host: str = "127.0.0.1", port: int = 0) -> Iterator[str]:
    """Serve ``proxy`` on a thread of its own while the block runs; yields its OpenAI base URL (``.../v1``)."""
    from aiohttp import web

    loop = asyncio.new_event_loop()
    runner = web.AppRunner(proxy.app())
    loop.run_until_complete(runner.setup())
    site = web.TCPSite(runner, host, port)
    loop.run_until_complete(site.start())
    bound = runner.addresses[0][1]
    thread = threading.Thread(target=loop.run_forever, name="swe-gym-capture-proxy", daemon=True)
    thread.start()
    try:
        yield f"http://{host}:{bound}/v1"
    finally:
        asyncio.run_coroutine_threadsafe(runner.cleanup(), loop).result()
        loop.call_soon_threadsafe(loop.stop)
        thread.join()
        loop.close()


def serve(proxy: CaptureProxy, host: str, port: int) -> None:
    """Serve ``proxy`` until interrupted (the CLI's ``swe-gym capture-proxy``)."""
    from aiohttp import web

    log.info("capture proxy on http://%s:%d/v1 -> %s, calls to %s", host, port, proxy.upstream, proxy.out)
    web.run_app(proxy.app(), host=host, port=port, print=None)
