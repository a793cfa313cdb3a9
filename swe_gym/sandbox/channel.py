"""Host side of the runner protocol: authenticated request/reply, over a byte stream or one command per call.

Each channel has its own random key, known only to the host and its runner; every
request carries a fresh random id, every reply echoes it under an HMAC (see
`swe_gym.sandbox.runner.frame_mac`). A reply that does not verify, answers another
request, or comes with bytes around it was not the runner's: `ChannelTamperedError`,
and the channel stays dead.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import re
import secrets
import shlex
import time
import uuid
from collections.abc import Callable
from typing import Any, Protocol

from swe_gym.errors import ChannelTamperedError, SandboxDiedError, SandboxError
from swe_gym.sandbox.links import FdLink, Link
from swe_gym.sandbox.runner import (
    ONE_SHOT_BEGIN,
    ONE_SHOT_END,
    REPLY_TAG,
    REQUEST_TAG,
    BadFrame,
    check_mac,
    decode_frame,
    encode_frame,
    split_line,
)
from swe_gym.sandbox.turn import Turn

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


def _tampered(what: str, describe: str) -> ChannelTamperedError:
    return ChannelTamperedError(
        f"the sandbox's runner channel was tampered with: {what}. Only code inside the sandbox can do this "
        f"(e.g. writing into the runner's streams); the sandbox is not trusted any more. {describe}"
    )


class _FoundDead(Exception):
    """The runner was gone before our request reached it."""


class RunnerChannel:
    """One request at a time to the in-sandbox runner, over a `Link`; a lost runner is `SandboxDiedError`.

    A call comes from swe_gym's loop (`call`) or, over a link that can block (`FdLink`), right from the caller's
    thread (`call_here`): the same frames, checks and failures either way, one at a time (a `Turn`).

    The key goes to the runner as the first line on its stdin (which nothing in the
    sandbox can read: the runner is non-dumpable), in front of the first request.
    """

    def __init__(self, link: Link, describe: Callable[[], str], exited: Callable[[], bool] = lambda: False) -> None:
        """``exited``: whether the runner's process is known to have exited (checked before each request)."""
        self._link = link
        self._describe = describe
        self._exited = exited
        self._turn = Turn()
        self._key = secrets.token_bytes(32)
        self._greeting = self._key.hex().encode() + b"\n"
        self._failure: SandboxDiedError | None = None

    @property
    def dead_reason(self) -> str | None:
        return str(self._failure) if self._failure is not None else None

    @property
    def here(self) -> bool:
        """Whether `call_here` can work (the link can block in the caller's thread)."""
        return self._link.here

    async def call(
        self, header: dict[str, Any], payload: bytes = b"", *, timeout: float | None = None
    ) -> tuple[dict[str, Any], bytes]:
        async with self._turn.held():
            self._raise_found_dead()
            try:
                async with asyncio.timeout(timeout):
                    reply, data = await self._roundtrip(header, payload)
            except Exception as exc:
                raise self._fail(exc, timeout) from exc
            except BaseException as exc:  # cancelled: its reply may still come, never as the next one's
                self._fail(exc, timeout)
                raise
        _checked(header, reply)  # a refusal is the runner's answer: the channel goes on
        return reply, data

    def call_here(
        self, header: dict[str, Any], payload: bytes = b"", *, timeout: float | None = None
    ) -> tuple[dict[str, Any], bytes] | None:
        """`call` in the calling thread, when the link can block and no other call is under way; else None, and
        nothing was sent. Blocks until the reply (or ``timeout``); never call it from swe_gym's loop."""
        if not self._link.here or not self._turn.try_take():
            return None
        try:
            self._raise_found_dead()
            deadline = time.monotonic() + (timeout if timeout is not None else 1e9)
            try:
                reply, data = self._roundtrip_here(header, payload, deadline)
            except Exception as exc:
                raise self._fail(exc, timeout) from exc
            except BaseException as exc:  # Ctrl-C: its reply may still come, never as the next one's
                self._fail(exc, timeout)
                raise
        finally:
            self._turn.give()
        _checked(header, reply)  # a refusal is the runner's answer: the channel goes on
        return reply, data

    def _raise_found_dead(self) -> None:
        if self._failure is not None:  # found dead: the same error, not caused by this request
            raise type(self._failure)(str(self._failure))

    def _fail(self, exc: BaseException, timeout: float | None) -> SandboxDiedError:
        """What ``exc``, raised midway through a call, makes of the channel: dead for good, and why."""
        describe = self._describe()
        if isinstance(exc, _FoundDead):
            self._failure = SandboxDiedError(f"sandbox was already gone ({exc}); {describe}")
        elif isinstance(exc, BadFrame):
            self._failure = _tampered(str(exc), describe)
        elif isinstance(exc, TimeoutError):
            self._failure = SandboxDiedError(
                f"sandbox did not answer within {timeout or 0:.1f}s; {describe}", during_call=True
            )
        elif isinstance(exc, (EOFError, OSError)):
            self._failure = SandboxDiedError(f"sandbox stopped answering ({exc!r}); {describe}", during_call=True)
        else:  # cancelled, interrupted or broken midway
            self._failure = SandboxDiedError(f"a call to the sandbox was abandoned midway ({exc!r}); {describe}")
        return self._failure

    def _request(self, header: dict[str, Any], payload: bytes) -> tuple[str, bytes]:
        if self._link.at_eof() or self._exited():
            raise _FoundDead("its runner had exited before the request")
        request_id = secrets.token_hex(16)
        frame = self._greeting + encode_frame(self._key, REQUEST_TAG, {**header, "id": request_id}, payload)
        self._greeting = b""
        return request_id, frame

    @staticmethod
    def _reply_head(request_id: str, line: bytes) -> tuple[str, dict[str, Any], bytes]:
        mac, reply, raw = split_line(line)
        if reply["id"] != request_id:
            raise BadFrame(f"a reply to another request (id {reply['id'][:40]!r}) came first")
        return mac, reply, raw

    def _verified(self, head: tuple[str, dict[str, Any], bytes], data: bytes) -> tuple[dict[str, Any], bytes]:
        mac, reply, raw = head
        check_mac(self._key, REPLY_TAG, mac, reply, raw, data)
        return reply, data

    async def _roundtrip(self, header: dict[str, Any], payload: bytes) -> tuple[dict[str, Any], bytes]:
        request_id, frame = self._request(header, payload)
        try:
            await self._link.send(frame)
        except OSError as exc:
            raise _FoundDead(repr(exc)) from exc
        head = self._reply_head(request_id, await self._link.line())
        return self._verified(head, await self._link.exactly(head[1]["size"]))

    def _roundtrip_here(self, header: dict[str, Any], payload: bytes, deadline: float) -> tuple[dict[str, Any], bytes]:
        link = self._link
        assert isinstance(link, FdLink)
        request_id, frame = self._request(header, payload)
        try:
            link.send_now(frame, deadline)
        except TimeoutError:
            raise
        except OSError as exc:
            raise _FoundDead(repr(exc)) from exc
        head = self._reply_head(request_id, link.line_now(deadline))
        return self._verified(head, link.exactly_now(head[1]["size"], deadline))


