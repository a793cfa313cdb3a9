"""`apptainer`: sandboxes as Apptainer (or SingularityCE) containers, for clusters without a Docker daemon.

Images become SIF files built once per image and cached (see `sif.py`). A
sandbox is one long-lived ``apptainer exec`` whose process is our runner, talking
over its stdin/stdout: the equivalent of an instance, with state kept between
steps, but one that cannot outlive us. The container dies with the runner, and
the runner exits when our end of its pipe closes (even if this process is
killed) or at its TTL. Each sandbox gets ``--containall --cleanenv`` (own PID,
IPC and mount namespaces; no host home, no host environment), ``--pid --no-init``
(the runner is PID 1 of its PID namespace, so nothing the agent leaves running can
kill it; apptainer's init shim would be PID 1 otherwise), ``--net --network
none`` unless the spec asks for network, and a writable overlay directory of its
own on disk (the ``--writable-tmpfs`` default of 64 MiB is too small for real
repositories), with ``/tmp``, ``/var/tmp`` and ``$HOME`` on disk too (``--workdir``,
a ``scratch`` directory of its home), so a fork copies everything its commands
can write: the overlay's ``upper`` layer and ``scratch`` (`ApptainerProvider.fork`).
Limits go through a cgroup of ours that holds the whole process
tree, so they work without systemd. ``spython`` builds the images and reports the
version; the long-lived process is spawned directly, since spython has no exec
with an open stdin.
"""

from __future__ import annotations

import base64
import json
import logging
import os
import shlex
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from swe_gym.errors import CheckpointNotSupportedError, ForkNotSupportedError, ImageNotSetError, SandboxError
from swe_gym.sandbox import checkpoints
from swe_gym.sandbox.backend import RUNNER_BOOTSTRAP, RUNNER_ENV, runner_source
from swe_gym.sandbox.checkpoints import SandboxCheckpoint
from swe_gym.sandbox.images import ImageRewriter
from swe_gym.sandbox.protocol import SandboxBackend
from swe_gym.sandbox.providers.cgroups import Cgroup
from swe_gym.sandbox.providers.process import HomeProvider, ProcessSandbox, new_home, remove_home
from swe_gym.sandbox.providers.sif import SifCache, apptainer_binary, needs_no_privs
from swe_gym.sandbox.runner import ENCODED_ENV
from swe_gym.sandbox.spec import SandboxSpec
from swe_gym.settings import settings

log = logging.getLogger(__name__)

GROUP_PREFIX = "apt-"
#: Apptainer passes host variables with this prefix into a ``--cleanenv`` container.
ENV_PASS = "APPTAINERENV_"
#: Characters apptainer's environment quoting would expand, run or drop in a passed value.
_SHELL_QUOTED = frozenset('$`\\"')


class ApptainerProviderConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    type: Literal["apptainer"] = "apptainer"
    binary: str | None = Field(default=None, description="apptainer or singularity on PATH (default: found)")
    cache_dir: Path | None = Field(default=None, description="built SIFs (default: $SWE_GYM_SIF_CACHE or ~/.cache)")
    sif_dir: Path | None = Field(
        default_factory=lambda: settings().sif_dir,
        description="pre-built SIFs, looked up by image name before anything is built",
    )
    root: Path = Field(
        default_factory=lambda: settings().apptainer_root,
        description="per-sandbox state and overlay directories ($SWE_GYM_APPTAINER_ROOT or the temp dir)",
    )
    writable: Literal["overlay", "tmpfs"] = Field(
        default="overlay", description="a per-sandbox overlay directory on disk, or --writable-tmpfs (RAM, capped)"
    )
    no_privs: bool | None = Field(default=None, description="--no-privs (default: when root lacks CAP_SYS_RESOURCE)")
    python: str = "python3"
    build_options: list[str] = Field(default_factory=list, description="extra `apptainer build` options")
    options: list[str] = Field(default_factory=list, description="extra `apptainer exec` options (--nv, --bind ...)")
    image_rewrite: str = ""
    max_concurrent_creates: int = Field(default=8, ge=1)


