"""`docker`: sandboxes as containers through the Docker SDK.

The runner is the container's main process (PID 1, so ``kill -9 -1`` inside
cannot stop it) and we stay attached to its stdin/stdout for the container's
life: a step is one message on that socket, no Docker API call. Creation costs
create + attach + start. Every container carries our labels, the spec's limits,
no network unless asked, and ``auto_remove``; the runner exits at its TTL or
when our end of the socket closes (``stdin_once``), so an orphan removes itself
even if this process is killed. It can also commit a sandbox to an image (`ImageCommitter`), which
keeps the source image's configuration and carries our labels, so ``cleanup`` removes such images too.

A fork (`DockerProvider.fork`) is a new container of the source's image whose writable layer is a copy
of the source's: on a local engine with the overlay2 storage driver (whose directories we can read)
the source is paused, its layer's upper directory copied into the new, not yet started container's
(``cp -a --reflink=auto``), and unpaused; elsewhere (a remote engine, another storage driver, or
``fork="commit"``) the source is committed (paused meanwhile) to an image labelled ours, which the
fork runs from and which goes when the fork closes (or with ``cleanup``). Either way the writable
layer holds everything commands wrote outside volumes: the repository, ``/tmp``, installed packages.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import uuid
from collections import deque
from collections.abc import AsyncIterator
from typing import Any, Literal

import requests
from pydantic import BaseModel, ConfigDict, Field

from swe_gym.errors import (
    CheckpointNotSupportedError,
    ForkNotSupportedError,
    ImageNotFoundError,
    ImageNotSetError,
    ProviderUnavailableError,
    SandboxError,
)
from swe_gym.progress import Progress
from swe_gym.sandbox import checkpoints
from swe_gym.sandbox import labels as lbl
from swe_gym.sandbox.backend import READY_TIMEOUT_S, RUNNER_BOOTSTRAP, RUNNER_ENV, RunnerSandbox, runner_source
from swe_gym.sandbox.channel import RunnerChannel
from swe_gym.sandbox.checkpoints import SandboxCheckpoint
from swe_gym.sandbox.create import FORKED_FROM
from swe_gym.sandbox.delta import read_delta
from swe_gym.sandbox.images import ImageRewriter
from swe_gym.sandbox.images import split_tag as _split_tag
from swe_gym.sandbox.links import FdLink, StreamLink
from swe_gym.sandbox.loop import guarded, offload
from swe_gym.sandbox.protocol import SandboxBackend
from swe_gym.sandbox.providers import direct_channel
from swe_gym.sandbox.providers.cgroups import Cgroup
from swe_gym.sandbox.providers.direct_channel import MOUNT, DirectChannel, DirectChannelRefusedError
from swe_gym.sandbox.providers.process import copy_tree
from swe_gym.sandbox.spec import ImageInfo, SandboxSpec
from swe_gym.settings import settings

try:
    import docker
    import docker.errors
except ImportError as exc:  # pragma: no cover - docker is a core dependency
    raise ProviderUnavailableError("the docker provider needs the 'docker' package: pip install docker") from exc

log = logging.getLogger(__name__)

_STDOUT = 1
#: docker-py's base URL for an engine on a Unix socket: one on this host, sharing its files.
LOCAL_ENGINE = "http+docker://localhost"
#: Images a fork commits (``fork="commit"``) are tagged ``swe-gym-fork:<random>``.
FORK_REPOSITORY = "swe-gym-fork"
#: Checkpoints (`DockerProvider.checkpoint`) are images tagged ``swe-gym-checkpoint:<checkpoint id>``.
CHECKPOINT_REPOSITORY = "swe-gym-checkpoint"


class DockerProviderConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    type: Literal["docker"] = "docker"
    base_url: str | None = None
    python: str = "python3"
    runtime: str | None = None
    image_rewrite: str = ""
    pull: Literal["never", "missing"] = Field(
        default_factory=lambda: settings().pull,
        description="pull an image the engine lacks (progress is logged), or fail with ImageNotFoundError",
    )
    max_concurrent_creates: int = Field(default=8, ge=1, description="the daemon fails under many parallel starts")
    channel: Literal["auto", "attach"] = Field(
        default="auto",
        description="how the host reaches each container's runner: 'auto' a Unix socket bind-mounted from this "
        "host on a local engine (skipping the daemon's stream copying), else the attach stream; 'attach' always",
    )
    fork: Literal["auto", "copy", "commit"] = Field(
        default="auto",
        description="how a fork copies the writable layer: 'copy' its overlay2 upper directory (a local engine "
        "only), 'commit' it to an image, 'auto' copy where possible, else commit",
    )


class _AttachProtocol(asyncio.Protocol):
    """Demultiplexes Docker's attach stream: stdout to a StreamReader, stderr kept for errors."""

    def __init__(self, reader: asyncio.StreamReader) -> None:
        self.reader = reader
        self.stderr: deque[bytes] = deque(maxlen=32)
        self.transport: asyncio.Transport | None = None
        self._buffer = bytearray()
        self._can_write = asyncio.Event()
        self._can_write.set()

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport
        self.reader.set_transport(transport)

    def data_received(self, data: bytes) -> None:
        buffer = self._buffer
        buffer += data
        while len(buffer) >= 8:
            size = int.from_bytes(buffer[4:8], "big")
            if len(buffer) < 8 + size:
                break
            stream, payload = buffer[0], bytes(buffer[8 : 8 + size])
            del buffer[: 8 + size]
            if stream == _STDOUT:
                self.reader.feed_data(payload)
            else:
                self.stderr.append(payload)

    def connection_lost(self, exc: Exception | None) -> None:
        self.reader.feed_eof()
        self._can_write.set()

    def pause_writing(self) -> None:
        self._can_write.clear()

    def resume_writing(self) -> None:
        self._can_write.set()

    # ByteSink
    def write(self, data: bytes) -> None:
        if self.transport is None or self.transport.is_closing():
            raise ConnectionResetError("attach socket closed")
        self.transport.write(data)

    async def drain(self) -> None:
        await self._can_write.wait()


