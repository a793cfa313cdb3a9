"""Process and memory limits for the `local` provider through cgroups (v1 or v2).

Docker enforces limits itself; a bare process tree has only cgroups. When the
cgroup filesystem is not writable here, limits are skipped with one warning.
"""

from __future__ import annotations

import logging
import os
import signal
import time
from pathlib import Path

from swe_gym.sandbox.spec import Resources

log = logging.getLogger(__name__)

CGROUP_ROOT = Path("/sys/fs/cgroup")
PARENT = "swe_gym"
_warned = False


def _controller_dirs() -> dict[str, Path]:
    """Where to create our group for each controller, or {} when cgroups are not usable."""
    if (CGROUP_ROOT / "pids" / "cgroup.procs").exists():  # v1
        return {c: CGROUP_ROOT / c / PARENT for c in ("pids", "memory") if (CGROUP_ROOT / c).is_dir()}
    controllers = CGROUP_ROOT / "cgroup.controllers"
    if controllers.exists() and "pids" in controllers.read_text().split():  # v2
        parent = CGROUP_ROOT / PARENT
        parent.mkdir(exist_ok=True)
        (parent / "cgroup.subtree_control").write_text("+pids +memory")
        return {"unified": parent}
    return {}


class Cgroup:
    """One sandbox's cgroup(s); every process that joins is counted and killable."""

    def __init__(self, dirs: list[Path]) -> None:
        self.dirs = dirs

    @classmethod
    def create(cls, name: str, resources: Resources) -> Cgroup | None:
        global _warned
        try:
            made = []
            for controller, parent in _controller_dirs().items():
                parent.mkdir(exist_ok=True)
                group = parent / name
                group.mkdir()
                made.append(group)
                if controller in ("pids", "unified") and resources.pids:
                    (group / "pids.max").write_text(str(resources.pids))
                if controller == "memory" and resources.memory_mb:
                    (group / "memory.limit_in_bytes").write_text(str(resources.memory_mb << 20))
                if controller == "unified" and resources.memory_mb:
                    (group / "memory.max").write_text(str(resources.memory_mb << 20))
            if made:
                return cls(made)
            reason = "no cgroup filesystem"
        except OSError as exc:
            reason = str(exc)
        if not _warned:
            _warned = True
            log.warning("local sandboxes run without pids/memory limits: cgroups unusable (%s)", reason)
        return None

    @property
    def procs_files(self) -> list[str]:
        return [str(group / "cgroup.procs") for group in self.dirs]

    def pids(self) -> list[int]:
        found: set[int] = set()
        for group in self.dirs:
            try:
                found.update(int(p) for p in (group / "cgroup.procs").read_text().split())
            except OSError:
                pass
        return sorted(found)

    def kill_all(self) -> None:
        for _ in range(100):
            pids = self.pids()
            if not pids:
                return
            for pid in pids:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            time.sleep(0.01)

    def remove(self) -> None:
        self.kill_all()
        for group in self.dirs:
            for _ in range(50):
                try:
                    group.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    time.sleep(0.02)


def join_command(cgroup: Cgroup | None, argv: list[str]) -> list[str]:
    """Wrap ``argv`` so the process joins ``cgroup`` before it execs (no fork escapes it)."""
    if cgroup is None:
        return argv
    script = 'while [ "$1" != -- ]; do echo $$ > "$1"; shift; done; shift; exec "$@"'
    return ["/bin/sh", "-c", script, "sh", *cgroup.procs_files, "--", *argv]


def cgroup_dirs_for(name: str) -> list[Path]:
    """Existing cgroup directories of sandbox ``name`` (for cleanup of leftovers)."""
    try:
        return [parent / name for parent in _controller_dirs().values() if (parent / name).is_dir()]
    except OSError:
        return []


def sandbox_group_names() -> set[str]:
    """Names of every sandbox cgroup that exists (for finding ones whose sandbox is gone)."""
    try:
        return {group.name for parent in _controller_dirs().values() if parent.is_dir() for group in parent.iterdir()}
    except OSError:
        return set()