class ApptainerSandbox(ProcessSandbox):
    provider_name = "apptainer"
    runner_protected = True  # PID 1 of its own PID namespace (--pid --no-init)
    sif: Path
    writable: str = "overlay"


class ApptainerProvider(HomeProvider):
    """Apptainer containers on this host; see the module docstring."""

    name = "apptainer"
    group_prefix = GROUP_PREFIX

    def __init__(self, **options: object) -> None:
        self.config = ApptainerProviderConfig(**options)
        self.rewriter = ImageRewriter.for_provider(self.config.image_rewrite)
        self.max_concurrent_creates = self.config.max_concurrent_creates
        self._sifs: SifCache | None = None

    @property
    def binary(self) -> str:
        return apptainer_binary(self.config.binary)

    @property
    def sifs(self) -> SifCache:
        if self._sifs is None:
            self._sifs = SifCache(self.binary, self.config.cache_dir, self.config.sif_dir, self.config.build_options)
        return self._sifs

    def _exec_argv(self, spec: SandboxSpec, sif: Path, home: Path) -> list[str]:
        no_privs = self.config.no_privs if self.config.no_privs is not None else needs_no_privs()
        # --pid --no-init: the runner is PID 1 of the container's PID namespace, which nothing inside can kill.
        argv = [self.binary, "exec", "--containall", "--cleanenv", "--pid", "--no-init", "--pwd", "/"]
        argv += ["--no-privs"] if no_privs else []
        argv += [] if spec.network else ["--net", "--network", "none"]
        if self.config.writable == "overlay":
            argv += ["--overlay", str(home / "overlay"), "--workdir", str(home / "scratch")]
        else:
            argv += ["--writable-tmpfs"]
        argv += self.config.options
        return [*argv, str(sif), self.config.python, "-c", RUNNER_BOOTSTRAP, "--ttl", str(spec.ttl_s)]

    async def create(self, spec: SandboxSpec) -> ApptainerSandbox:
        if not spec.image:
            raise ImageNotSetError(
                "the apptainer provider needs an image (a .sif path, a docker:// reference or a local Docker image)"
            )
        image = self.rewriter.rewrite(spec.image)
        sif = await self.sifs.get(image)
        spec = spec.model_copy(update={"image": image})
        sandbox_id, home = new_home(self.config.root, spec, image=image, sif=str(sif))
        for name in ("overlay", "scratch"):
            (home / name).mkdir()
        return await self._launch(sandbox_id, home, spec, sif)

    async def fork(self, sandbox: SandboxBackend, spec: SandboxSpec) -> ApptainerSandbox:
        """A new container of the same SIF on a copy of ``sandbox``'s overlay ``upper`` layer and ``scratch``."""
        if not isinstance(sandbox, ApptainerSandbox):
            raise ForkNotSupportedError(f"the apptainer provider cannot fork a {sandbox.provider_name} sandbox")
        if sandbox.writable != "overlay" or self.config.writable != "overlay":
            raise ForkNotSupportedError(
                "apptainer forks copy the overlay directory on disk; with writable='tmpfs' the writable layer "
                "lives in the container's memory: use writable='overlay' (the default)"
            )
        sandbox_id, home = new_home(self.config.root, spec, image=spec.image, sif=str(sandbox.sif))
        try:
            # Only the overlay's upper layer: apptainer makes its work directory anew.
            upper = ([sandbox.home / "overlay" / "upper"], home / "overlay")
            await sandbox.copy_out([upper, ([sandbox.home / "scratch"], home)])
        except BaseException:
            remove_home(home, None)
            raise
        return await self._launch(sandbox_id, home, spec, sandbox.sif)

    async def _launch(self, sandbox_id: str, home: Path, spec: SandboxSpec, sif: Path) -> ApptainerSandbox:
        """Start the container on ``home``'s overlay and scratch (made by `create`, or copied by `fork`)."""
        cgroup = Cgroup.create(f"{GROUP_PREFIX}{sandbox_id}", spec.resources)
        env = {k: v for k, v in os.environ.items() if not k.startswith(ENV_PASS)}
        plain, encoded = {}, {}
        for key, value in spec.command_env().items():  # apptainer expands $, `...` and backslashes in values
            (encoded if any(c in value for c in _SHELL_QUOTED) else plain)[key] = value
        env.update({ENV_PASS + k: v for k, v in plain.items()})
        if encoded:  # decoded by the runner at its start, byte for byte
            env[ENV_PASS + ENCODED_ENV] = base64.b64encode(
                json.dumps(encoded).encode("utf-8", "surrogateescape")
            ).decode()
        env[ENV_PASS + RUNNER_ENV] = runner_source()
        sandbox = ApptainerSandbox(sandbox_id, spec, spec.workdir, home, cgroup)
        sandbox.sif, sandbox.writable = sif, self.config.writable
        await sandbox.boot(self._start(sandbox, self._exec_argv(spec, sif, home), env))
        return sandbox

    async def _start(self, sandbox: ApptainerSandbox, argv: list[str], env: dict[str, str]) -> None:
        await sandbox.spawn_runner(argv, env, sandbox.home)
        made = await sandbox.exec(f"mkdir -p {shlex.quote(sandbox.workdir)}", cwd="/", timeout=60)
        if not made.ok:
            raise SandboxError(f"apptainer sandbox {sandbox.id}: cannot create {sandbox.workdir}: {made.output}")

    # -- checkpoints (SandboxCheckpointer): a copy of the overlay's upper layer and scratch under the root ---------

    async def checkpoint(self, sandbox: SandboxBackend, labels: dict[str, str], ttl_s: float) -> SandboxCheckpoint:
        """Copy ``sandbox``'s overlay ``upper`` layer and ``scratch`` (as a fork does) into
        ``<root>/.checkpoints/<id>``, beside the name of its image (its SIF is rebuilt if the cache lost it)."""
        if not isinstance(sandbox, ApptainerSandbox):
            raise CheckpointNotSupportedError(
                f"the apptainer provider cannot checkpoint a {sandbox.provider_name} sandbox"
            )
        if sandbox.writable != "overlay":
            raise CheckpointNotSupportedError(
                "apptainer checkpoints copy the overlay directory on disk; with writable='tmpfs' the writable layer "
                "lives in the container's memory: use writable='overlay' (the default)"
            )
        checkpoint = checkpoints.new_checkpoint(self.name, sandbox, labels, ttl_s)
        copies = [([sandbox.home / "overlay" / "upper"], "overlay"), ([sandbox.home / "scratch"], "")]
        return await checkpoints.save_dirs(self.config.root, checkpoint, sandbox, copies, sif=str(sandbox.sif))

    async def restore(self, checkpoint: SandboxCheckpoint, spec: SandboxSpec) -> ApptainerSandbox:
        """A new container of the checkpoint's SIF on a copy of its overlay layer and scratch."""
        if self.config.writable != "overlay":
            raise CheckpointNotSupportedError("apptainer restores need writable='overlay' (the default)")
        checkpoints.checkpoint_dir(checkpoint)  # gone: said before anything is made
        image = spec.image or ""
        sif = await self.sifs.get(image)
        sandbox_id, home = new_home(self.config.root, spec, image=image, sif=str(sif))
        try:
            await checkpoints.load_dirs(checkpoint, home)
        except BaseException:
            remove_home(home, None)
            raise
        return await self._launch(sandbox_id, home, spec, sif)


__all__ = ["ApptainerProvider", "ApptainerProviderConfig", "ApptainerSandbox"]