class DockerSandbox(RunnerSandbox):
    provider_name = "docker"
    runner_protected = True  # the container's PID 1

    def __init__(self, container_id: str, spec: SandboxSpec, api: Any, direct: DirectChannel | None = None) -> None:
        super().__init__(container_id[:12], spec, spec.workdir)
        self.container_id = container_id
        self._api = api
        self._direct = direct
        self._direct_link: FdLink | None = None
        self._protocol: _AttachProtocol | None = None
        self._keepalive: Any = None
        self.fork_image: str | None = None  # the image a fork committed for this container, removed with it
        self.upper_dir: str | None = None  # its overlay2 upper directory, once a fork has looked it up
        self.pid: int | None = None  # its runner's host pid (0: none), once a fork has looked it up
        self.lower_dirs: list[str] = []  # its overlay2 lower directories (topmost first), with ``upper_dir``

    def _describe(self) -> str:
        stderr = b"".join(self._protocol.stderr).decode(errors="replace")[-400:] if self._protocol else ""
        return f"docker container {self.id}; runner stderr: {stderr.strip() or '(empty)'}"

    async def _connect(self) -> None:
        api = self._api
        params = {"stdin": 1, "stdout": 1, "stderr": 1, "stream": 1}
        socket_io = await asyncio.to_thread(api.attach_socket, self.container_id, params)
        raw = getattr(socket_io, "_sock", socket_io)
        if not hasattr(raw, "dup"):
            raise SandboxError(
                f"docker base_url {api.base_url} gives no plain socket to attach to; use unix:// or tcp://"
            )
        self._keepalive = socket_io
        reader = asyncio.StreamReader(limit=1 << 20)
        loop = asyncio.get_running_loop()
        _, self._protocol = await loop.create_connection(lambda: _AttachProtocol(reader), sock=raw.dup())
        if self._direct is None:
            self.attach(RunnerChannel(StreamLink(reader, self._protocol), self._describe))
        try:
            await asyncio.to_thread(api.start, self.container_id)
        except docker.errors.APIError as exc:
            raise SandboxError(
                f"container for image {self.spec.image!r} failed to start its runner ({exc.explanation or exc}); "
                "the image needs python3 on PATH"
            ) from exc
        if self._direct is not None:
            await self._connect_direct(reader)

    async def _connect_direct(self, attached: asyncio.StreamReader) -> None:
        """The runner's connection to our socket as the channel (see `direct_channel`)."""
        assert self._direct is not None
        exited = asyncio.ensure_future(attached.read())  # the runner writes nothing there: EOF is its end

        async def runner_pid() -> int:
            state = (await asyncio.to_thread(self._api.inspect_container, self.container_id))["State"]
            return int(state.get("Pid") or 0)

        try:
            connection = await self._direct.accept(runner_pid, exited, READY_TIMEOUT_S)
        finally:
            exited.cancel()
        if connection is None:
            raise DirectChannelRefusedError(
                f"the runner of container {self.id} could not connect to this host's socket (an engine that does not "
                f"share this host's files?); {self._describe()}"
            )
        self._direct_link = FdLink(connection.fileno(), connection.fileno(), connection.close)
        self.attach(RunnerChannel(self._direct_link, self._describe))

    async def _terminate(self) -> None:
        if self._direct_link is not None:
            self._direct_link.close()
        if self._direct is not None:
            self._direct.close()
        if self._protocol is not None and self._protocol.transport is not None:
            self._protocol.transport.close()
        if self._keepalive is not None:
            self._keepalive.close()
        try:
            await offload(self._api.remove_container, self.container_id, force=True)
        except docker.errors.NotFound:
            pass
        except docker.errors.APIError as exc:
            if exc.status_code != 409:  # 409: removal already in progress (auto_remove)
                raise SandboxError(f"could not remove container {self.id}: {exc}") from exc
        if self.fork_image is not None:
            await offload(_remove_fork_images, self._api, self.fork_image)


