"""Host side of the runner protocol: framed request/reply, over a byte stream or one command per call."""

from __future__ import annotations

import asyncio
import base64
import json
import shlex
import uuid
from collections.abc import Callable
from typing import Any, Protocol

from swe_gym.errors import SandboxDiedError, SandboxError
from swe_gym.sandbox.runner import ONE_SHOT_BEGIN, ONE_SHOT_END

#: How long past a command's own timeout the host waits before calling the sandbox dead.
REPLY_GRACE_S = 10.0


class Channel(Protocol):
    """How `RunnerSandbox` reaches its runner: one framed request, one framed reply."""

    async def call(
        self, header: dict[str, Any], payload: bytes = b"", *, timeout: float | None = None
    ) -> tuple[dict[str, Any], bytes]: ...


def _checked(header: dict[str, Any], reply: dict[str, Any]) -> None:
    if not reply.get("ok"):
        raise SandboxError(f"sandbox refused {header.get('op')!r}: {reply.get('error')}")


class ByteSink(Protocol):
    def write(self, data: bytes) -> None: ...

    async def drain(self) -> None: ...


class RunnerChannel:
    """One request at a time to the in-sandbox runner; a lost runner is `SandboxDiedError`."""

    def __init__(self, reader: asyncio.StreamReader, sink: ByteSink, describe: Callable[[], str]) -> None:
        self._reader = reader
        self._sink = sink
        self._describe = describe
        self._lock = asyncio.Lock()
        self.dead_reason: str | None = None

    async def call(
        self, header: dict[str, Any], payload: bytes = b"", *, timeout: float | None = None
    ) -> tuple[dict[str, Any], bytes]:
        if self.dead_reason is not None:
            raise SandboxDiedError(self.dead_reason)
        async with self._lock:
            try:
                return await asyncio.wait_for(self._roundtrip(header, payload), timeout)
            except (asyncio.IncompleteReadError, ConnectionError, BrokenPipeError, OSError) as exc:
                self.dead_reason = f"sandbox stopped answering ({exc!r}); {self._describe()}"
            except TimeoutError:
                self.dead_reason = f"sandbox did not answer within {timeout:.1f}s; {self._describe()}"
            raise SandboxDiedError(self.dead_reason)

    async def _roundtrip(self, header: dict[str, Any], payload: bytes) -> tuple[dict[str, Any], bytes]:
        line = json.dumps({**header, "size": len(payload)}).encode() + b"\n"
        self._sink.write(line + payload)
        await self._sink.drain()
        reply = json.loads(await self._reader.readuntil(b"\n"))
        data = await self._reader.readexactly(reply.get("size", 0)) if reply.get("size") else b""
        _checked(header, reply)
        return reply, data


class CommandTransport(Protocol):
    """A sandbox reachable only one command at a time (a remote API): upload a file, run a command."""

    async def put(self, path: str, data: bytes) -> None: ...

    async def run(self, command: str, timeout: float) -> str:
        """The command's stdout; raise `SandboxDiedError` when the sandbox is gone."""
        ...

    async def start(self, command: str) -> None:
        """Start ``command`` in the background, to outlive this call."""
        ...


#: Request frames up to this size travel base64 in the command line; larger ones as an uploaded file.
INLINE_LIMIT = 48 * 1024
#: What the daemon's client prints when no daemon answers (so the call may safely go one-shot).
NO_DAEMON = "SWE_GYM_NO_DAEMON"
#: How often a lost daemon is restarted before the channel stays one-shot.
DAEMON_RESTARTS = 3


