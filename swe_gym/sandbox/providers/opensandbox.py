"""`opensandbox`: remote sandboxes on an OpenSandbox server (Docker or Kubernetes runtime), through its SDK.

The server's execd runs one command per HTTP call and has no stdin, so the
runner cannot stay attached as it does on the other providers. Instead its
source rides in the sandbox's environment and runs as a daemon started at
create, reached per call by a small shell client through FIFOs (`OneShotChannel`;
if the daemon is gone, the call runs the runner once instead). The request goes
in the command line (or an uploaded file when large), and the runner gives the
same exec semantics as everywhere else (merged output in order, stdin at EOF,
process-group kill on timeout, output cap, exit code 124 on timeout). Files are
uploaded through the SDK's file API.

Every sandbox carries our labels as metadata and the spec's TTL as its server
timeout, so the server removes it even if this process dies; ``swe-gym cleanup``
lists by metadata. A command is never re-sent: only creation is retried.

A fork uses the server's snapshot API: the source is snapshotted (on the Docker
runtime a ``docker commit`` of its container), and the fork created from that
snapshot with the fork's spec; the snapshot (named ``swe_gym.fork.<run id>.<time>``)
is deleted when the fork closes, or by ``cleanup``. A server whose runtime has no
snapshots makes the fork a `ForkNotSupportedError` that says so.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import re
import shlex
import time
from collections.abc import Callable
from datetime import timedelta
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from swe_gym.errors import (
    CheckpointNotSupportedError,
    ConfigError,
    ForkNotSupportedError,
    ImageNotFoundError,
    ImageNotSetError,
    ProviderUnavailableError,
    SandboxDiedError,
    SandboxError,
)
from swe_gym.sandbox import checkpoints
from swe_gym.sandbox import labels as lbl
from swe_gym.sandbox.backend import RUNNER_BOOTSTRAP, RUNNER_ENV, RunnerSandbox, runner_source
from swe_gym.sandbox.channel import REPLY_GRACE_S, OneShotChannel
from swe_gym.sandbox.checkpoints import SandboxCheckpoint
from swe_gym.sandbox.images import ImageRewriter
from swe_gym.sandbox.loop import guarded
from swe_gym.sandbox.protocol import SandboxBackend
from swe_gym.sandbox.spec import SandboxSpec
from swe_gym.settings import setting

try:
    import httpx
    from opensandbox import Sandbox as SDKSandbox
    from opensandbox import SandboxManager
    from opensandbox.config import ConnectionConfig
    from opensandbox.exceptions import (
        InvalidArgumentException,
        SandboxApiException,
        SandboxException,
    )
    from opensandbox.models.execd import RunCommandOpts
    from opensandbox.models.sandboxes import NetworkPolicy, SandboxFilter, SnapshotFilter
    from opensandbox.transport import RetryPolicy
except ImportError as exc:
    raise ProviderUnavailableError(
        f"the opensandbox provider needs the OpenSandbox SDK ({exc}): pip install 'swe_gym[opensandbox]'"
    ) from exc

log = logging.getLogger(__name__)

ENV_PREFIX = "SWE_GYM_OPENSANDBOX_"
#: The server refuses shorter sandbox timeouts.
MIN_TIMEOUT_S = 60
REQUEST_DIR = "/tmp/.swe_gym-requests"
#: How often close asks the server to kill a sandbox before giving up (with a growing pause between).
KILL_ATTEMPTS = 5
_LABEL_VALUE = re.compile(r"[^A-Za-z0-9_.-]")
#: Snapshots carry no metadata: their name says they are ours, the run, and when (``<prefix>.<run id>.<time>``).
SNAPSHOT_PREFIX = "swe_gym.fork"
#: Checkpoints' snapshots: ``<prefix>.<run id>.<created ms>.<expires ms>`` (`OpenSandboxProvider.checkpoint`).
CHECKPOINT_PREFIX = "swe_gym.checkpoint"


def _env(name: str, default: str | None = None) -> str | None:
    return setting(ENV_PREFIX, name, default)


class OpenSandboxProviderConfig(BaseModel):
    """Connection and sandbox settings; each falls back to a ``SWE_GYM_OPENSANDBOX_<NAME>`` variable
    (from the environment or the file ``SWE_GYM_OPENSANDBOX_ENV_FILE`` names)."""

    model_config = ConfigDict(extra="forbid")

    type: Literal["opensandbox"] = "opensandbox"
    domain: str | None = Field(default_factory=lambda: _env("DOMAIN"), description="server host:port")
    api_key: str | None = Field(default_factory=lambda: _env("API_KEY"), repr=False)
    protocol: Literal["http", "https"] = Field(default_factory=lambda: _env("PROTOCOL", "http"))
    use_server_proxy: bool = Field(
        default_factory=lambda: _env("USE_SERVER_PROXY", "false") == "true",
        description="reach execd through the server (when sandboxes are not directly reachable)",
    )
    request_timeout_s: float = Field(default=60.0, gt=0)
    ready_timeout_s: float = Field(default=60.0, gt=0)
    python: str = "python3"
    entrypoint: list[str] | None = Field(default=None, description="the sandbox's main process (server default)")
    network_policy: Literal["deny", "server-default"] = Field(
        default_factory=lambda: _env("NETWORK_POLICY", "deny"),
        description="'deny': a spec without network gets a deny-all egress policy (needs the server's egress "
        "sidecar); 'server-default': leave networking to the server",
    )
    image_rewrite: str = ""
    max_concurrent_creates: int = Field(default=8, ge=1)


@functools.cache
def _warn_no_network_isolation() -> None:
    """Once per process: such sandboxes are not isolated, whatever their spec says."""
    log.warning(
        "opensandbox network_policy='server-default': sandboxes have the server's default network although their "
        "spec asks for none; they can reach the internet and other sandboxes' execd. Use network_policy='deny' "
        "(needs the server's egress sidecar) for untrusted agents."
    )


def _label_safe(labels: dict[str, str]) -> dict[str, str]:
    """Metadata becomes Kubernetes/Docker labels: values limited to 63 label-safe characters."""
    safe = {}
    for key, value in labels.items():
        cleaned = _LABEL_VALUE.sub("-", str(value))[:63].strip("-_.")
        safe[key] = cleaned or "none"
    return safe


def _never_connected(exc: BaseException | None) -> bool:
    """The request never reached the sandbox: no connection could be made, or the server says it is gone."""
    while exc is not None:
        if isinstance(exc, httpx.ConnectError) or getattr(exc, "status_code", None) == 404:
            return True
        exc = exc.__cause__ or exc.__context__
    return False


def _died(sandbox_id: str, exc: BaseException, *, in_flight: bool = False) -> SandboxDiedError:
    """``in_flight``: a command was sent; unless it never got through, the sandbox died during the call."""
    return SandboxDiedError(
        f"opensandbox sandbox {sandbox_id} stopped answering ({type(exc).__name__}: {exc})",
        during_call=in_flight and not _never_connected(exc),
    )


class _SDKTransport:
    """`CommandTransport` over the SDK: uploads and commands of one remote sandbox."""

    def __init__(self, sandbox_id: str, remote: Any) -> None:
        self.sandbox_id = sandbox_id
        self.remote = remote

    async def put(self, path: str, data: bytes) -> None:
        try:
            await self.remote.files.write_file(path, data, mode=600)
        except SandboxException as exc:
            raise _died(self.sandbox_id, exc) from exc

    async def run(self, command: str, timeout: float) -> str:
        # The runner enforces the command's own timeout; the SDK's only guards a lost sandbox.
        opts = RunCommandOpts(timeout=timedelta(seconds=timeout + REPLY_GRACE_S))
        try:
            async with asyncio.timeout(timeout + 2 * REPLY_GRACE_S):
                execution = await self.remote.commands.run(command, opts=opts)
        except (SandboxException, TimeoutError) as exc:
            raise _died(self.sandbox_id, exc, in_flight=True) from exc
        return "".join(message.text for message in execution.logs.stdout)

    async def start(self, command: str) -> None:
        try:
            await self.remote.commands.run(command, opts=RunCommandOpts(background=True))
        except SandboxException as exc:
            raise _died(self.sandbox_id, exc) from exc


class OpenSandboxSandbox(RunnerSandbox):
    provider_name = "opensandbox"

    def __init__(self, remote: Any, spec: SandboxSpec, python: str, *, deny_egress: bool) -> None:
        super().__init__(remote.id, spec, spec.workdir)
        self.remote = remote
        self._deny_egress = deny_egress
        runner = f"{python} -c {shlex.quote(RUNNER_BOOTSTRAP)}"
        self.channel = OneShotChannel(_SDKTransport(remote.id, remote), runner, REQUEST_DIR)
        self.attach(self.channel)
        self.snapshot_id: str | None = None  # a fork's: the snapshot it was created from, deleted with it
        self.connection: ConnectionConfig | None = None

    @property
    def network_isolated(self) -> bool:
        """Only with the deny-all egress policy: the server's default network reaches other sandboxes' execd."""
        return self._deny_egress and not self.spec.network

    async def write_file(self, path: str, content: bytes | str, mode: int = 0o644) -> None:
        if self._closed:
            raise SandboxError(f"sandbox {self.id} is closed")
        data = content.encode() if isinstance(content, str) else content
        try:  # the SDK takes the mode as octal digits (0o644 -> 644)
            await self.remote.files.write_file(self._abs(path), data, mode=int(f"{mode:o}"))
        except SandboxApiException as exc:
            raise SandboxError(f"cannot write {path} in sandbox {self.id}: {exc}") from exc
        except SandboxException as exc:
            raise _died(self.id, exc) from exc

    async def _terminate(self) -> None:
        """Kill until the server says it is gone: a first kill of a container still full of processes
        (a fork bomb) can fail after the kill, leaving it exited but not removed; the next one removes it."""
        try:
            for attempt in range(KILL_ATTEMPTS):
                try:
                    await self.remote.kill()
                    return
                except SandboxApiException as exc:
                    if exc.status_code == 404:  # already gone (expired, killed from outside)
                        return
                    failure: SandboxException = exc
                except SandboxException as exc:
                    failure = exc
                await asyncio.sleep(0.5 * (attempt + 1))
            log.warning("opensandbox sandbox %s: kill failed %d times: %s", self.id, KILL_ATTEMPTS, failure)
        finally:
            with contextlib.suppress(Exception):
                await self.remote.close()
            if self.snapshot_id is not None and self.connection is not None:
                await _delete_snapshot(self.connection, self.snapshot_id)


async def _delete_snapshot(connection: ConnectionConfig, snapshot_id: str) -> None:
    """Delete a fork's snapshot; a conflict (the server still removes the fork's container) is retried."""
    try:
        manager = await SandboxManager.create(connection)
    except SandboxException as exc:
        log.warning("cannot reach the OpenSandbox server to delete snapshot %s: %s", snapshot_id, exc)
        return
    try:
        for attempt in range(KILL_ATTEMPTS):
            try:
                await manager.delete_snapshot(snapshot_id)
                return
            except SandboxApiException as exc:
                if exc.status_code == 404:
                    return
                failure: SandboxException = exc
            except SandboxException as exc:
                failure = exc
            await asyncio.sleep(0.2 * (attempt + 1))
        log.warning("opensandbox snapshot %s: delete failed %d times: %s", snapshot_id, KILL_ATTEMPTS, failure)
    finally:
        with contextlib.suppress(Exception):
            await manager.close()


class OpenSandboxProvider:
    """Sandboxes on an OpenSandbox server; see the module docstring."""

    name = "opensandbox"

    def __init__(self, **options: Any) -> None:
        self.config = OpenSandboxProviderConfig(**options)
        self.rewriter = ImageRewriter.for_provider(self.config.image_rewrite)
        self.max_concurrent_creates = self.config.max_concurrent_creates

    @property
    def _deny_egress(self) -> bool:
        return self.config.network_policy == "deny"

    def connection(self) -> ConnectionConfig:
        if not self.config.domain:
            raise ProviderUnavailableError(
                "the opensandbox provider needs a server: pass domain=HOST:PORT (and api_key=...) "
                f"or set {ENV_PREFIX}DOMAIN and {ENV_PREFIX}API_KEY"
            )
        # No transport retries: a command must never run twice; creation is retried as a whole.
        return ConnectionConfig(
            domain=self.config.domain,
            api_key=self.config.api_key,
            protocol=self.config.protocol,
            use_server_proxy=self.config.use_server_proxy,
            request_timeout=timedelta(seconds=self.config.request_timeout_s),
            retry_policy=RetryPolicy.disabled(),
            disable_metrics=True,
        )

    def _create_error(self, image: str, exc: SandboxException) -> SandboxError:
        status = getattr(exc, "status_code", None)
        text = f"{type(exc).__name__}: {exc}"
        if "IMAGE_PULL" in text or "ImageNotFound" in text or "No such image" in text:
            return ImageNotFoundError(f"the OpenSandbox server has no image {image!r} and could not pull it ({text})")
        if status in (401, 403):
            return ProviderUnavailableError(f"the OpenSandbox server refused our API key ({text}); check api_key")
        if status in (400, 422) or isinstance(exc, InvalidArgumentException):
            return ConfigError(f"the OpenSandbox server rejected the sandbox request ({text})")
        if status is None and "onnect" in type(exc).__name__:
            return ProviderUnavailableError(
                f"cannot reach the OpenSandbox server at {self.config.domain} ({text}); is it running?"
            )
        return SandboxError(f"OpenSandbox could not create a sandbox from {image!r} ({text})")

    def _create_kwargs(self, spec: SandboxSpec) -> dict[str, Any]:
        res = spec.resources
        resource = {"cpu": str(res.cpus or 1), "memory": f"{res.memory_mb}Mi" if res.memory_mb else "2Gi"}
        kwargs: dict[str, Any] = {
            "env": {**spec.command_env(), RUNNER_ENV: runner_source()},
            "metadata": _label_safe(lbl.sandbox_labels(spec.labels, spec.ttl_s)),
            "timeout": timedelta(seconds=max(MIN_TIMEOUT_S, int(spec.ttl_s))),
            "resource": resource,
            "skip_health_check": True,  # our own, faster probe below
        }
        if self.config.entrypoint:
            kwargs["entrypoint"] = self.config.entrypoint
        if not spec.network and self.config.network_policy == "deny":
            kwargs["network_policy"] = NetworkPolicy(default_action="deny", egress=[])
        elif not spec.network:
            _warn_no_network_isolation()
        return kwargs

    async def _wait_ready(self, remote: Any) -> None:
        deadline = time.monotonic() + self.config.ready_timeout_s
        while not await remote.is_healthy():
            if time.monotonic() > deadline:
                raise SandboxError(
                    f"opensandbox sandbox {remote.id} was not ready within {self.config.ready_timeout_s}s"
                )
            await asyncio.sleep(0.05)

    async def create(self, spec: SandboxSpec) -> OpenSandboxSandbox:
        if not spec.image:
            raise ImageNotSetError("the opensandbox provider needs an image: set SandboxSpec.image or the task's")
        image = self.rewriter.rewrite(spec.image)
        spec = spec.model_copy(update={"image": image})
        connection = self.connection()
        try:
            remote = await guarded(
                SDKSandbox.create(image, connection_config=connection, **self._create_kwargs(spec)), _kill_quietly
            )
        except SandboxException as exc:
            raise self._create_error(image, exc) from exc
        sandbox = OpenSandboxSandbox(remote, spec, self.config.python, deny_egress=self._deny_egress)
        await sandbox.boot(self._ready(sandbox))
        return sandbox

    async def fork(self, sandbox: SandboxBackend, spec: SandboxSpec) -> OpenSandboxSandbox:
        """A new sandbox from a snapshot of ``sandbox`` (see the module docstring)."""
        if not isinstance(sandbox, OpenSandboxSandbox):
            raise ForkNotSupportedError(f"the opensandbox provider cannot fork a {sandbox.provider_name} sandbox")
        connection = self.connection()

        async def delete(snapshot_id: str) -> None:
            await _delete_snapshot(connection, snapshot_id)

        name = f"{SNAPSHOT_PREFIX}.{lbl.current_run_id()}.{time.time():.0f}"
        async with sandbox.quiet():
            snapshot_id = await guarded(self._snapshot(sandbox, connection, name, ForkNotSupportedError), delete)
        try:
            remote = await self._from_snapshot(snapshot_id, spec, connection)
        except BaseException:
            await delete(snapshot_id)
            raise
        fork = OpenSandboxSandbox(remote, spec, self.config.python, deny_egress=self._deny_egress)
        fork.snapshot_id, fork.connection = snapshot_id, connection
        await fork.boot(self._ready(fork, copied=True))  # a failed boot closes it, which deletes the snapshot
        return fork

    async def _from_snapshot(self, snapshot_id: str, spec: SandboxSpec, connection: ConnectionConfig) -> Any:
        """The SDK's sandbox started from ``snapshot_id`` with ``spec`` (killed if we are cancelled meanwhile)."""
        try:
            kwargs = self._create_kwargs(spec)
            created = SDKSandbox.create(snapshot_id=snapshot_id, connection_config=connection, **kwargs)
            return await guarded(created, _kill_quietly)
        except SandboxException as exc:
            raise self._create_error(f"snapshot {snapshot_id}", exc) from exc

    async def _snapshot(
        self,
        sandbox: OpenSandboxSandbox,
        connection: ConnectionConfig,
        name: str,
        unsupported: type[ForkNotSupportedError] | type[CheckpointNotSupportedError],
    ) -> str:
        """Snapshot ``sandbox`` as ``name`` and wait until the snapshot can be restored; its id. ``unsupported``:
        what a runtime without snapshots raises (for a fork, for a checkpoint)."""
        purpose = "a fork" if unsupported is ForkNotSupportedError else "a checkpoint"
        try:
            info = await sandbox.remote.create_snapshot(name=name)
        except SandboxApiException as exc:
            if exc.status_code == 501 or "UNSUPPORTED_RUNTIME" in str(exc) or "NOT_IMPLEMENTED" in str(exc):
                raise unsupported(
                    f"the OpenSandbox server at {self.config.domain} cannot snapshot sandboxes on its runtime, which "
                    f"{purpose} needs ({exc}); use a runtime with snapshots (e.g. its Docker runtime) or start anew"
                ) from exc
            raise SandboxError(f"opensandbox could not snapshot sandbox {sandbox.id} for {purpose}: {exc}") from exc
        except SandboxException as exc:
            raise _died(sandbox.id, exc) from exc
        deadline = time.monotonic() + self.config.ready_timeout_s
        manager = await SandboxManager.create(connection)
        try:
            while True:
                state = info.status.state
                if state == "Ready":
                    return info.id
                if state not in ("Creating", "Pending"):
                    await _delete_snapshot(connection, info.id)
                    raise SandboxError(
                        f"the snapshot of opensandbox sandbox {sandbox.id} failed ({state}: {info.status.message})"
                    )
                if time.monotonic() > deadline:
                    await _delete_snapshot(connection, info.id)
                    raise SandboxError(f"the snapshot of {sandbox.id} was not ready in {self.config.ready_timeout_s}s")
                await asyncio.sleep(0.02)
                info = await manager.get_snapshot(info.id)
        except SandboxException as exc:
            await _delete_snapshot(connection, info.id)
            raise SandboxError(f"opensandbox lost the snapshot of sandbox {sandbox.id}: {exc}") from exc
        finally:
            with contextlib.suppress(Exception):
                await manager.close()

    async def _ready(self, sandbox: OpenSandboxSandbox, *, copied: bool = False) -> None:
        """``copied``: a fork, whose file system holds the source's runner daemon directory (stale: cleared)."""
        try:
            await self._wait_ready(sandbox.remote)
            if copied:
                await sandbox.remote.commands.run(f"rm -rf {REQUEST_DIR}")
        except SandboxException as exc:
            raise SandboxError(f"opensandbox sandbox {sandbox.id} never became ready: {exc}") from exc
        if not await sandbox.channel.start_daemon():
            log.warning("opensandbox sandbox %s: runner daemon did not start; one Python start per call", sandbox.id)
        # `boot` pings the runner next (which proves python3 works), then writes the spec's files.
        workdir = await sandbox.exec(f"mkdir -p {shlex.quote(sandbox.spec.workdir)}", cwd="/", timeout=30)
        if not workdir.ok:
            raise SandboxError(f"cannot create the workdir in opensandbox sandbox {sandbox.id}: {workdir.output}")

    async def connect(self, sandbox_id: str, spec: SandboxSpec | None = None) -> OpenSandboxSandbox:
        """Attach to a sandbox that already runs on the server (made by us or another process)."""
        try:
            remote = await SDKSandbox.connect(sandbox_id, connection_config=self.connection(), skip_health_check=True)
            await self._wait_ready(remote)
        except SandboxException as exc:
            raise SandboxError(f"cannot connect to opensandbox sandbox {sandbox_id}: {exc}") from exc
        sandbox = OpenSandboxSandbox(
            remote, spec or SandboxSpec(image="unknown"), self.config.python, deny_egress=self._deny_egress
        )
        await sandbox.boot(asyncio.sleep(0))
        return sandbox

    async def cleanup(
        self,
        *,
        run_id: str | None = None,
        older_than_s: float | None = None,
        labels: dict[str, str] | None = None,
    ) -> list[str]:
        wanted = {lbl.MANAGED: "true", **({lbl.RUN_ID: run_id} if run_id else {})}
        wanted = _label_safe({**wanted, **{lbl.label_key(k): v for k, v in (labels or {}).items()}})
        try:
            manager = await SandboxManager.create(self.connection())
        except SandboxException as exc:
            raise ProviderUnavailableError(f"cannot reach the OpenSandbox server: {exc}") from exc
        removed: list[str] = []
        try:
            doomed = []
            page = 1
            while True:
                found = await manager.list_sandbox_infos(SandboxFilter(metadata=wanted, page_size=100, page=page))
                for info in found.sandbox_infos:
                    if lbl.matches(dict(info.metadata or {}), run_id=None, older_than_s=older_than_s):
                        doomed.append(info.id)
                if not found.sandbox_infos or not found.pagination.has_next_page:
                    break
                page += 1
            for sandbox_id in doomed:
                try:
                    await manager.kill_sandbox(sandbox_id)
                except SandboxApiException as exc:
                    if exc.status_code != 404:
                        raise
                removed.append(sandbox_id)
            if not labels:  # snapshots have a name, no labels: a label filter never selects them
                removed += await self._cleanup_snapshots(manager, run_id, older_than_s)
                removed += await self._cleanup_checkpoint_snapshots(manager, run_id, older_than_s)
        finally:
            await manager.close()
        return removed

    async def _cleanup_snapshots(self, manager: Any, run_id: str | None, older_than_s: float | None) -> list[str]:
        """Delete the forks' snapshots of ``run_id`` (None: any) older than ``older_than_s`` that no sandbox uses."""

        def doomed(name: str) -> bool:
            parts = name.removeprefix(SNAPSHOT_PREFIX + ".").rsplit(".", 1)
            if not name.startswith(SNAPSHOT_PREFIX + ".") or len(parts) != 2:
                return False
            if run_id is not None and parts[0] != run_id:
                return False
            return older_than_s is None or time.time() - float(parts[1] or 0) >= older_than_s

        return await _delete_snapshots_named(manager, doomed)

    # -- checkpoints (SandboxCheckpointer): a server snapshot, its name saying ours, the run, created, expires ----

    async def checkpoint(self, sandbox: SandboxBackend, labels: dict[str, str], ttl_s: float) -> SandboxCheckpoint:
        """Snapshot ``sandbox`` (between commands) as ``swe_gym.checkpoint.<run id>.<created>.<expires>`` (times in
        ms): snapshots carry no metadata, so the name is what cleanup selects by; the caller's labels live in the
        handle."""
        if not isinstance(sandbox, OpenSandboxSandbox):
            raise CheckpointNotSupportedError(
                f"the opensandbox provider cannot checkpoint a {sandbox.provider_name} sandbox"
            )
        checkpoint = checkpoints.new_checkpoint(self.name, sandbox, labels, ttl_s)
        created_ms, expires_ms = int(checkpoint.created_at * 1000), int(checkpoint.expires_at * 1000)
        name = f"{CHECKPOINT_PREFIX}.{lbl.current_run_id()}.{created_ms}.{expires_ms}"
        connection = self.connection()

        async def delete(snapshot_id: str) -> None:
            await _delete_snapshot(connection, snapshot_id)

        async with sandbox.quiet():
            snapshot_id = await guarded(self._snapshot(sandbox, connection, name, CheckpointNotSupportedError), delete)
        return checkpoint.model_copy(update={"reference": snapshot_id})

    async def restore(self, checkpoint: SandboxCheckpoint, spec: SandboxSpec) -> OpenSandboxSandbox:
        """A new sandbox from the checkpoint's snapshot (which stays, for further restores)."""
        connection = self.connection()
        manager = await SandboxManager.create(connection)
        try:
            await manager.get_snapshot(checkpoint.reference)
        except SandboxApiException as exc:
            if exc.status_code == 404:
                raise checkpoints.gone(checkpoint, f"snapshot {checkpoint.reference}") from exc
            raise SandboxError(f"opensandbox could not look up snapshot {checkpoint.reference}: {exc}") from exc
        except SandboxException as exc:
            raise ProviderUnavailableError(f"cannot reach the OpenSandbox server: {exc}") from exc
        finally:
            with contextlib.suppress(Exception):
                await manager.close()

        remote = await self._from_snapshot(checkpoint.reference, spec, connection)
        sandbox = OpenSandboxSandbox(remote, spec, self.config.python, deny_egress=self._deny_egress)
        await sandbox.boot(self._ready(sandbox, copied=True))
        return sandbox

    async def remove_checkpoint(self, checkpoint: SandboxCheckpoint) -> None:
        await _delete_snapshot(self.connection(), checkpoint.reference)

    async def cleanup_checkpoints(
        self, *, run_id: str | None = None, older_than_s: float | None = None, labels: dict[str, str] | None = None
    ) -> list[str]:
        if labels:  # snapshots have a name, no labels: a label filter never selects them
            return []
        try:
            manager = await SandboxManager.create(self.connection())
        except SandboxException as exc:
            raise ProviderUnavailableError(f"cannot reach the OpenSandbox server: {exc}") from exc
        try:
            return await self._cleanup_checkpoint_snapshots(manager, run_id, older_than_s)
        finally:
            await manager.close()

    async def _cleanup_checkpoint_snapshots(
        self, manager: Any, run_id: str | None, older_than_s: float | None
    ) -> list[str]:
        """Delete the checkpoints' snapshots `checkpoints.selected` picks by their names, unless a sandbox uses one."""

        def doomed(name: str) -> bool:
            marks = checkpoint_name_labels(name)
            return bool(marks) and checkpoints.selected(marks, run_id=run_id, older_than_s=older_than_s, extra=None)

        return await _delete_snapshots_named(manager, doomed)


