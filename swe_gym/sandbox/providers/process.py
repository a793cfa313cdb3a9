"""Sandboxes that are one local process tree: the runner (bare, under bubblewrap, or in Apptainer).

Shared by `local` and `apptainer`: each sandbox has a home directory on the host
(``meta.json`` with its labels and runner pid, plus whatever the provider keeps
there) and optionally a cgroup that holds every process it starts, so limits
apply and close can kill the whole tree. ``cleanup_homes`` finds leftovers of
crashed owners by those files.

Forks of such sandboxes copy directories of the source's home into the fork's
(`ProcessSandbox.copy_out`): ``cp -a --reflink=auto``, so a file system with
reflinks (btrfs, XFS, ...) shares the blocks copy-on-write and any other gets a
plain copy, with owners, modes, times, hard links, extended attributes and
special files kept (overlay whiteouts included).
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
import uuid
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any

from swe_gym.errors import SandboxError
from swe_gym.sandbox import checkpoints
from swe_gym.sandbox import labels as lbl
from swe_gym.sandbox.backend import RunnerSandbox
from swe_gym.sandbox.channel import RunnerChannel
from swe_gym.sandbox.checkpoints import SandboxCheckpoint
from swe_gym.sandbox.links import FdLink
from swe_gym.sandbox.loop import guarded, offload
from swe_gym.sandbox.providers.cgroups import Cgroup, cgroup_dirs_for, join_command, sandbox_group_names
from swe_gym.sandbox.providers.process_stop import StoppedTree, namespace_init, stop_below
from swe_gym.sandbox.spec import SandboxSpec

log = logging.getLogger(__name__)

#: How long close waits for a runner that got EOF to finish on its own, then how long after SIGKILL.
GRACEFUL_EXIT_S = 2.0
EXIT_WAIT_S = 10.0


def _start_time(pid: int) -> str | None:
    """The kernel's start time of ``pid`` (tells a live runner from a recycled pid)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return None


def new_home(root: Path, spec: SandboxSpec, **meta: object) -> tuple[str, Path]:
    """A fresh sandbox id and home directory holding ``meta.json`` (labels, owner, extra ``meta``)."""
    sandbox_id = uuid.uuid4().hex[:16]
    home = root / sandbox_id
    home.mkdir(parents=True)
    labels = lbl.sandbox_labels(spec.labels, spec.ttl_s)
    (home / "meta.json").write_text(json.dumps({"id": sandbox_id, "labels": labels, "owner_pid": os.getpid(), **meta}))
    return sandbox_id, home