class CommandTransport(Protocol):
    """A sandbox reachable only one command at a time (a remote API): upload a file, run a command."""

    async def put(self, path: str, data: bytes) -> None: ...

    async def run(self, command: str, timeout: float) -> str:
        """The command's stdout; raise `SandboxDiedError` when the sandbox is gone."""
        ...

    async def start(self, command: str) -> None:
        """Start ``command`` in the background, to outlive this call."""
        ...


#: Request frames up to this size travel in the command line; larger ones as an uploaded file.
INLINE_LIMIT = 48 * 1024
#: What the daemon's client prints when no daemon answers (so the call may safely go one-shot).
NO_DAEMON = "SWE_GYM_NO_DAEMON"
#: How often a lost daemon is restarted before the channel stays one-shot.
DAEMON_RESTARTS = 3
#: The whole stdout of a call that the runner answered: its reply between markers, nothing else.
_REPLY_TEXT = re.compile(rf"{ONE_SHOT_BEGIN}\n([A-Za-z0-9+/=\n]*){ONE_SHOT_END}\n")


class OneShotChannel:
    """The runner protocol over a `CommandTransport`.

    Each call runs the runner once (``--request``) or, once `start_daemon` has started
    it, hands the request to the runner daemon (``--serve-fifo``) through a FIFO, which
    saves Python's start-up per call. Either way the runner handles the request exactly
    as the long-lived runner would (same exec semantics) and its reply comes back
    base64-encoded on stdout. A call is never sent twice: it falls back to one-shot only
    when the daemon was found missing *before* the request reached it.

    The key reaches the runner only in uploaded files (mode 600), which the runner reads
    and deletes before it runs anything; never in a command line or the environment. What
    remains: a process that an earlier command left running as root in the sandbox can read
    such a file in the instant between its upload and its removal, i.e. when the daemon is
    (re)started after commands ran (it was killed, or its FIFO removed) or a call goes one-shot.
    A daemon started at creation, before any command, has no such window.
    """

    def __init__(self, transport: CommandTransport, runner_command: str, request_dir: str) -> None:
        self._transport = transport
        self._runner_command = runner_command
        self._request_dir = request_dir
        self._daemon_dir = f"{request_dir}/daemon"
        self._daemon = False
        self._restarts_left = 0
        self._lock = asyncio.Lock()
        self._key = secrets.token_bytes(32)
        self._tampered: str | None = None

    def _key_upload(self, data: bytes = b"") -> tuple[str, bytes]:
        """A fresh upload path and its content: the key's hex line, then ``data``."""
        return f"{self._request_dir}/{uuid.uuid4().hex}.req", self._key.hex().encode() + b"\n" + data

    async def start_daemon(self) -> bool:
        """Start the runner daemon and wait (briefly) until it listens; False if it does not."""
        self._restarts_left = max(self._restarts_left, DAEMON_RESTARTS)
        path, key = self._key_upload()
        await self._transport.put(path, key)
        await self._transport.start(f"{self._runner_command} --serve-fifo {self._daemon_dir} --key-file {path}")
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
            if self._tampered is not None:
                raise ChannelTamperedError(self._tampered)
            try:
                return await self._call(header, payload, timeout)
            except ChannelTamperedError as exc:
                self._tampered = str(exc)
                raise

    async def _call(self, header: dict[str, Any], payload: bytes, timeout: float) -> tuple[dict[str, Any], bytes]:
        request_id = secrets.token_hex(16)
        frame = encode_frame(self._key, REQUEST_TAG, {**header, "id": request_id}, payload)
        if not self._daemon and self._restarts_left > 0:
            self._restarts_left -= 1
            await self.start_daemon()
        if self._daemon:
            stdout = await self._via_daemon(frame, timeout)
            if NO_DAEMON not in stdout:
                try:
                    return self._decode_reply(request_id, header, stdout)
                except SandboxDiedError:
                    self._daemon = False  # it died with the request: restart it for the next call
                    raise
            self._daemon = False  # gone before our request reached it: one-shot is safe
        path, data = self._key_upload(frame)
        await self._transport.put(path, data)
        stdout = await self._transport.run(f"{self._runner_command} --request {path}", timeout)
        return self._decode_reply(request_id, header, stdout)

    def _alive(self) -> str:
        """A shell test: the daemon's FIFO is there and its process lives (builtins only: no fork)."""
        d = self._daemon_dir
        return f'{{ [ -p {d}/req ] && read -r pid < {d}/pid && kill -0 "$pid"; }} 2>/dev/null'

    async def _send(self, frame: bytes) -> str:
        """The shell command producing ``frame`` on stdout."""
        if len(frame) <= INLINE_LIMIT:
            text = frame.decode("utf-8", "replace")
            if "\0" not in text and text.encode() == frame:  # bash's printf builtin: no process to start
                return f"printf '%s' {shlex.quote(text)}"
            return f"printf '%s' {base64.b64encode(frame).decode()} | base64 -d"
        path = f"{self._request_dir}/{uuid.uuid4().hex}.req"
        await self._transport.put(path, frame)
        return f"{{ cat {path}; rm -f {path}; }}"

    async def _via_daemon(self, frame: bytes, timeout: float) -> str:
        d = self._daemon_dir
        reply = f"{d}/r.{uuid.uuid4().hex}"
        send = await self._send(frame)
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

    def _decode_reply(self, request_id: str, header: dict[str, Any], stdout: str) -> tuple[dict[str, Any], bytes]:
        """The runner's verified reply to ``request_id``, alone on ``stdout``."""
        begin = stdout.find(ONE_SHOT_BEGIN)
        if begin < 0 or stdout.find(ONE_SHOT_END, begin) < 0:  # the runner died with the request
            raise SandboxDiedError(
                f"the sandbox's runner gave no reply to {header.get('op')!r}: {stdout[-400:]!r}", during_call=True
            )
        found = _REPLY_TEXT.fullmatch(stdout)
        if found is None:
            raise _tampered(f"stray output around the reply to {header.get('op')!r}: {stdout[-400:]!r}", "")
        try:
            reply, data = decode_frame(self._key, REPLY_TAG, base64.b64decode(found.group(1)))
        except (BadFrame, binascii.Error) as exc:
            raise _tampered(f"a bad reply to {header.get('op')!r} ({exc})", "") from exc
        if reply["id"] != request_id:
            raise _tampered(f"a reply to another request came for {header.get('op')!r}", "")
        _checked(header, reply)
        return reply, data