async def _delete_snapshots_named(manager: Any, doomed: Callable[[str], bool]) -> list[str]:
    """Delete the server's snapshots whose names ``doomed`` picks, except those a sandbox still runs from; their ids."""
    ids, page = [], 1
    while True:
        try:
            found = await manager.list_snapshots(SnapshotFilter(page_size=100, page=page))
        except SandboxApiException as exc:  # a server without snapshots has none of ours either
            log.debug("opensandbox: no snapshots listed (%s)", exc)
            return []
        ids += [info.id for info in found.snapshot_infos if doomed(info.name or "")]
        if not found.snapshot_infos or not found.pagination.has_next_page:
            break
        page += 1
    removed = []
    for snapshot_id in ids:
        try:
            await manager.delete_snapshot(snapshot_id)
        except SandboxApiException as exc:
            if exc.status_code == 409:  # a sandbox forked or restored from it still runs
                continue
            if exc.status_code != 404:
                raise
        removed.append(snapshot_id)
    return removed


async def _kill_quietly(remote: Any) -> None:
    with contextlib.suppress(Exception):
        await remote.kill()
    with contextlib.suppress(Exception):
        await remote.close()


def checkpoint_name_labels(name: str) -> dict[str, str]:
    """The labels a checkpoint snapshot's name stands for (``<prefix>.<run id>.<created ms>.<expires ms>``), or {}."""
    if not name.startswith(CHECKPOINT_PREFIX + "."):
        return {}
    parts = name.removeprefix(CHECKPOINT_PREFIX + ".").rsplit(".", 2)
    if len(parts) != 3 or not all(part.isdigit() for part in parts[1:]):
        return {}
    created, expires = (f"{int(part) / 1000:.3f}" for part in parts[1:])
    return {lbl.MANAGED: "true", lbl.RUN_ID: parts[0], lbl.CREATED_AT: created, lbl.EXPIRES_AT: expires}


__all__ = ["OpenSandboxProvider", "OpenSandboxProviderConfig", "OpenSandboxSandbox"]