class ProcessSandbox(RunnerSandbox):
    """The runner as a child process talking over its stdin/stdout pipes."""

    def __init__(self, sandbox_id: str, spec: SandboxSpec, workdir: str, home: Path, cgroup: Cgroup | None):
        super().__init__(sandbox_id, spec, workdir)
        self.home = home
        self._cgroup = cgroup
        self._proc: asyncio.subprocess.Process | None = None
        self._link: FdLink | None = None

    def _describe(self) -> str:
        log_path = self.home / "runner.log"
        tail = log_path.read_text(errors="replace")[-400:] if log_path.exists() else ""
        code = self._proc.returncode if self._proc else None
        return (
            f"{self.provider_name} sandbox {self.id} runner exit code {code}; runner log: {tail.strip() or '(empty)'}"
        )

    async def spawn_runner(self, argv: list[str], env: dict[str, str], cwd: Path) -> None:
        """Start the runner as ``argv`` (in ``cwd``, with ``env``), its stdin/stdout the channel: for `boot`.

        The pipes are ours, not asyncio's (an `FdLink`), so a step can use them right in the caller's thread."""

        async def adopt(proc: asyncio.subprocess.Process) -> None:
            self._proc = proc  # cancelled halfway: `_terminate` (via `boot`) still finds it

        to_runner, from_runner = os.pipe(), os.pipe()
        try:
            with open(self.home / "runner.log", "wb") as errlog:
                spawn = asyncio.create_subprocess_exec(
                    *join_command(self._cgroup, argv),
                    stdin=to_runner[0],
                    stdout=from_runner[1],
                    stderr=errlog,
                    env=env,
                    cwd=cwd,
                    start_new_session=True,
                )
                self._proc = await guarded(spawn, adopt)
        except BaseException:
            os.close(to_runner[1])
            os.close(from_runner[0])
            raise
        finally:
            os.close(to_runner[0])
            os.close(from_runner[1])
        link = FdLink(from_runner[0], to_runner[1], lambda: (os.close(from_runner[0]), os.close(to_runner[1])))
        self._link = link
        meta = json.loads((self.home / "meta.json").read_text())
        meta.update(runner_pid=self._proc.pid, runner_start=_start_time(self._proc.pid))
        (self.home / "meta.json").write_text(json.dumps(meta))
        self.attach(RunnerChannel(link, self._describe, self._exited))

    @contextlib.asynccontextmanager
    async def still(self) -> AsyncIterator[None]:
        """Between two commands (`quiet`) and with every process of the sandbox frozen where its cgroup has a
        freezer, else stopped by signals where they cannot leave its runner's tree (`stop_root`), so a daemon it left
        running cannot tear what the block reads of its files, nor swap a link in under a copy."""
        async with self.quiet():
            cgroup, stopped = self._cgroup, None
            frozen = cgroup is not None and await offload(cgroup.freeze)
            root = None if frozen else self.stop_root()
            if root is not None:

                async def resume(tree: StoppedTree) -> None:
                    tree.resume()

                stopped = await guarded(offload(stop_below, root), resume)
            try:
                yield
            finally:
                # inline: a cancelled fork must not leave the source frozen or stopped
                if frozen:
                    assert cgroup is not None
                    cgroup.thaw()
                if stopped is not None:
                    stopped.resume()

    def stop_root(self) -> int | None:
        """The runner's pid (on this host) where it is PID 1 of the sandbox's PID namespace (``runner_protected``):
        then every process the sandbox starts descends from it (orphans are reparented to it), and `still` stops
        them where no freezer can. None otherwise (a daemon could leave the tree)."""
        proc = self._proc
        if not self.runner_protected or proc is None or proc.returncode is not None:
            return None
        return namespace_init(proc.pid)

    async def copy_out(self, copies: Sequence[tuple[Sequence[Path], Path]], *, into: bool = False) -> None:
        """For a fork: copy each group of directories (of this sandbox's home) into its target directory, `still`.

        Each (sources, target) puts ``target / source.name`` for each source (a missing one: empty; an existing
        one is copied into); with ``into``, each group is one source whose contents go into the existing
        ``target``. The groups are copied concurrently.
        """
        async with self.still():
            if into:
                await asyncio.gather(
                    *(copy_tree([source], target, into=True) for (source,), target in copies if source.is_dir())
                )
                return
            for sources, target in copies:
                target.mkdir(parents=True, exist_ok=True)
                for missing in [source for source in sources if not source.is_dir()]:
                    (target / missing.name).mkdir(exist_ok=True)
            await asyncio.gather(*(copy_tree([s for s in group if s.is_dir()], target) for group, target in copies))

    def _exited(self) -> bool:
        """The runner process is gone or a zombie, asked of the kernel without reaping it (asyncio reaps it later):
        one system call, checked before every request."""
        proc = self._proc
        if proc is None or proc.returncode is not None:
            return True
        try:
            return os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None
        except ChildProcessError:  # reaped already
            return True

    async def _terminate(self) -> None:
        proc = self._proc
        if self._link is not None:
            # EOF first: the runner exits and the container runtime tears down cleanly (where a call is under way
            # in another thread, the pipes close when it ends: the kill below ends it).
            self._link.close()
            if proc is not None and proc.returncode is None:
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(GRACEFUL_EXIT_S):
                        await proc.wait()
        # Then everything in the sandbox's cgroup: a child orphaned while starting up would otherwise live on.
        if self._cgroup is not None:
            await offload(self._cgroup.kill_all)
        if proc is not None and proc.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                proc.kill()
            try:
                async with asyncio.timeout(EXIT_WAIT_S):
                    await proc.wait()
            except TimeoutError:
                log.warning(
                    "%s sandbox %s: runner did not go away within %ss", self.provider_name, self.id, EXIT_WAIT_S
                )
        await offload(remove_home, self.home, self._cgroup)


