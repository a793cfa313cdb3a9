"""`local`: the embedded default provider, no daemon needed.

Each sandbox is a workspace directory and a runner process. With bubblewrap
(``bwrap``) on the machine the runner is isolated: the host file system
read-only, the workspace mounted writable at the spec's workdir, fresh PID, IPC,
UTS and (unless the spec asks for network) network namespaces, the runner as
PID 1 (so ``kill -9 -1`` cannot take it down), dying with its parent. Without
bwrap the runner is a plain process tree: a convenience, not a security boundary.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import shutil
import subprocess
import sys
import tempfile
import uuid
from functools import lru_cache
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from swe_gym.errors import ConfigError, ProviderUnavailableError
from swe_gym.sandbox import labels as lbl
from swe_gym.sandbox.backend import RUNNER_BOOTSTRAP, RUNNER_ENV, RunnerSandbox, runner_source
from swe_gym.sandbox.channel import RunnerChannel
from swe_gym.sandbox.loop import guarded, offload
from swe_gym.sandbox.providers.cgroups import Cgroup, cgroup_dirs_for, join_command, sandbox_group_names
from swe_gym.sandbox.spec import SandboxSpec

log = logging.getLogger(__name__)

DEFAULT_ROOT = Path(os.environ.get("SWE_GYM_LOCAL_ROOT", Path(tempfile.gettempdir()) / "swe_gym-sandboxes"))
EXIT_WAIT_S = 10.0
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


class LocalSandbox(RunnerSandbox):
    provider_name = "local"

    def __init__(self, sandbox_id: str, spec: SandboxSpec, workdir: str, home: Path, cgroup: Cgroup | None):
        super().__init__(sandbox_id, spec, workdir)
        self.home = home
        self.isolated = False
        self._cgroup = cgroup
        self._proc: asyncio.subprocess.Process | None = None

    def _describe(self) -> str:
        log_path = self.home / "runner.log"
        tail = log_path.read_text(errors="replace")[-400:] if log_path.exists() else ""
        code = self._proc.returncode if self._proc else None
        return f"local sandbox {self.id} runner exit code {code}; runner log: {tail.strip() or '(empty)'}"

    async def _start(self, argv: list[str], env: dict[str, str], cwd: Path) -> None:
        async def adopt(proc: asyncio.subprocess.Process) -> None:
            self._proc = proc  # cancelled halfway: `_terminate` (via `_boot`) still finds it

        with open(self.home / "runner.log", "wb") as errlog:
            spawn = asyncio.create_subprocess_exec(
                *join_command(self._cgroup, argv),
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                stderr=errlog,
                env=env,
                cwd=cwd,
                start_new_session=True,
            )
            self._proc = await guarded(spawn, adopt)
        meta = json.loads((self.home / "meta.json").read_text())
        meta["runner_pid"] = self._proc.pid
        (self.home / "meta.json").write_text(json.dumps(meta))
        assert self._proc.stdout is not None and self._proc.stdin is not None
        self._attach(RunnerChannel(self._proc.stdout, self._proc.stdin, self._describe))

    async def _terminate(self) -> None:
        # Everything in the sandbox's cgroup first: a bwrap child orphaned while starting up would
        # otherwise keep our pipes open, and asyncio's wait() only returns once they are closed.
        if self._cgroup is not None:
            await offload(self._cgroup.kill_all)
        proc = self._proc
        if proc is not None and proc.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                proc.kill()
            try:
                await asyncio.wait_for(proc.wait(), EXIT_WAIT_S)
            except TimeoutError:
                log.warning("local sandbox %s: runner did not go away within %ss", self.id, EXIT_WAIT_S)
        await offload(_remove_home, self.home, self._cgroup)


def _remove_home(home: Path, cgroup: Cgroup | None) -> None:
    if cgroup is not None:
        cgroup.remove()

    def unlock_and_retry(func, path, _exc):
        for target in (os.path.dirname(path), path):
            try:
                os.chmod(target, 0o700)
            except OSError:
                pass
        func(path)

    callback = {"onexc": unlock_and_retry} if sys.version_info >= (3, 12) else {"onerror": unlock_and_retry}
    if home.exists():
        shutil.rmtree(home, **callback)


def _kill_runner(pid: int) -> None:
    """Kill a leftover runner, making sure the pid was not reused by someone else."""
    try:
        if RUNNER_ENV.encode() in Path(f"/proc/{pid}/cmdline").read_bytes():
            os.kill(pid, 9)
    except (OSError, ValueError):
        pass


class LocalProvider:
    """Sandboxes as local process trees; see the module docstring."""

    name = "local"

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
        sandbox_id = uuid.uuid4().hex[:16]
        home = self.config.root / sandbox_id
        work = home / "work"
        work.mkdir(parents=True)
        (home / "state").mkdir()
        labels = lbl.sandbox_labels(spec.labels, spec.ttl_s)
        (home / "meta.json").write_text(json.dumps({"id": sandbox_id, "labels": labels, "owner_pid": os.getpid()}))
        cgroup = Cgroup.create(f"sbx-{sandbox_id}", spec.resources)
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

    async def cleanup(self, *, run_id: str | None = None, older_than_s: float | None = None) -> list[str]:
        return await asyncio.to_thread(self._cleanup, run_id, older_than_s)

    def _cleanup(self, run_id: str | None, older_than_s: float | None) -> list[str]:
        removed = []
        root = self.config.root
        for home in sorted(root.iterdir()) if root.is_dir() else []:
            try:
                meta = json.loads((home / "meta.json").read_text())
            except (OSError, ValueError):
                continue
            labels = meta.get("labels", {})
            if not lbl.matches(labels, run_id=run_id, older_than_s=older_than_s):
                continue
            pid = meta.get("runner_pid")
            if pid:
                _kill_runner(int(pid))
            groups = cgroup_dirs_for(f"sbx-{meta.get('id')}")
            _remove_home(home, Cgroup(groups) if groups else None)
            removed.append(str(meta.get("id")))
        for name in sandbox_group_names():  # empty groups whose workspace is gone (a killed owner)
            group = Cgroup(cgroup_dirs_for(name))
            if name.startswith("sbx-") and not (root / name.removeprefix("sbx-")).exists() and not group.pids():
                group.remove()
        return removed


__all__ = ["LocalProvider", "LocalProviderConfig", "LocalSandbox", "bwrap_works"]
