"""`local`: the embedded default provider, no daemon needed.

Each sandbox is a workspace directory and a runner process. With bubblewrap
(``bwrap``) on the machine the runner is isolated, the same way for root and
ordinary users wherever the sandbox root is: no capabilities (a user namespace
with every set, the bounding set included, empty; no nested user namespaces),
and an allowlisted host view, read-only: the system directories (``/usr`` and
the ``/bin``, ``/sbin``, ``/lib*`` entries), the few ``/etc`` entries programs
read (`ETC_ENTRIES`), and the directories of the Python running us (commands
use it: pytest for bundled tasks) with swe_gym's own package (gold patches)
masked if it lies inside them. No home directory, service configuration,
``/opt``, ``/var``, sandbox root or other sandbox is visible. ``/tmp`` (a
directory of the sandbox's home, so on disk), ``/run``, ``/dev`` and ``/proc``
are private; the workspace is mounted writable at the
spec's workdir; fresh PID, IPC, UTS and (unless the spec asks for network)
network namespaces; the runner is PID 1 (so ``kill -9 -1`` cannot take it
down) and dies with its parent. Without bwrap the runner is a plain process
tree: a convenience, not a security boundary, said once per process.

A sandbox's home holds ``work`` (the workspace), ``tmp`` (its ``/tmp``, which is
also ``$HOME`` under bwrap: ``pip install --user`` lands there) and ``state``
(``$HOME`` without bwrap). That is everything its commands can write, so a fork
copies those three (`LocalProvider.fork`, reflinked where the file system can)
and starts a new runner on the copy.

A sandbox can be saved as an image (`LocalProvider.commit`: those three copied
under ``<root>/.images``), which is how a task's repository, setup and scrubbed
history are prepared once, not per reset (`swe_gym.tasks.provision`). A sandbox
started from one records what the copy was (`home_delta.HomeBase`), so a fork
into the warm pool's sandboxes of the same image (`LocalProvider.fork_into`)
rewrites only the paths the episode changed.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import os
import shutil
import subprocess
import sys
import uuid
from functools import cache
from pathlib import Path, PurePosixPath
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from swe_gym.errors import (
    CheckpointNotSupportedError,
    ConfigError,
    ForkNotSupportedError,
    ProviderUnavailableError,
    SandboxError,
)
from swe_gym.sandbox import checkpoints
from swe_gym.sandbox import labels as lbl
from swe_gym.sandbox.backend import RUNNER_BOOTSTRAP, RUNNER_ENV, runner_source
from swe_gym.sandbox.checkpoints import SandboxCheckpoint
from swe_gym.sandbox.loop import offload
from swe_gym.sandbox.protocol import SandboxBackend
from swe_gym.sandbox.providers import home_delta
from swe_gym.sandbox.providers.cgroups import Cgroup
from swe_gym.sandbox.providers.process import HomeProvider, ProcessSandbox, copy_tree, new_home, remove_home
from swe_gym.sandbox.spec import ImageInfo, SandboxSpec
from swe_gym.settings import settings

log = logging.getLogger(__name__)

GROUP_PREFIX = "sbx-"
#: The directories of a sandbox's home that its commands can write (see the module docstring).
WRITABLE = ("work", "tmp", "state")
#: Where saved homes (`LocalProvider.commit`) live under the root, and the image every other sandbox starts from.
IMAGE_DIR = ".images"
EMPTY_HOME = "local:empty-home"

#: Top-level host entries every command needs (those that exist; merged-/usr symlinks stay symlinks).
SYSTEM_DIRS = ("usr", "bin", "sbin", "lib", "lib32", "lib64", "libx32")

#: What programs read in /etc: users and groups (id, git, getpass), name resolution (for network=True), the
#: dynamic linker's cache, the time zone, public TLS roots (never /etc/ssl/private), Debian's alternatives
#: (awk, editor, ... are symlinks through it), the mount table link, the OS release, Debian's Python config
#: (sitecustomize). Everything else stays out: service configuration (/etc/swe-gym, pip.conf, gitconfig),
#: shadow files, ssh host keys, the machine id.
ETC_ENTRIES = (
    "passwd", "group", "hosts", "resolv.conf", "nsswitch.conf", "host.conf", "gai.conf", "services",
    "protocols", "ld.so.cache", "ld.so.conf", "ld.so.conf.d", "localtime", "timezone", "ssl/certs",
    "ssl/openssl.cnf", "pki/tls/certs", "pki/ca-trust/extracted", "alternatives", "mtab", "os-release",
    "debian_version", "python3", f"python3.{sys.version_info.minor}",
)  # fmt: skip

#: swe_gym's installed package (its bundled tasks hold gold patches and hidden tests), masked wherever shown.
PACKAGE_DIR = Path(__file__).resolve().parents[2]


@cache
def _hardening() -> tuple[str, ...]:
    """``--disable-userns`` where this bubblewrap knows it (0.8+): no nested user namespace to gain caps in."""
    path = shutil.which("bwrap")
    if path is None:
        return ()
    usage = subprocess.run([path, "--help"], capture_output=True, text=True, timeout=30).stdout
    return ("--disable-userns",) if "--disable-userns" in usage else ()


@cache
def bwrap_works() -> bool:
    """Whether bubblewrap can start a sandbox the way `_bwrap_argv` does (user namespaces allowed, ...)."""
    path = shutil.which("bwrap")
    if path is None:
        return False
    probe = [path, "--ro-bind", "/", "/", "--unshare-user", *_hardening(), "--cap-drop", "ALL", "--unshare-pid"]
    return subprocess.run([*probe, "--die-with-parent", "true"], capture_output=True, timeout=30).returncode == 0


@cache
def warn_unisolated() -> None:
    """Say once per process (not per sandbox: an episode creates two) that local sandboxes are unisolated."""
    log.warning(
        "local sandboxes run UNISOLATED (bubblewrap not available or isolation='none'): commands can touch the "
        "host. Install bubblewrap (apt-get install bubblewrap) or use the docker provider for untrusted agents."
    )


class LocalProviderConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    type: Literal["local"] = "local"
    root: Path = Field(
        default_factory=lambda: settings().local_root, description="sandbox homes ($SWE_GYM_LOCAL_ROOT or the temp dir)"
    )
    isolation: Literal["auto", "bwrap", "none"] = "auto"
    max_concurrent_creates: int = Field(default=16, ge=1)


def _interpreter_dirs() -> list[Path]:
    """Where the Python running us lives; commands in the sandbox use it (pytest for bundled tasks)."""
    real = Path(os.path.realpath(sys.executable)).parent.parent
    return sorted({Path(sys.prefix), Path(sys.base_prefix), real} - {Path("/")})


def _inside(path: Path, parent: Path) -> bool:
    return path == parent or parent in path.parents


def _show(path: Path) -> list[str]:
    """Bind ``path`` read-only, or recreate it as the symlink it is where the target is shown anyway."""
    if path.is_symlink() and Path(os.path.realpath(path)).parts[1:2] in (("usr",), ("proc",)):
        return ["--symlink", os.readlink(path), str(path)]
    return ["--ro-bind", str(path), str(path)]


def _host_view(hidden: list[Path], tmp: Path | None = None) -> tuple[list[str], list[Path]]:
    """bwrap arguments for the read-only host view (see the module docstring), and the paths it mounts.

    ``hidden`` (resolved host paths) are covered by an empty read-only tmpfs where they lie inside a shown
    directory; elsewhere they are not shown at all. ``tmp``: the host directory mounted as ``/tmp`` (default:
    a tmpfs).
    """
    argv: list[str] = []
    shown: list[tuple[Path, Path]] = []  # (path in the sandbox, its real host path)
    for path in [Path("/", name) for name in SYSTEM_DIRS] + [Path("/etc", name) for name in ETC_ENTRIES]:
        if path.exists():
            argv += _show(path)
            shown.append((path, Path(os.path.realpath(path))))
    argv += ["--proc", "/proc", "--dev", "/dev", *(["--bind", str(tmp), "/tmp"] if tmp else ["--tmpfs", "/tmp"])]
    argv += ["--tmpfs", "/run"]
    for path in _interpreter_dirs():
        real = Path(os.path.realpath(path))
        if not any(_inside(real, seen) for _, seen in shown):
            argv += ["--ro-bind", str(path), str(path)]
            shown.append((path, real))
    for secret in hidden:
        for path, real in shown:
            if _inside(secret, real):
                masked = str(path / secret.relative_to(real))
                argv += ["--tmpfs", masked, "--remount-ro", masked]
    return argv, [path for path, _ in shown] + [Path(p) for p in ("/proc", "/dev", "/tmp", "/run")]


def _bwrap_argv(spec: SandboxSpec, work: Path, root: Path, tmp: Path | None = None) -> list[str]:
    workdir = PurePosixPath(spec.workdir)
    if not workdir.is_absolute() or workdir == PurePosixPath("/") or ".." in workdir.parts:
        raise ConfigError(f"workdir must be an absolute path below /, got {spec.workdir!r}")
    view, mounted = _host_view([PACKAGE_DIR, Path(os.path.realpath(root))], tmp)
    for path in map(PurePosixPath, mounted):
        if workdir == path or path in workdir.parents or workdir in path.parents:
            raise ConfigError(
                f"workdir {spec.workdir!r} overlaps {path}, which the sandbox shows from the host; "
                "pick a new top-level path such as /testbed"
            )
    argv = ["bwrap", *view, "--bind", str(work), spec.workdir, "--chdir", spec.workdir]
    argv += ["--unshare-user", *_hardening(), "--cap-drop", "ALL"]
    argv += ["--unshare-pid", "--unshare-ipc", "--unshare-uts", "--hostname", "sandbox"]
    if not spec.network:
        argv += ["--unshare-net"]
    argv += ["--remount-ro", "/", "--die-with-parent", "--as-pid-1", "--new-session"]
    return argv


class LocalSandbox(ProcessSandbox):
    provider_name = "local"
    isolated = False
    #: What its home was copied from, for a sandbox started from a saved home (see `home_delta`).
    base: home_delta.HomeBase | None = None

    @property
    def runner_protected(self) -> bool:  # type: ignore[override]
        """Under bwrap the runner is PID 1 of its PID namespace; unisolated, its commands can kill it."""
        return self.isolated

    @property
    def network_isolated(self) -> bool:
        """Unisolated (no bwrap), commands share the host's network whatever the spec says."""
        return self.isolated and not self.spec.network