async def copy_tree(sources: Sequence[Path | str], target: Path | str, *, into: bool = False) -> None:
    """Copy each directory of ``sources`` into the directory ``target`` (one ``cp``; see the module docstring).

    ``into``: one source, whose contents (not itself) are copied into ``target``.
    """
    if not sources:
        return
    paths = [f"{sources[0]}/.", str(target)] if into else [*map(str, sources), f"{target}/"]
    proc = await asyncio.create_subprocess_exec(
        "cp", "-a", "--reflink=auto", "--", *paths,
        stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    try:
        _, err = await proc.communicate()
    except BaseException:  # cancelled: no copy keeps running behind our back
        with contextlib.suppress(ProcessLookupError):
            proc.kill()
        await proc.wait()
        raise
    if proc.returncode:
        raise SandboxError(f"copying {', '.join(map(str, sources))} failed: {err.decode(errors='replace')[-400:]}")


def remove_home(home: Path, cgroup: Cgroup | None) -> None:
    if cgroup is not None:
        cgroup.remove()

    def unlock_and_retry(func, path, _exc):
        for target in (os.path.dirname(path), path):
            try:
                os.chmod(target, 0o700)
            except OSError:
                pass
        with contextlib.suppress(FileNotFoundError):  # removed meanwhile (its own close, a concurrent cleanup)
            func(path)

    callback = {"onexc": unlock_and_retry} if sys.version_info >= (3, 12) else {"onerror": unlock_and_retry}
    if home.exists():
        try:
            shutil.rmtree(home, **callback)
        except RecursionError:  # a tree deeper than Python recurses (a sandbox can make one): the tools go deeper
            for argv in (["chmod", "-R", "u+rwx", "--", str(home)], ["rm", "-rf", "--", str(home)]):
                subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def kill_runner(pid: int, start_time: str | None) -> None:
    """Kill a leftover runner, making sure the pid was not reused by someone else."""
    if start_time is not None and _start_time(pid) == start_time:
        with contextlib.suppress(OSError):
            os.kill(pid, 9)


def cleanup_homes(
    root: Path,
    group_prefix: str,
    *,
    run_id: str | None,
    older_than_s: float | None,
    labels: dict[str, str] | None = None,
) -> list[str]:
    """Remove the sandboxes under ``root`` selected by the filter: runner, cgroup, home. Blocking.

    A provider names its sandboxes' cgroups ``group_prefix + id``; empty ones whose home is gone go too.
    """
    removed = []
    for home in sorted(root.iterdir()) if root.is_dir() else []:
        try:
            meta = json.loads((home / "meta.json").read_text())
        except (OSError, ValueError):
            continue
        if not lbl.matches(meta.get("labels", {}), run_id=run_id, older_than_s=older_than_s, extra=labels):
            continue
        if meta.get("runner_pid"):
            kill_runner(int(meta["runner_pid"]), meta.get("runner_start"))
        groups = cgroup_dirs_for(f"{group_prefix}{meta.get('id')}")
        remove_home(home, Cgroup(groups) if groups else None)
        removed.append(str(meta.get("id")))
    for name in sandbox_group_names():  # empty groups whose home is gone (a killed owner)
        group = Cgroup(cgroup_dirs_for(name))
        if name.startswith(group_prefix) and not (root / name.removeprefix(group_prefix)).exists() and not group.pids():
            group.remove()
    return removed


class HomeProvider:
    """Cleanup for providers whose sandboxes are homes under ``config.root`` with cgroups ``group_prefix + id``,
    and whose checkpoints are directories under ``<root>/.checkpoints`` (`swe_gym.sandbox.checkpoints`)."""

    group_prefix: str
    config: Any

    async def cleanup(
        self,
        *,
        run_id: str | None = None,
        older_than_s: float | None = None,
        labels: dict[str, str] | None = None,
    ) -> list[str]:
        """The homes the filter selects, then the checkpoints it selects."""
        removed = await asyncio.to_thread(
            cleanup_homes, self.config.root, self.group_prefix, run_id=run_id, older_than_s=older_than_s, labels=labels
        )
        return removed + await self.cleanup_checkpoints(run_id=run_id, older_than_s=older_than_s, labels=labels)

    async def remove_checkpoint(self, checkpoint: SandboxCheckpoint) -> None:
        await checkpoints.remove_dir(checkpoint, self.config.root)

    async def cleanup_checkpoints(
        self, *, run_id: str | None = None, older_than_s: float | None = None, labels: dict[str, str] | None = None
    ) -> list[str]:
        return await asyncio.to_thread(
            checkpoints.cleanup_checkpoint_dirs,
            self.config.root,
            run_id=run_id,
            older_than_s=older_than_s,
            labels=labels,
        )