def _remove_fork_images(api: Any, image_id: str) -> None:
    """Remove a fork's image, then each parent that a fork made too, until one is still in use (blocking)."""
    while image_id:
        try:
            parent = api.inspect_image(image_id).get("Parent") or ""
            api.remove_image(image_id)  # never forced: one that a container or a child image uses stays
        except docker.errors.NotFound:
            return
        except docker.errors.APIError as exc:
            if exc.status_code != 409:
                log.warning("could not remove fork image %s: %s", image_id, exc)
            return  # in use (a fork of this fork): the last user's close, or cleanup, removes it
        try:
            labels = (api.inspect_image(parent)["Config"].get("Labels") or {}) if parent else {}
        except docker.errors.NotFound:
            return
        image_id = parent if labels.get(lbl.label_key(FORKED_FROM)) and labels.get(lbl.MANAGED) == "true" else ""


class DockerProvider:
    """Containers on a Docker engine; see the module docstring."""

    #: A commit costs more than uploading a small repository; prepared images are for scrubbed histories.
    prepares_every_task = True
    replays_through_runners = True

    name = "docker"

    def __init__(self, **options: Any) -> None:
        self.config = DockerProviderConfig(**options)
        self.rewriter = ImageRewriter.for_provider(self.config.image_rewrite)
        self._api: Any = None
        self._direct_refused = False  # a runner could not reach our socket: attach from then on
        self.max_concurrent_creates = self.config.max_concurrent_creates

    @property
    def api(self) -> Any:
        if self._api is None:
            try:
                kwargs = {"base_url": self.config.base_url} if self.config.base_url else {}
                client = (
                    docker.DockerClient(**kwargs, max_pool_size=64) if kwargs else docker.from_env(max_pool_size=64)
                )
                client.ping()
            except docker.errors.DockerException as exc:
                raise ProviderUnavailableError(
                    f"cannot reach the Docker engine ({exc}); start dockerd or set DOCKER_HOST"
                ) from exc
            self._api = client.api
        return self._api

    def _create_container(self, spec: SandboxSpec, image: str, direct: DirectChannel | None = None) -> str:
        api = self.api
        res = spec.resources
        host_config = api.create_host_config(
            auto_remove=True,
            binds=direct.bind if direct is not None else None,
            log_config=docker.types.LogConfig(type="none"),  # every frame would be written to disk again
            network_mode="bridge" if spec.network else "none",
            mem_limit=f"{res.memory_mb}m" if res.memory_mb else None,
            memswap_limit=f"{res.memory_mb}m" if res.memory_mb else None,
            nano_cpus=int(res.cpus * 1e9) if res.cpus else None,
            pids_limit=res.pids,
            runtime=self.config.runtime,
        )
        config = api.create_container_config(
            image,
            command=[self.config.python, "-c", RUNNER_BOOTSTRAP, "--ttl", str(spec.ttl_s)]
            + (["--connect", f"{MOUNT}/s"] if direct is not None else []),
            stdin_open=True,
            tty=False,
            working_dir=spec.workdir,
            environment={**spec.command_env(), RUNNER_ENV: runner_source()},
            labels=lbl.sandbox_labels(spec.labels, spec.ttl_s),
            host_config=host_config,
        )
        # Our end of the attach socket closing (even by a crash) closes the runner's stdin.
        config["StdinOnce"] = True
        try:
            created = api.create_container_from_config(config)
        except docker.errors.ImageNotFound as exc:
            if self.config.pull != "missing":
                raise ImageNotFoundError(
                    f"docker image {image!r} is not on this engine; build it, `docker pull {image}`, "
                    "or let swe_gym pull missing images (pull='missing' or SWE_GYM_PULL=missing)"
                ) from exc
            self._pull(image)
            created = api.create_container_from_config(config)
        return created["Id"]

    def _pull(self, image: str) -> None:
        """Pull ``image``, logging each layer's progress; a failed pull is `ImageNotFoundError`."""
        repository, tag = _split_tag(image)
        log.info("pulling %s (not on this engine)", image)
        last: dict[str, str] = {}
        layers: dict[str, tuple[int, int]] = {}  # layer -> (bytes done, total), for the progress bar
        try:
            with Progress(None, f"pulling {image}", "B", unit_scale=True) as bar:
                for event in self.api.pull(repository, tag=tag, stream=True, decode=True):
                    if "error" in event:
                        raise ImageNotFoundError(f"could not pull {image}: {event['error']}")
                    layer, status = event.get("id", ""), event.get("status", "")
                    if last.get(layer) != status:  # one line per layer per phase, not per progress tick
                        last[layer] = status
                        log.info("pull %s: %s %s %s", image, layer, status, event.get("progress", ""))
                    detail = event.get("progressDetail") or {}
                    if status == "Downloading" and detail.get("total"):
                        layers[layer] = (int(detail.get("current", 0)), int(detail["total"]))
                        done = sum(current for current, _ in layers.values())
                        bar.set_total(sum(total for _, total in layers.values()))
                        bar.advance_to(done, postfix=f"{len(layers)} layers")
        except docker.errors.APIError as exc:
            raise ImageNotFoundError(f"could not pull {image}: {exc.explanation or exc}") from exc
        log.info("pulled %s", image)

    async def create(self, spec: SandboxSpec) -> DockerSandbox:
        if not spec.image:
            raise ImageNotSetError(
                "the docker provider needs an image: set SandboxSpec.image, the task's image, or SWEEnv(image=...)"
            )
        image = self.rewriter.rewrite(spec.image)
        try:
            return await self._started(spec, image, spec.model_copy(update={"image": image}))
        except (docker.errors.APIError, requests.RequestException) as exc:
            raise SandboxError(f"docker could not start a container from {image!r}: {exc}") from exc

    @property
    def _direct_channel(self) -> bool:
        """Whether containers get a `DirectChannel`: a local engine (which shares our files), unless refused."""
        return self.config.channel == "auto" and not self._direct_refused and self.api.base_url == LOCAL_ENGINE

    async def _container(self, spec: SandboxSpec, image: str, sandbox_spec: SandboxSpec | None = None) -> DockerSandbox:
        """A created, not yet started container of ``image`` for ``spec``, as the sandbox (``sandbox_spec``) it
        becomes once booted (`_boot`)."""
        direct = await offload(DirectChannel.open) if self._direct_channel else None
        try:
            created = asyncio.to_thread(self._create_container, spec, image, direct)
            container_id = await guarded(created, self._remove_quietly)
        except BaseException:
            if direct is not None:
                direct.close()
            raise
        return DockerSandbox(container_id, sandbox_spec or spec, self.api, direct)

    async def _boot(self, sandbox: DockerSandbox) -> None:
        """Start ``sandbox``'s container and reach its runner (closed if that fails). A runner that could not
        connect to our socket turns the direct channel off for this provider, said once."""
        try:
            await sandbox.boot(sandbox._connect())
        except DirectChannelRefusedError as exc:
            if not self._direct_refused:
                log.warning("docker: %s; using the attach stream from now on", exc)
            self._direct_refused = True
            raise

    async def _started(self, spec: SandboxSpec, image: str, sandbox_spec: SandboxSpec | None = None) -> DockerSandbox:
        """`_container` then `_boot`; where the direct channel was refused, once more on attach."""
        sandbox = await self._container(spec, image, sandbox_spec)
        try:
            await self._boot(sandbox)
        except DirectChannelRefusedError:
            sandbox = await self._container(spec, image, sandbox_spec)
            await self._boot(sandbox)
        return sandbox

    async def image_info(self, image: str) -> ImageInfo | None:
        if not image:
            return None  # (no image named: create says how to give one)
        return await asyncio.to_thread(self._image_info, self.rewriter.rewrite(image))

    def _image_info(self, image: str) -> ImageInfo | None:
        try:
            data = self.api.inspect_image(image)
        except docker.errors.ImageNotFound:
            return None
        labels = data["Config"].get("Labels") or {}
        return ImageInfo(id=data["Id"], labels=labels, repo_digests=tuple(data.get("RepoDigests") or ()))

    async def commit(self, sandbox: SandboxBackend, image: str, labels: dict[str, str]) -> ImageInfo:
        if not isinstance(sandbox, DockerSandbox):
            raise SandboxError(f"the docker provider cannot commit a {sandbox.provider_name} sandbox")
        try:
            return await asyncio.to_thread(self._commit, sandbox, self.rewriter.rewrite(image), labels)
        except docker.errors.APIError as exc:
            raise SandboxError(f"docker could not commit container {sandbox.id} to {image!r}: {exc}") from exc

    def _commit(self, sandbox: DockerSandbox, image: str, labels: dict[str, str]) -> ImageInfo:
        api = self.api
        source = api.inspect_image(sandbox.spec.image)["Config"]
        env = source.get("Env") or []
        # The engine adds every container variable the new config lacks (the runner's source, the spec's
        # env): naming each one, empty, keeps them out; our containers set them anyway.
        known = {item.split("=", 1)[0] for item in env}
        added = {item.split("=", 1)[0] for item in api.inspect_container(sandbox.container_id)["Config"]["Env"] or []}
        conf = {
            "Env": [*env, *(f"{key}=" for key in sorted(added - known))],
            "Cmd": source.get("Cmd"),
            "Entrypoint": source.get("Entrypoint"),
            "WorkingDir": source.get("WorkingDir") or "",
            "User": source.get("User") or "",
            "Labels": {**(source.get("Labels") or {}), **lbl.image_labels(labels)},
        }
        repository, tag = _split_tag(image)
        api.commit(sandbox.container_id, repository=repository, tag=tag, conf=conf)
        info = self._image_info(image)
        if info is None:
            raise SandboxError(f"docker committed container {sandbox.id} but has no image {image!r}")
        return info

    async def fork(self, sandbox: SandboxBackend, spec: SandboxSpec) -> DockerSandbox:
        """A new container on a copy of ``sandbox``'s writable layer (see the module docstring)."""
        if not isinstance(sandbox, DockerSandbox):
            raise ForkNotSupportedError(f"the docker provider cannot fork a {sandbox.provider_name} sandbox")
        try:
            upper = None if self.config.fork == "commit" else await asyncio.to_thread(self._upper_dir, sandbox)
            if upper is None and self.config.fork == "copy":
                raise ForkNotSupportedError(
                    "fork='copy' needs a local Docker engine with the overlay2 storage driver whose directories "
                    "this process can read; use fork='auto' or 'commit'"
                )
            if upper is not None:
                return await self._fork_by_copy(sandbox, spec, upper)
            return await self._fork_by_commit(sandbox, spec)
        except (docker.errors.APIError, requests.RequestException) as exc:
            raise SandboxError(f"docker could not fork container {sandbox.id}: {exc}") from exc

    async def fork_into(self, sandbox: SandboxBackend, targets: list[SandboxBackend]) -> bool:
        """Replay ``sandbox``'s writable layer (read from its overlay2 upper directory while it is paused) in each
        started container of ``targets`` through its runner (`swe_gym.sandbox.delta`); False on a remote engine,
        another storage driver, ``fork="commit"`` or a layer too big or not replayable."""
        if not isinstance(sandbox, DockerSandbox) or not all(isinstance(t, DockerSandbox) for t in targets):
            return False
        upper = None if self.config.fork == "commit" else await asyncio.to_thread(self._upper_dir, sandbox)
        if upper is None:
            return False
        try:
            async with sandbox.quiet(), self._paused(sandbox):
                delta = await asyncio.to_thread(read_delta, upper, sandbox.lower_dirs, None, (MOUNT.lstrip("/"),))
        except (docker.errors.APIError, requests.RequestException, OSError, RecursionError) as exc:
            # (RecursionError: a tree deeper than os.walk recurses; the fork is made the usual way then)
            raise SandboxError(f"docker could not read the layer of container {sandbox.id} for a fork: {exc}") from exc
        if delta is None:
            return False
        await asyncio.gather(*(target.apply_delta(delta) for target in targets))
        return True

    @contextlib.asynccontextmanager
    async def _paused(self, sandbox: DockerSandbox) -> AsyncIterator[None]:
        """Every process of the container stopped meanwhile: its freezer group written directly where this
        process can (a millisecond), else ``docker pause`` (tens of them). Resumed inline: a cancelled fork
        leaves it running."""
        group = await asyncio.to_thread(self._freezer, sandbox)
        if group is not None and await offload(group.freeze):
            try:
                yield
            finally:
                group.thaw()
            return
        if group is not None:
            group.thaw()  # partly frozen: docker's pause does it whole
        await asyncio.to_thread(self.api.pause, sandbox.container_id)
        try:
            yield
        finally:
            self.api.unpause(sandbox.container_id)

    def _freezer(self, sandbox: DockerSandbox) -> Cgroup | None:
        if sandbox.pid is None:
            sandbox.pid = int(self.api.inspect_container(sandbox.container_id)["State"]["Pid"] or 0)
        return Cgroup.freezer_of(sandbox.pid) if sandbox.pid else None

    def _upper_dir(self, sandbox: DockerSandbox) -> str | None:
        """The container's overlay2 upper directory, where this process can copy it (a local engine)."""
        if self.api.base_url != LOCAL_ENGINE:
            return None
        if sandbox.upper_dir is None:
            container = self.api.inspect_container(sandbox.container_id)
            sandbox.pid = int(container["State"]["Pid"] or 0)
            driver = container.get("GraphDriver") or {}
            upper = (driver.get("Data") or {}).get("UpperDir")
            lowers = (driver.get("Data") or {}).get("LowerDir") or ""
            sandbox.lower_dirs = [lower for lower in lowers.split(":") if lower and os.access(lower, os.R_OK | os.X_OK)]
            ours = driver.get("Name") == "overlay2" and upper and os.access(upper, os.R_OK | os.X_OK)
            sandbox.upper_dir = upper if ours else ""
        return sandbox.upper_dir or None

    async def _fork_by_copy(self, sandbox: DockerSandbox, spec: SandboxSpec, upper: str) -> DockerSandbox:
        image = sandbox.spec.image or ""
        fork = await self._container(spec, image)
        try:
            data = (await asyncio.to_thread(self.api.inspect_container, fork.container_id))["GraphDriver"]["Data"]
            async with sandbox.quiet(), self._paused(sandbox):
                await copy_tree([upper], data["UpperDir"], into=True)
        except BaseException:
            await fork.close()
            raise
        await self._boot(fork)
        return fork

    async def _fork_by_commit(self, sandbox: DockerSandbox, spec: SandboxSpec) -> DockerSandbox:
        tag = f"{FORK_REPOSITORY}:{uuid.uuid4().hex}"

        async def remove_image(info: ImageInfo) -> None:
            await offload(_remove_fork_images, self.api, info.id)

        async with sandbox.quiet():  # docker commit pauses the container while it copies the layer
            work = asyncio.to_thread(self._commit, sandbox, tag, {FORKED_FROM: sandbox.id})
            image = await guarded(work, remove_image)
        fork_spec = spec.model_copy(update={"image": tag})
        try:
            fork = await self._container(fork_spec, tag)
        except BaseException:
            await remove_image(image)
            raise
        fork.fork_image = image.id
        await self._boot(fork)  # a failed boot closes it, which removes the image too
        return fork

    async def _remove_quietly(self, container_id: str) -> None:
        with contextlib.suppress(docker.errors.APIError):
            await offload(self.api.remove_container, container_id, force=True)

    async def cleanup(
        self,
        *,
        run_id: str | None = None,
        older_than_s: float | None = None,
        labels: dict[str, str] | None = None,
    ) -> list[str]:
        return await asyncio.to_thread(self._cleanup, run_id, older_than_s, labels)

    def _cleanup(self, run_id: str | None, older_than_s: float | None, labels: dict[str, str] | None) -> list[str]:
        direct_channel.sweep()
        removed = []
        for info in self.api.containers(all=True, filters={"label": f"{lbl.MANAGED}=true"}):
            if not lbl.matches(info.get("Labels") or {}, run_id=run_id, older_than_s=older_than_s, extra=labels):
                continue
            try:
                self.api.remove_container(info["Id"], force=True)
            except docker.errors.NotFound:
                pass
            except docker.errors.APIError as exc:
                if exc.status_code != 409:
                    raise
            removed.append(info["Id"][:12])
        images = [
            info
            for info in self.api.images(filters={"label": f"{lbl.MANAGED}=true"})
            if lbl.matches(info.get("Labels") or {}, run_id=run_id, older_than_s=older_than_s, extra=labels)
            and lbl.label_key(checkpoints.CHECKPOINT) not in (info.get("Labels") or {})  # by their own rule, below
        ]
        while images:  # again while some went: a fork of a fork's image is a child the parent waits for
            in_use = []
            for info in images:
                try:
                    self.api.remove_image(info["Id"])  # never forced: an image a container still uses stays
                except docker.errors.NotFound:
                    pass
                except docker.errors.APIError as exc:
                    if exc.status_code != 409:
                        raise
                    in_use.append(info)
                    continue
                removed.append(info["Id"].removeprefix("sha256:")[:12])
            if len(in_use) == len(images):
                break
            images = in_use
        return removed + self._cleanup_checkpoints(run_id, older_than_s, labels)

    # -- checkpoints (SandboxCheckpointer): the container committed to an image labelled ours, with an expiry ------

    async def checkpoint(self, sandbox: SandboxBackend, labels: dict[str, str], ttl_s: float) -> SandboxCheckpoint:
        """Commit ``sandbox`` (paused meanwhile, between commands) to ``swe-gym-checkpoint:<id>``, labelled ours,
        with the checkpoint's id and expiry (the source image's configuration kept, as `commit` keeps it)."""
        if not isinstance(sandbox, DockerSandbox):
            raise CheckpointNotSupportedError(
                f"the docker provider cannot checkpoint a {sandbox.provider_name} sandbox"
            )
        checkpoint = checkpoints.new_checkpoint(self.name, sandbox, labels, ttl_s)
        tag = f"{CHECKPOINT_REPOSITORY}:{checkpoint.id}"

        async def remove_image(info: ImageInfo) -> None:
            with contextlib.suppress(docker.errors.APIError):
                await offload(self.api.remove_image, info.id)

        try:
            async with sandbox.quiet():
                await guarded(asyncio.to_thread(self._commit, sandbox, tag, checkpoint.labels), remove_image)
        except (docker.errors.APIError, requests.RequestException) as exc:
            raise SandboxError(f"docker could not checkpoint container {sandbox.id}: {exc}") from exc
        return checkpoint.model_copy(update={"reference": tag})

    async def restore(self, checkpoint: SandboxCheckpoint, spec: SandboxSpec) -> DockerSandbox:
        """A new container of the checkpoint's image (which stays, for further restores)."""
        tag = checkpoint.reference
        if await asyncio.to_thread(self._image_info, tag) is None:
            raise checkpoints.gone(checkpoint, f"image {tag}")
        restored = spec.model_copy(update={"image": tag})
        try:
            sandbox = await self._started(restored, tag)
        except (docker.errors.APIError, requests.RequestException) as exc:
            raise SandboxError(f"docker could not start a container from checkpoint {tag}: {exc}") from exc
        return sandbox

    async def remove_checkpoint(self, checkpoint: SandboxCheckpoint) -> None:
        """Remove the checkpoint's image; one a restored container still runs from is untagged (the container goes
        on; ``swe-gym cleanup`` removes the image once it is unused)."""
        await asyncio.to_thread(self._remove_checkpoint_image, checkpoint.reference)

    def _remove_checkpoint_image(self, tag: str) -> None:
        if not tag.startswith(f"{CHECKPOINT_REPOSITORY}:"):
            raise SandboxError(f"{tag!r} is not a checkpoint image of swe_gym ({CHECKPOINT_REPOSITORY}:<id>)")
        try:
            self.api.remove_image(tag)
        except docker.errors.NotFound:
            pass
        except docker.errors.APIError as exc:
            if exc.status_code != 409:
                raise SandboxError(f"docker could not remove checkpoint image {tag}: {exc}") from exc
            with contextlib.suppress(docker.errors.NotFound):
                self.api.remove_image(tag, force=True)  # by its tag, forced: untagged only while in use

    async def cleanup_checkpoints(
        self, *, run_id: str | None = None, older_than_s: float | None = None, labels: dict[str, str] | None = None
    ) -> list[str]:
        return await asyncio.to_thread(self._cleanup_checkpoints, run_id, older_than_s, labels)

    def _cleanup_checkpoints(
        self, run_id: str | None, older_than_s: float | None, labels: dict[str, str] | None
    ) -> list[str]:
        removed = []
        for info in self.api.images(filters={"label": lbl.label_key(checkpoints.CHECKPOINT)}):
            marks = info.get("Labels") or {}
            if not checkpoints.selected(marks, run_id=run_id, older_than_s=older_than_s, extra=labels):
                continue
            try:
                self.api.remove_image(info["Id"], force=True)  # forced: every tag; never one a container uses
            except docker.errors.NotFound:
                pass
            except docker.errors.APIError as exc:
                if exc.status_code != 409:
                    raise
                continue
            removed.append(marks.get(lbl.label_key(checkpoints.CHECKPOINT), info["Id"][:12]))
        return removed
