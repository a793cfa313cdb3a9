"""`local`: the embedded default provider, no daemon needed.

Each sandbox is a workspace directory and a runner process. With bubblewrap
(``bwrap``) on the machine the runner is isolated: the host file system
read-only, the workspace mounted writable at the spec's workdir, fresh PID, IPC,
UTS and (unless the spec asks for network) network namespaces, the runner as
PID 1 (so ``kill -9 -1`` cannot take it down), dying with its parent. Without
bwrap the runner is a plain process tree: a convenience, not a security boundary.
"""

from __future__ import annotations

import logging
import os
import shutil
import subprocess
import sys
import tempfile
from functools import lru_cache
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from swe_gym.errors import ConfigError, ProviderUnavailableError
from swe_gym.sandbox.backend import RUNNER_BOOTSTRAP, RUNNER_ENV, runner_source
from swe_gym.sandbox.providers.cgroups import Cgroup
from swe_gym.sandbox.providers.process import HomeProvider, ProcessSandbox, new_home
from swe_gym.sandbox.spec import SandboxSpec

log = logging.getLogger(__name__)

DEFAULT_ROOT = Path(os.environ.get("SWE_GYM_LOCAL_ROOT", Path(tempfile.gettempdir()) / "swe_gym-sandboxes"))
GROUP_PREFIX = "sbx-"
_SKIP_TOP = {"proc", "dev", "sys", "tmp", "run", "lost+found"}


@lru_cache(maxsize=1)
def bwrap_works() -> bool:
    path = shutil.which("bwrap")
    if path is None:
        return False
    probe = [path, "--ro-bind", "/", "/", "--unshare-pid", "--die-with-parent", "true"]
    return subprocess.run(probe, capture_output=True, timeout=30).returncode == 0


class LocalProviderConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    type: Literal["local"] = "local"
    root: Path = DEFAULT_ROOT
    isolation: Literal["auto", "bwrap", "none"] = "auto"
    max_concurrent_creates: int = Field(default=16, ge=1)


def _interpreter_dirs() -> list[Path]:
    """Where the Python running us lives; commands in the sandbox use it (pytest for bundled tasks)."""
    real = Path(os.path.realpath(sys.executable)).parent.parent
    return sorted({Path(sys.prefix), Path(sys.base_prefix), real} - {Path("/")})


def _bwrap_argv(spec: SandboxSpec, work: Path) -> list[str]:
    top = spec.workdir.strip("/").split("/")[0]
    if not spec.workdir.startswith("/") or not top:
        raise ConfigError(f"workdir must be an absolute path below /, got {spec.workdir!r}")
    argv = ["bwrap"]
    for entry in sorted(os.listdir("/")):
        if entry in _SKIP_TOP or entry == top:
            continue
        path = Path("/") / entry
        if path.is_symlink():
            argv += ["--symlink", os.readlink(path), str(path)]
        elif path.is_dir():
            argv += ["--ro-bind", str(path), str(path)]
    if (Path("/") / top).exists() and spec.workdir != f"/{top}":
        raise ConfigError(
            f"workdir {spec.workdir!r} lies under the host's /{top}; pick a new top-level path such as /testbed"
        )
    argv += ["--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp", "--tmpfs", "/run"]
    for path in _interpreter_dirs():
        if path.parts[1] in _SKIP_TOP:  # e.g. a venv under /tmp, hidden by the tmpfs above
            argv += ["--ro-bind", str(path), str(path)]
    argv += ["--bind", str(work), spec.workdir, "--chdir", spec.workdir]
    argv += ["--unshare-pid", "--unshare-ipc", "--unshare-uts", "--hostname", "sandbox"]
    if not spec.network:
        argv += ["--unshare-net"]
    argv += ["--remount-ro", "/", "--die-with-parent", "--as-pid-1", "--new-session"]
    return argv


class LocalSandbox(ProcessSandbox):
    provider_name = "local"
    isolated = False


class LocalProvider(HomeProvider):
    """Sandboxes as local process trees; see the module docstring."""

    name = "local"
    group_prefix = GROUP_PREFIX

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
            log.warning(
                "local sandbox runs UNISOLATED (bubblewrap not available): commands can touch the host. "
                "Install bubblewrap or use the docker provider for untrusted agents."
            )
        sandbox_id, home = new_home(self.config.root, spec)
        work = home / "work"
        work.mkdir()
        (home / "state").mkdir()
        cgroup = Cgroup.create(f"{GROUP_PREFIX}{sandbox_id}", spec.resources)
        env = {
            "PATH": f"{Path(sys.executable).parent}:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
            "HOME": "/tmp" if isolated else str(home / "state"),
            **spec.command_env(),
        }
        env[RUNNER_ENV] = runner_source()
        runner = [sys.executable, "-c", RUNNER_BOOTSTRAP, "--ttl", str(spec.ttl_s)]
        if isolated:
            argv, workdir = _bwrap_argv(spec, work) + runner, spec.workdir
        else:
            argv, workdir = runner, str(work)
        sandbox = LocalSandbox(sandbox_id, spec, workdir, home, cgroup)
        sandbox.isolated = isolated
        await sandbox._boot(sandbox._start(argv, env, work))
        return sandbox


__all__ = ["LocalProvider", "LocalProviderConfig", "LocalSandbox", "bwrap_works"]
