"""Process and memory limits for the `local` provider through cgroups (v1 or v2).

Docker enforces limits itself; a bare process tree has only cgroups. When the
cgroup filesystem is not writable here, limits are skipped with one warning.
A group can also be frozen (v2 ``cgroup.freeze``, v1's ``freezer``), which a
fork uses to copy a sandbox's files while none of its processes runs.
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
#: How long `Cgroup.freeze` waits for every process to stop (one in uninterruptible sleep may take a while).
FREEZE_WAIT_S = 2.0
_warned = False


def _controller_dirs() -> dict[str, Path]:
    """Where to create our group for each controller, or {} when cgroups are not usable."""
    if (CGROUP_ROOT / "pids" / "cgroup.procs").exists():  # v1
        return {c: CGROUP_ROOT / c / PARENT for c in ("pids", "memory", "freezer") if (CGROUP_ROOT / c).is_dir()}
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

    @classmethod
    def freezer_of(cls, pid: int) -> Cgroup | None:
        """The freezer group process ``pid`` is in (v1 ``freezer``, or v2's own group), or None when this
        process cannot freeze it (e.g. a container runtime's group: a fork freezes it for ms, not docker pause's)."""
        try:
            lines = Path(f"/proc/{pid}/cgroup").read_text().splitlines()
        except OSError:
            return None
        for line in lines:
            _, controllers, path = line.split(":", 2)
            if "freezer" in controllers.split(","):
                group, control = CGROUP_ROOT / "freezer" / path.lstrip("/"), "freezer.state"
            elif controllers == "" and not (CGROUP_ROOT / "freezer").is_dir():
                group, control = CGROUP_ROOT / path.lstrip("/"), "cgroup.freeze"
            else:
                continue
            return cls([group]) if os.access(group / control, os.W_OK) else None
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

    def freeze(self) -> bool:
        """Stop every process of the group (blocking, up to `FREEZE_WAIT_S`); whether it is frozen now.

        False where no freezer is available (then nothing was stopped). `thaw` resumes them.
        """
        return self._set_frozen(True)

    def thaw(self) -> None:
        self._set_frozen(False)

    def _set_frozen(self, frozen: bool) -> bool:
        reached = False
        for group in self.dirs:
            if (group / "cgroup.freeze").exists():  # v2
                control, value = group / "cgroup.freeze", "1" if frozen else "0"
            elif (group / "freezer.state").exists():  # v1
                control, value = group / "freezer.state", "FROZEN" if frozen else "THAWED"
            else:
                continue
            try:
                control.write_text(value)
                deadline = time.monotonic() + FREEZE_WAIT_S
                while not _frozen_state_is(group, frozen) and time.monotonic() < deadline:
                    time.sleep(0.001)
                reached = _frozen_state_is(group, frozen)
            except OSError as exc:
                log.debug("cgroup %s: cannot set frozen=%s: %s", group, frozen, exc)
        return reached

    def kill_all(self) -> None:
        self.thaw()  # v1 delivers SIGKILL to a frozen process only once it is thawed
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


def _frozen_state_is(group: Path, frozen: bool) -> bool:
    if (group / "cgroup.events").exists():
        return f"frozen {int(frozen)}" in (group / "cgroup.events").read_text().splitlines()
    return (group / "freezer.state").read_text().strip() == ("FROZEN" if frozen else "THAWED")


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
