"""``swe-gym capture-proxy``: an OpenAI-compatible pass-through that records each call's exact token ids."""

from __future__ import annotations

import argparse
import os
from typing import Any

from swe_gym.errors import ConfigError, require_extra
from swe_gym.policies.llm.config import ENV_PREFIX
from swe_gym.settings import setting


def add_parser(commands: Any) -> None:
    p = commands.add_parser(
        "capture-proxy",
        help="serve an OpenAI-compatible proxy that records every call's exact token ids and logprobs",
        description="Forward /v1/chat/completions, /v1/completions and /v1/models to --upstream, asking it for its "
        "token ids and logprobs, and append one JSON line per call (the request, the response the client got, "
        "its exact tokens) to --out. Point a black-box agent's base URL at http://HOST:PORT/v1.",
    )
    p.add_argument("--upstream", default=None, help=f"the server's OpenAI base URL (default: {ENV_PREFIX}BASE_URL)")
    p.add_argument("--out", required=True, help="the JSONL file the calls are appended to")
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (default: 127.0.0.1)")
    p.add_argument("--port", type=int, default=18800, help="port to listen on (default: 18800)")
    p.add_argument(
        "--chat-template",
        default=None,
        help="the model's chat template (.gguf file, template file or text), for the prompt ids of an "
        "upstream that returns none (llama-cpp-python)",
    )
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    require_extra("swe-gym capture-proxy", "llm", "aiohttp", "httpx")
    from swe_gym.policies.llm.capture_proxy import CaptureProxy, serve

    upstream = args.upstream or setting(ENV_PREFIX, "BASE_URL")
    if not upstream:
        raise ConfigError(f"say which server to forward to: --upstream URL (or set {ENV_PREFIX}BASE_URL)")
    proxy = CaptureProxy(upstream, args.out, chat_template=args.chat_template, api_key=os.environ.get("OPENAI_API_KEY"))
    serve(proxy, args.host, args.port)
    return 0
