"""SIF images for the `apptainer` provider: found, or built once and cached.

An image name resolves, in order, to: a ``.sif`` path given as is; a SIF of that
name in the configured ``sif_dir`` (pre-built, e.g. on a shared file system); a
SIF already in the cache; or a new build into the cache from the local Docker
daemon's image (``docker save``, keyed by image id so a rebuilt image gets a new
SIF) or else from the registry (``docker://``, an explicit pull whose progress is
logged). Builds are serialised per image across threads and processes by a lock
file, and land atomically, so concurrent envs never build the same SIF twice.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import logging
import os
import re
import shutil
from collections import deque
from functools import lru_cache
from pathlib import Path

from swe_gym.errors import ImageNotFoundError, ProviderUnavailableError, SandboxError
from swe_gym.progress import Progress
from swe_gym.sandbox.loop import offload
from swe_gym.settings import settings

log = logging.getLogger(__name__)

_SLUG = re.compile(r"[^A-Za-z0-9._-]+")
_CAP_SYS_RESOURCE = 24
_MISSING = ("not found", "manifest unknown", "no such", "does not exist", "denied", "unauthorized")


def slug(image: str) -> str:
    """A file name for an image reference: ``a/b:c`` -> ``a_b_c``."""
    return _SLUG.sub("_", image).strip("_")


@lru_cache(maxsize=4)
def apptainer_binary(preferred: str | None = None) -> str:
    """The runtime's command: ``preferred``, else apptainer, else singularity (checked with spython)."""
    try:
        from spython.utils import check_install
    except ImportError as exc:
        hint = "pip install 'swe_gym[apptainer]'"
        raise ProviderUnavailableError(f"the apptainer provider needs spython ({exc}): {hint}") from exc
    for name in [preferred] if preferred else ["apptainer", "singularity"]:
        if shutil.which(name) and check_install(name):
            return name
    wanted = preferred or "apptainer or singularity"
    raise ProviderUnavailableError(
        f"{wanted} is not on PATH (or does not run): install Apptainer (https://apptainer.org/docs/admin/main/"
        "installation.html), load its module on a cluster (`module load apptainer`), or set binary=..."
    )


@lru_cache(maxsize=1)
def needs_no_privs() -> bool:
    """Root without CAP_SYS_RESOURCE: apptainer refuses to start unless told ``--no-privs``."""
    if os.geteuid() != 0:
        return False
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("CapEff:"):
            return not (int(line.split()[1], 16) >> _CAP_SYS_RESOURCE) & 1
    return False


def default_cache_dir() -> Path:
    own = settings().sif_cache
    if own is not None:
        return own
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "swe_gym" / "sif"


def _local_docker_image_id(image: str) -> str | None:
    """The local Docker daemon's id of ``image``, or None (no daemon, or no such image)."""
    try:
        import docker

        return docker.from_env().images.get(image).id
    except Exception:
        return None


def _docker_save(image: str, target: Path) -> None:
    import docker

    with open(target, "wb") as out:
        for chunk in docker.from_env().images.get(image).save(named=True):
            out.write(chunk)


class SifCache:
    """Where SIFs live and how missing ones are built; see the module docstring."""

    def __init__(self, binary: str, cache_dir: Path | None, sif_dir: Path | None, build_options: list[str]) -> None:
        self.binary = binary
        self.cache_dir = cache_dir or default_cache_dir()
        self.sif_dir = sif_dir
        self.build_options = build_options
        self._locks: dict[str, asyncio.Lock] = {}

    async def get(self, image: str) -> Path:
        if image.endswith(".sif"):
            path = Path(image).expanduser().resolve()
            if not path.is_file():
                raise ImageNotFoundError(f"SIF image {path} does not exist")
            return path
        if self.sif_dir is not None and (self.sif_dir / f"{slug(image)}.sif").is_file():
            return (self.sif_dir / f"{slug(image)}.sif").resolve()
        if "://" in image:
            source, key, local_id = image, slug(image), None
        else:
            local_id = await offload(_local_docker_image_id, image)
            key = f"{slug(image)}-{local_id.split(':')[-1][:12]}" if local_id else slug(image)
            source = None if local_id else f"docker://{image}"
        target = self.cache_dir / f"{key}.sif"
        if target.is_file():
            return target
        lock = self._locks.setdefault(key, asyncio.Lock())
        async with lock:
            if not target.is_file():
                await offload(self._build_locked, image, source, target)
        return target

    def _build_locked(self, image: str, source: str | None, target: Path) -> None:
        """Build under a lock file (other processes may be building the same SIF); blocking."""
        self.cache_dir.mkdir(parents=True, exist_ok=True)
        with open(target.with_suffix(".lock"), "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            if target.is_file():  # another process built it while we waited
                return
            partial = target.with_suffix(f".sif.part-{os.getpid()}")
            archive = target.with_suffix(f".tar.part-{os.getpid()}")
            try:
                if source is None:
                    log.info("exporting Docker image %s for apptainer", image)
                    _docker_save(image, archive)
                    source = f"docker-archive://{archive}"
                self._run_build(image, source, partial)
                os.replace(partial, target)
            finally:
                for leftover in (partial, archive):
                    with contextlib.suppress(FileNotFoundError):
                        leftover.unlink()

    def _run_build(self, image: str, source: str, partial: Path) -> None:
        import subprocess

        argv = [self.binary, "build", "--force", *self.build_options, str(partial), source]
        log.info("building SIF for %s (%s); this happens once per image", image, " ".join(argv))
        tail: deque[str] = deque(maxlen=20)
        with (
            Progress(None, f"building SIF for {image}", "line") as bar,
            subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True) as proc,
        ):
            assert proc.stdout is not None
            for line in proc.stdout:
                tail.append(line.rstrip())
                log.info("apptainer build %s: %s", image, line.rstrip())
                bar.advance(postfix=line.strip()[-60:])
            code = proc.wait()
        if code != 0:
            output = "\n".join(tail)
            error = ImageNotFoundError if any(word in output.lower() for word in _MISSING) else SandboxError
            raise error(f"apptainer could not build a SIF from {source} (exit {code}):\n{output}")


__all__ = ["SifCache", "apptainer_binary", "default_cache_dir", "needs_no_privs", "slug"]
