"""A FAKE OpenAI-compatible chat server that answers from a script: for end-to-end tests of native tool calling.

Why a fake: the real local model (SmolLM2-135M behind llama.cpp's server with ``chatml-function-calling``,
started by ``.ci/provision_llm.sh``) does return real ``tool_calls``, but nothing can steer a 135M model to
the one edit that resolves a task, so a graded episode needs scripted replies. This server is a real HTTP
server on 127.0.0.1 that the real ``openai`` client (or litellm) talks to over a socket, in the real wire
format of ``POST /v1/chat/completions``: a ``chat.completion`` whose message carries ``tool_calls`` entries
(``id``, ``type: "function"``, ``function.name``, ``function.arguments`` as a JSON string) and
``finish_reason: "tool_calls"``, with ``usage``; ``GET /v1/models`` lists its model.

It checks each request as OpenAI's API does, and answers a violation with HTTP 400 and OpenAI's error body
(recorded in `FakeToolServer.violations`): every assistant message with ``tool_calls`` must be followed by
one ``tool`` message per call id, before any other message; a ``tool`` message must answer such a call;
``tools`` must be function schemas. ``reject_tools=True`` answers any request with ``tools`` with a 400,
as vLLM does without ``--enable-auto-tool-choice``.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

MODEL = "fake-tool-model"
#: vLLM's answer to a request with tools when it runs without a tool parser.
VLLM_NO_TOOLS = '"auto" tool choice requires --enable-auto-tool-choice and --tool-call-parser to be set'


def call(name: str, call_id: str | None = None, /, **arguments: Any) -> dict[str, Any]:
    """One scripted tool call (``arguments`` become the JSON string the wire carries)."""
    return {"name": name, "arguments": arguments, "id": call_id}


def raw_call(name: str, arguments: str, call_id: str | None = None) -> dict[str, Any]:
    """A scripted tool call whose arguments string is sent as is (e.g. not JSON)."""
    return {"name": name, "arguments": arguments, "id": call_id}


@dataclass
class Reply:
    """One scripted answer: text, tool calls, or both."""

    content: str | None = None
    tool_calls: Sequence[dict[str, Any]] = ()


@dataclass
class FakeToolServer:
    base_url: str = ""
    requests: list[dict[str, Any]] = field(default_factory=list)
    violations: list[str] = field(default_factory=list)
    answered: int = 0


def protocol_problem(body: dict[str, Any]) -> str | None:
    """What in a chat request OpenAI's API would refuse (tool calls and their results), or None."""
    tools = body.get("tools")
    if tools is not None and not all(
        isinstance(t, dict) and t.get("type") == "function" and isinstance(t.get("function", {}).get("name"), str)
        for t in tools
    ):
        return "tools must be a list of {type: function, function: {name, parameters}}"
    open_ids: list[str] = []
    for index, message in enumerate(body.get("messages") or []):
        role = message.get("role")
        if open_ids and role != "tool":
            return (
                f"messages[{index}]: an assistant message with 'tool_calls' must be followed by tool messages "
                f"responding to each 'tool_call_id'; not answered: {open_ids}"
            )
        if role == "tool":
            if message.get("tool_call_id") not in open_ids:
                return f"messages[{index}]: a tool message must answer a preceding tool call (got {message})"
            open_ids.remove(message["tool_call_id"])
        elif role == "assistant" and message.get("tool_calls"):
            open_ids = [entry.get("id") for entry in message["tool_calls"]]
            if not all(isinstance(i, str) and i for i in open_ids) or len(set(open_ids)) != len(open_ids):
                return f"messages[{index}]: every tool call needs its own id (got {open_ids})"
    return None


def _completion(reply: Reply, number: int) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": reply.content}
    if reply.tool_calls:
        message["tool_calls"] = [
            {
                "id": entry.get("id") or f"call_{number}_{i}",
                "type": "function",
                "function": {
                    "name": entry["name"],
                    "arguments": entry["arguments"]
                    if isinstance(entry["arguments"], str)
                    else json.dumps(entry["arguments"]),
                },
            }
            for i, entry in enumerate(reply.tool_calls)
        ]
    return {
        "id": f"chatcmpl-fake-{number}",
        "object": "chat.completion",
        "created": 1700000000,
        "model": MODEL,
        "choices": [
            {
                "index": 0,
                "message": message,
                "finish_reason": "tool_calls" if reply.tool_calls else "stop",
                "logprobs": None,
            }
        ],
        "usage": {"prompt_tokens": 20, "completion_tokens": 10, "total_tokens": 30},
    }


@contextmanager
def fake_tool_server(replies: Sequence[Reply | str], *, reject_tools: bool = False) -> Iterator[FakeToolServer]:
    """Answer with ``replies`` in order (a str is a text reply; the last one repeats); yields the server's record.
    A tool call's id is the scripted one, else ``call_<request number>_<index>``."""
    state = FakeToolServer()
    script = [Reply(content=r) if isinstance(r, str) else r for r in replies]
    lock = threading.Lock()

    class Handler(BaseHTTPRequestHandler):
        def _send(self, status: int, payload: dict[str, Any]) -> None:
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def _error(self, message: str) -> None:
            error = {"message": message, "type": "invalid_request_error", "param": "messages", "code": None}
            self._send(400, {"error": error})

        def do_GET(self) -> None:
            if self.path.rstrip("/").endswith("/models"):
                self._send(200, {"object": "list", "data": [{"id": MODEL, "object": "model", "owned_by": "fake"}]})
            else:
                self._send(404, {"error": {"message": f"no route {self.path}"}})

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
            with lock:
                state.requests.append(body)
                number = len(state.requests)
                problem = protocol_problem(body)
                if problem is not None:
                    state.violations.append(problem)
            if problem is not None:
                self._error(problem)
            elif reject_tools and body.get("tools"):
                self._error(VLLM_NO_TOOLS)
            else:  # the script advances with each answer (a refused request takes none of it)
                with lock:
                    state.answered += 1
                    reply = script[min(state.answered, len(script)) - 1]
                self._send(200, _completion(reply, number))

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True, name="fake-openai-tool-server")
    thread.start()
    state.base_url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    try:
        yield state
    finally:
        server.shutdown()
        server.server_close()