async def _remove_tree(path: Path) -> None:
    """``rm -rf``, which (unlike a walk by path) goes as deep as a failed copy may have gone."""
    proc = await asyncio.create_subprocess_exec("rm", "-rf", "--", str(path), stdin=asyncio.subprocess.DEVNULL)
    await proc.wait()


def _saved_id(saved: Path) -> str:
    """The id of one save (`LocalProvider.commit`): a save made anew under the same name is another base."""
    return f"local:{json.loads((saved / 'meta.json').read_text())['id']}"


class LocalProvider(HomeProvider):
    """Sandboxes as local process trees; see the module docstring."""

    name = "local"
    group_prefix = GROUP_PREFIX
    #: A saved home costs a copy of the repository once, and saves its upload in every reset.
    prepares_every_task = True
    replays_through_runners = False

    def __init__(self, **options: object) -> None:
        self.config = LocalProviderConfig(**options)
        self.max_concurrent_creates = self.config.max_concurrent_creates

    @property
    def isolated(self) -> bool:
        if self.config.isolation == "none":
            return False
        if bwrap_works():
            return True
        if self.config.isolation == "bwrap":
            raise ProviderUnavailableError(
                "isolation='bwrap' but bubblewrap is missing or refused to start; "
                "install it (apt-get install bubblewrap)"
            )
        return False

    async def create(self, spec: SandboxSpec) -> LocalSandbox:
        isolated = self.isolated
        if not isolated:
            warn_unisolated()
        saved = self._saved(spec.image) if spec.image else None  # any other image name: an empty home
        sandbox_id, home = new_home(self.config.root, spec)
        base = None
        if saved is not None:
            try:
                identity = _saved_id(saved)  # read first: a save replaced meanwhile is not taken for this one
                await copy_tree([saved / name for name in WRITABLE], home)
                base = await offload(home_delta.prime, home, identity, WRITABLE)
            except BaseException:
                remove_home(home, None)
                raise
        else:
            for name in WRITABLE:
                (home / name).mkdir()
            (home / "tmp").chmod(0o1777)
        sandbox = await self._launch(sandbox_id, home, spec, isolated)
        sandbox.base = base
        return sandbox

    # -- images (ImageCommitter): a saved copy of a home's writable directories under <root>/.images -----------

    @property
    def _images(self) -> Path:
        return self.config.root / IMAGE_DIR

    def _saved(self, image: str) -> Path | None:
        """The directory holding the saved home ``image``, if there is one."""
        directory = self._images / hashlib.sha256(image.encode()).hexdigest()[:32]
        return directory if (directory / "meta.json").is_file() else None

    async def image_info(self, image: str) -> ImageInfo | None:
        """A saved home (`commit`); for no image (``""``), the empty home every other sandbox starts in."""
        if not image or image == EMPTY_HOME:
            return ImageInfo(id=EMPTY_HOME)
        saved = self._saved(image)
        if saved is None:
            return None
        meta = json.loads((saved / "meta.json").read_text())
        return ImageInfo(id=_saved_id(saved), labels=meta.get("labels", {}))

    async def commit(self, sandbox: SandboxBackend, image: str, labels: dict[str, str]) -> ImageInfo:
        """Save ``sandbox``'s workspace, ``/tmp`` and home as ``image``, which later sandboxes start from (a copy
        each). The sandbox itself is from then on one of the image's: its forks rewrite only what it changes."""
        if not isinstance(sandbox, LocalSandbox):
            raise SandboxError(f"the local provider cannot commit a {sandbox.provider_name} sandbox")
        name = hashlib.sha256(image.encode()).hexdigest()[:32]
        staging = self._images / f".{name}.{uuid.uuid4().hex[:8]}"
        staging.mkdir(parents=True)
        meta = {"id": uuid.uuid4().hex[:16], "image": image, "labels": lbl.image_labels(labels)}
        try:
            async with sandbox.still():
                await asyncio.gather(*(copy_tree([sandbox.home / n], staging) for n in WRITABLE))
                (staging / "meta.json").write_text(json.dumps(meta))
                await offload(self._publish, staging, self._images / name)
                sandbox.base = await offload(home_delta.prime, sandbox.home, f"local:{meta['id']}", WRITABLE)
        except BaseException:
            await _remove_tree(staging)
            raise
        sandbox.spec = sandbox.spec.model_copy(update={"image": image})
        return ImageInfo(id=f"local:{meta['id']}", labels=meta["labels"])

    def holds(self, image: str) -> bool:
        return self._saved(image) is not None

    async def adopt(self, sandbox: SandboxBackend, image: str) -> bool:
        """Copy the saved home ``image`` into a started sandbox of none in which nothing ran (`ImageAdopter`): its
        runner sees the files at once, and its forks rewrite only what changes, as if started from it."""
        saved = self._saved(image)
        if saved is None or not isinstance(sandbox, LocalSandbox) or sandbox.base is not None or sandbox.used:
            return False
        identity = _saved_id(saved)
        async with sandbox.still():
            await asyncio.gather(*(copy_tree([saved / name], sandbox.home / name, into=True) for name in WRITABLE))
            sandbox.base = await offload(home_delta.prime, sandbox.home, identity, WRITABLE)
        sandbox.spec = sandbox.spec.model_copy(update={"image": image})
        return True

    async def cleanup(
        self,
        *,
        run_id: str | None = None,
        older_than_s: float | None = None,
        labels: dict[str, str] | None = None,
    ) -> list[str]:
        """The homes, checkpoints and saved homes (images) the filter selects; sandboxes started from a saved home
        do not need it (each holds a copy)."""
        removed = await super().cleanup(run_id=run_id, older_than_s=older_than_s, labels=labels)
        return removed + await offload(self._cleanup_images, run_id, older_than_s, labels)

    def _cleanup_images(
        self, run_id: str | None, older_than_s: float | None, labels: dict[str, str] | None
    ) -> list[str]:
        removed = []
        for directory in sorted(self._images.iterdir()) if self._images.is_dir() else []:
            try:
                meta = json.loads((directory / "meta.json").read_text())
            except (OSError, ValueError):
                continue
            if lbl.matches(meta.get("labels", {}), run_id=run_id, older_than_s=older_than_s, extra=labels):
                remove_home(directory, None)
                removed.append(f"local:{meta.get('id')}")
        return removed

    @staticmethod
    def _publish(staging: Path, directory: Path) -> None:
        """Put ``staging`` at ``directory`` in one rename, replacing (then removing) an older save."""
        old = directory.with_name(f".{directory.name}.old.{uuid.uuid4().hex[:8]}")
        if directory.exists():
            directory.rename(old)
        staging.rename(directory)
        remove_home(old, None)

    async def fork(self, sandbox: SandboxBackend, spec: SandboxSpec) -> LocalSandbox:
        """A new sandbox on a copy of ``sandbox``'s workspace, ``/tmp`` and home (see the module docstring)."""
        if not isinstance(sandbox, LocalSandbox):
            raise ForkNotSupportedError(f"the local provider cannot fork a {sandbox.provider_name} sandbox")
        sandbox_id, home = new_home(self.config.root, spec)
        for name in WRITABLE:
            (home / name).mkdir()
        (home / "tmp").chmod(0o1777)
        # The fork's runner starts while the files are copied in (it reads none of them before its first
        # command), so a fork costs about the longer of the two, not their sum.
        launch = asyncio.ensure_future(self._launch(sandbox_id, home, spec, sandbox.isolated))
        copy = asyncio.ensure_future(
            sandbox.copy_out([([sandbox.home / name], home / name) for name in WRITABLE], into=True)
        )
        try:
            await asyncio.gather(launch, copy)
        except BaseException:
            for step in (launch, copy):
                step.cancel()
            results = await asyncio.gather(launch, copy, return_exceptions=True)
            if isinstance(results[0], LocalSandbox):
                await results[0].close()
            remove_home(home, None)
            raise
        return launch.result()

    async def fork_into(self, sandbox: SandboxBackend, targets: list[SandboxBackend]) -> bool:
        """Make each started sandbox of ``targets`` hold ``sandbox``'s workspace, ``/tmp`` and home (their runners
        see them at once: the directories are bound, not overlaid). Targets of the source's saved home get only the
        paths either side changed (`home_delta`); empty ones a whole copy. False where neither works: a target
        isolated otherwise, of another image, or a change only a whole copy can carry into a target that holds
        files already."""
        if not isinstance(sandbox, LocalSandbox):
            return False
        boxes = [target for target in targets if isinstance(target, LocalSandbox)]
        if len(boxes) != len(targets) or any(box.isolated != sandbox.isolated for box in boxes):
            return False
        base = sandbox.base
        if base is not None and all(box.base is not None and box.base.image == base.image for box in boxes):
            async with sandbox.still():
                return await offload(self._sync, sandbox, boxes)
        if any(box.base is not None for box in boxes):
            return False
        await sandbox.copy_out([([sandbox.home / name for name in WRITABLE], box.home) for box in boxes])
        return True

    @staticmethod
    def _sync(source: LocalSandbox, targets: list[LocalSandbox]) -> bool:
        """`fork_into` for targets of the source's image: the union of what each side changed, rewritten."""
        # A target that ran nothing holds its image's files as they were copied: only the source is looked at.
        looked = [source, *(box for box in targets if box.used)]
        found = [home_delta.changes(box.home, box.base) for box in looked if box.base is not None]
        if any(change is None for change in found):
            return False
        paths = frozenset().union(*(change.paths for change in found if change is not None))
        try:
            home_delta.sync(source.home, [box.home for box in targets], paths)
        except (OSError, RecursionError) as exc:  # (a target tree deeper than Python recurses to remove)
            raise SandboxError(f"copying the changes of sandbox {source.id} into a fork failed: {exc}") from exc
        return True

    async def _launch(self, sandbox_id: str, home: Path, spec: SandboxSpec, isolated: bool) -> LocalSandbox:
        """Start the runner on ``home``'s directories (made by `create`, or copied by `fork`)."""
        work = home / "work"
        cgroup = Cgroup.create(f"{GROUP_PREFIX}{sandbox_id}", spec.resources)
        env = {
            "PATH": f"{Path(sys.executable).parent}:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
            "HOME": "/tmp" if isolated else str(home / "state"),
            **spec.command_env(),
        }
        env[RUNNER_ENV] = runner_source()
        # -S: the runner needs only the standard library, and skipping site saves a third of its start.
        runner = [sys.executable, "-S", "-c", RUNNER_BOOTSTRAP, "--ttl", str(spec.ttl_s)]
        if isolated:
            argv, workdir = _bwrap_argv(spec, work, self.config.root, home / "tmp") + runner, spec.workdir
        else:
            argv, workdir = runner, str(work)
        sandbox = LocalSandbox(sandbox_id, spec, workdir, home, cgroup)
        sandbox.isolated = isolated
        await sandbox.boot(sandbox.spawn_runner(argv, env, work))
        return sandbox

    # -- checkpoints (SandboxCheckpointer): a copy of the home's writable directories under the root ------------

    async def checkpoint(self, sandbox: SandboxBackend, labels: dict[str, str], ttl_s: float) -> SandboxCheckpoint:
        """Copy ``sandbox``'s workspace, ``/tmp`` and home (as a fork does) into ``<root>/.checkpoints/<id>``."""
        if not isinstance(sandbox, LocalSandbox):
            raise CheckpointNotSupportedError(f"the local provider cannot checkpoint a {sandbox.provider_name} sandbox")
        checkpoint = checkpoints.new_checkpoint(self.name, sandbox, labels, ttl_s)
        copies = [([sandbox.home / name for name in WRITABLE], "")]
        return await checkpoints.save_dirs(self.config.root, checkpoint, sandbox, copies)

    async def restore(self, checkpoint: SandboxCheckpoint, spec: SandboxSpec) -> LocalSandbox:
        """A new sandbox (a runner as `create` starts one) on a copy of the checkpoint's directories."""
        checkpoints.checkpoint_dir(checkpoint)  # gone: said before anything is made
        isolated = self.isolated
        sandbox_id, home = new_home(self.config.root, spec)
        try:
            await checkpoints.load_dirs(checkpoint, home)
        except BaseException:
            remove_home(home, None)
            raise
        return await self._launch(sandbox_id, home, spec, isolated)


__all__ = ["LocalProvider", "LocalProviderConfig", "LocalSandbox", "bwrap_works", "warn_unisolated"]