class OneShotChannel:
    """The runner protocol over a `CommandTransport`.

    Each call runs the runner once (``--inline``/``--request``) or, once `start_daemon`
    has started it, hands the request to the runner daemon (``--serve-fifo``) through a
    FIFO, which saves Python's start-up per call. Either way the runner handles the
    request exactly as the long-lived runner would (same exec semantics) and its reply
    comes back base64-encoded on stdout. A call is never sent twice: it falls back to
    one-shot only when the daemon was found missing *before* the request reached it.
    """

    def __init__(self, transport: CommandTransport, runner_command: str, request_dir: str) -> None:
        self._transport = transport
        self._runner_command = runner_command
        self._request_dir = request_dir
        self._daemon_dir = f"{request_dir}/daemon"
        self._daemon = False
        self._restarts_left = 0
        self._lock = asyncio.Lock()

    async def start_daemon(self) -> bool:
        """Start the runner daemon and wait (briefly) until it listens; False if it does not."""
        self._restarts_left = max(self._restarts_left, DAEMON_RESTARTS)
        await self._transport.start(f"{self._runner_command} --serve-fifo {self._daemon_dir}")
        probe = f"if {self._alive()}; then echo up; else echo down; fi"
        for _ in range(60):
            if "up" in await self._transport.run(probe, 10.0):
                self._daemon = True
                return True
            await asyncio.sleep(0.05)
        return False

    async def call(
        self, header: dict[str, Any], payload: bytes = b"", *, timeout: float | None = None
    ) -> tuple[dict[str, Any], bytes]:
        timeout = timeout or 3600.0
        async with self._lock:
            if not self._daemon and self._restarts_left > 0:
                self._restarts_left -= 1
                await self.start_daemon()
            if self._daemon:
                stdout = await self._via_daemon(header, payload, timeout)
                if NO_DAEMON not in stdout:
                    try:
                        return _decode_reply(header, stdout)
                    except SandboxDiedError:
                        self._daemon = False  # it died with the request: restart it for the next call
                        raise
                self._daemon = False  # gone before our request reached it: one-shot is safe
            return _decode_reply(header, await self._one_shot(header, payload, timeout))

    def _alive(self) -> str:
        """A shell test: the daemon's FIFO is there and its process lives (builtins only: no fork)."""
        d = self._daemon_dir
        return f'{{ [ -p {d}/req ] && read -r pid < {d}/pid && kill -0 "$pid"; }} 2>/dev/null'

    async def _send(self, frame: bytes) -> tuple[str, str]:
        """The shell command producing ``frame`` on stdout, and the runner flag naming it."""
        if len(frame) <= INLINE_LIMIT:
            encoded = base64.b64encode(frame).decode()
            text = frame.decode("utf-8", "replace")
            if "\0" not in text and text.encode() == frame:  # bash's printf builtin: no process to start
                return f"printf '%s' {shlex.quote(text)}", f"--inline {encoded}"
            return f"printf '%s' {encoded} | base64 -d", f"--inline {encoded}"
        path = f"{self._request_dir}/{uuid.uuid4().hex}.req"
        await self._transport.put(path, frame)
        return f"{{ cat {path}; rm -f {path}; }}", f"--request {path}"

    async def _one_shot(self, header: dict[str, Any], payload: bytes, timeout: float) -> str:
        _, request = await self._send(_frame(header, payload))
        return await self._transport.run(f"{self._runner_command} {request}", timeout)

    async def _via_daemon(self, header: dict[str, Any], payload: bytes, timeout: float) -> str:
        d = self._daemon_dir
        reply = f"{d}/r.{uuid.uuid4().hex}"
        send, _ = await self._send(_frame(header, payload))
        # The reply FIFO is opened read-write (never blocks; the daemon always finds a reader) and
        # unlinked at once: the daemon writes to /proc/$$/fd/3, so even `rm -rf /tmp` cannot lose it.
        script = "\n".join(
            [
                f"if ! {self._alive()}; then",
                f"  echo {NO_DAEMON}; exit 0",
                "fi",
                f"mkfifo -m 600 {reply} && exec 3<>{reply} && rm -f {reply} || {{ echo {NO_DAEMON}; exit 0; }}",
                # The reader starts first: the command may delete the very programs it would need later.
                f"timeout {int(timeout) + 5} sed '/^{ONE_SHOT_END}$/q' <&3 &",
                "reader=$!",
                f"{{ echo $$; {send}; }} > {d}/req",
                'wait "$reader"',
            ]
        )
        return await self._transport.run(script, timeout + 10)


def _frame(header: dict[str, Any], payload: bytes) -> bytes:
    return json.dumps({**header, "size": len(payload)}).encode() + b"\n" + payload


def _decode_reply(header: dict[str, Any], stdout: str) -> tuple[dict[str, Any], bytes]:
    begin, end = stdout.find(ONE_SHOT_BEGIN), stdout.find(ONE_SHOT_END)
    if begin < 0 or end < begin:  # the runner died with the request (killed by the command, or the sandbox)
        raise SandboxDiedError(f"the sandbox's runner gave no reply to {header.get('op')!r}: {stdout[-400:]!r}")
    raw = base64.b64decode(stdout[begin + len(ONE_SHOT_BEGIN) : end])
    line, _, data = raw.partition(b"\n")
    reply = json.loads(line)
    _checked(header, reply)
    return reply, data
