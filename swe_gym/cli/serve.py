"""``swe-gym serve``: the env behind a network API in OpenEnv's protocol (`swe_gym.integrations.openenv`)."""

from __future__ import annotations

import argparse
import ipaddress
import os
import socket
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from swe_gym.cli.model_flags import add_model_flags, model_values
from swe_gym.envs.host import EpisodeHost
from swe_gym.envs.options import EnvOptions, HostConfig, TaskSelection
from swe_gym.errors import ConfigError, require_extra
from swe_gym.sandbox.registry import get_provider
from swe_gym.tools import TOOL_NAMES

#: Where the token comes from when it is not in --token-file.
TOKEN_ENV = "SWE_GYM_SERVE_TOKEN"


class ServeOptions(BaseModel):
    """Where the server listens and how it bounds its sessions; the episodes' options are the env's."""

    model_config = ConfigDict(extra="forbid")

    host: str = Field(default="127.0.0.1", description="address to listen on (loopback unless told otherwise)")
    port: int = Field(default=8000, ge=0, le=65535, description="port to listen on (0: any free one, printed)")
    max_sessions: int = Field(default=64, ge=1, description="concurrent sessions; one more is refused")
    idle_timeout_s: float = Field(
        default=600.0,
        gt=0,
        description="seconds a session may send nothing (while no call of it runs) before its sandboxes go",
        json_schema_extra={"flag": "idle-timeout"},
    )


def add_parser(commands: Any) -> None:
    p = commands.add_parser(
        "serve",
        help="serve the env in OpenEnv's protocol (OpenEnv's client drives episodes)",
        description="Serve episodes over OpenEnv's WebSocket protocol: each client connection is a session "
        "(reset, step with a bash command or a tool call, state, close) whose sandboxes are removed when it "
        "disconnects, sends nothing for --idle-timeout, or the server stops. Listens on loopback and needs a "
        f"token unless told otherwise: ${TOKEN_ENV}, else --token-file (read, or written with a new one), else "
        "a new one printed. The task and env flags are the fields of swe_gym.envs.options, with their defaults; "
        "--tools defaults to all of swe_gym's tools (plain bash strings work either way).",
    )
    p.add_argument(
        "--provider", default="local", help="sandbox provider: local, docker, apptainer, opensandbox (default: local)"
    )
    p.add_argument(
        "--token-file", type=Path, default=None, help="file holding the token (a new one is written there if absent)"
    )
    p.add_argument("--no-auth", action="store_true", help="accept clients without a token (loopback only)")
    p.add_argument(
        "--allow-unisolated",
        action="store_true",
        help="serve local sandboxes without bubblewrap (a client's commands can touch this host)",
    )
    add_model_flags(p.add_argument_group("server"), ServeOptions)
    add_model_flags(p.add_argument_group("tasks"), TaskSelection)
    add_model_flags(p.add_argument_group("episodes"), EnvOptions, exclude=["sandbox"])
    p.set_defaults(func=run)


def is_loopback(host: str) -> bool:
    try:
        return host == "localhost" or ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def resolve_token(args: argparse.Namespace) -> tuple[str | None, str]:
    """The token, and what to print of where it is (the token itself only when it is new and nowhere else)."""
    from swe_gym.integrations.openenv.auth import new_token

    if args.no_auth:
        return None, "none (--no-auth: any client is accepted)"
    if os.environ.get(TOKEN_ENV):
        return os.environ[TOKEN_ENV], f"from ${TOKEN_ENV}"
    path: Path | None = args.token_file
    if path is not None and path.is_file():
        token = path.read_text().strip()
        if not token:
            raise ConfigError(f"--token-file {path} is empty: put a token in it, or remove it to have one made")
        return token, f"read from {path}"
    token = new_token()
    if path is None:
        return token, token
    path.parent.mkdir(parents=True, exist_ok=True)
    path.touch(mode=0o600)
    path.write_text(token + "\n")
    return token, f"written to {path}"


def listening_socket(host: str, port: int) -> socket.socket:
    """A socket bound and listening on ``host:port`` (0: a free port), so the port is known before serving."""
    try:
        family, kind, proto, _, address = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0]
        sock = socket.socket(family, kind, proto)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
    except OSError as exc:
        raise ConfigError(f"cannot listen on --host {host} --port {port}: {exc}") from None
    sock.listen(2048)
    return sock


def run(args: argparse.Namespace) -> int:
    """Serve until SIGINT or SIGTERM; then every session's sandboxes are removed."""
    require_extra("swe-gym serve", "openenv", "openenv", "uvicorn")
    import uvicorn

    from swe_gym.integrations.openenv import create_app

    options = ServeOptions(**model_values(args, ServeOptions))
    token, token_note = resolve_token(args)
    if token is None and not is_loopback(options.host):
        raise ConfigError(f"--no-auth on --host {options.host} would let anyone run commands: keep the token")
    if args.provider == "local" and not args.allow_unisolated and not get_provider("local").isolated:
        raise ConfigError(
            "refusing to serve unisolated local sandboxes (bubblewrap is not available): install bubblewrap, "
            "use --provider docker, or pass --allow-unisolated"
        )
    env_options = {"tools": list(TOOL_NAMES), **model_values(args, EnvOptions)}
    config = HostConfig.parse({"provider": args.provider, **model_values(args, TaskSelection), **env_options})
    host = EpisodeHost(config)
    try:
        app = create_app(host, token=token, max_sessions=options.max_sessions, idle_timeout_s=options.idle_timeout_s)
        sock = listening_socket(options.host, options.port)
        port = sock.getsockname()[1]
        shown_host = f"[{options.host}]" if ":" in options.host else options.host
        print(
            f"swe-gym serve: http://{shown_host}:{port} (OpenEnv protocol; {len(host.tasks)} tasks on "
            f"{host.settings.provider.name}; at most {options.max_sessions} sessions, idle timeout "
            f"{options.idle_timeout_s:g} s)",
            flush=True,
        )
        print(f"token: {token_note}", flush=True)
        server = uvicorn.Server(uvicorn.Config(app, log_level="warning", access_log=False, lifespan="on"))
        server.run(sockets=[sock])
    finally:
        host.close()
    return 0
