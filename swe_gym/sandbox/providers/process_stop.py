"""A sandbox's processes stopped with signals, where no cgroup freezer can stop them (no usable cgroups).

A fork or checkpoint copies a sandbox's files between commands, but a daemon the sandbox left running would go on
writing, and could swap a directory for a link under a copy that resolves paths as it goes (``cp -a``). Under
bubblewrap every process of the sandbox descends from its runner (orphans are reparented to it: it is PID 1 of the
sandbox's PID namespace), so SIGSTOP to each descendant, repeated until a scan finds no new one (a stopped process
cannot fork), stops them all. Each is signalled through a pidfd opened after its parent was seen to be one of ours,
so a pid recycled by an unrelated process meanwhile is never signalled.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from collections import defaultdict

#: How long to wait for the stopped processes to reach the stopped state (one in uninterruptible sleep may lag).
STOP_WAIT_S = 2.0
#: Scans before giving up on a tree that keeps growing (each scan stops all it found).
MAX_ROUNDS = 50


def _stat_fields(pid: int) -> list[str] | None:
    """``/proc/PID/stat`` after the command name: [state, ppid, ...]."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            return stat.read().rsplit(b")", 1)[1].decode().split()
    except (OSError, IndexError):
        return None


def _children() -> dict[int, list[int]]:
    children: dict[int, list[int]] = defaultdict(list)
    for name in os.listdir("/proc"):
        if name.isdigit() and (fields := _stat_fields(int(name))) is not None:
            children[int(fields[1])].append(int(name))
    return children


def _namespace_pid(pid: int) -> int | None:
    """``pid``'s number in its innermost PID namespace (``NSpid``'s last field)."""
    try:
        with open(f"/proc/{pid}/status", "rb") as status:
            for line in status:
                if line.startswith(b"NSpid:"):
                    return int(line.split()[-1])
    except (OSError, ValueError, IndexError):
        pass
    return None


def namespace_init(pid: int) -> int | None:
    """The first of ``pid`` and its descendants (parents first) that is PID 1 of its PID namespace: a sandbox's
    runner under bwrap ``--as-pid-1`` or Apptainer ``--pid --no-init``, whose descendants are all of the
    sandbox's processes. None where there is none."""
    return next((found for found in [pid, *_below(pid)] if _namespace_pid(found) == 1), None)


def _below(root: int) -> list[int]:
    """Every process descending from ``root`` (not ``root`` itself), parents first."""
    children, found, stack = _children(), [], [root]
    while stack:
        for child in children.get(stack.pop(), []):
            found.append(child)
            stack.append(child)
    return found


class StoppedTree:
    """The processes `stop_below` stopped; `resume` continues them (each through its pidfd)."""

    def __init__(self) -> None:
        self.pidfds: dict[int, int] = {}

    def resume(self) -> None:
        for descriptor in self.pidfds.values():
            with contextlib.suppress(ProcessLookupError):
                signal.pidfd_send_signal(descriptor, signal.SIGCONT)
            os.close(descriptor)
        self.pidfds.clear()

    def _stop(self, pid: int, ours: set[int]) -> None:
        try:
            descriptor = os.pidfd_open(pid)
        except ProcessLookupError:
            return
        fields = _stat_fields(pid)
        if fields is None or int(fields[1]) not in ours:  # gone, or the pid went to another process
            os.close(descriptor)
            return
        self.pidfds[pid] = descriptor
        with contextlib.suppress(ProcessLookupError):
            signal.pidfd_send_signal(descriptor, signal.SIGSTOP)

    def _settled(self) -> bool:
        """Whether every stopped process is stopped now (or gone)."""
        for pid in self.pidfds:
            fields = _stat_fields(pid)
            if fields is not None and fields[0] not in ("T", "t", "Z", "X"):
                return False
        return True


def stop_below(root: int) -> StoppedTree:
    """Stop every process descending from ``root`` (which goes on running); `StoppedTree.resume` continues them.
    Blocking (a few ms: one scan of ``/proc`` per round). A tree still growing after `MAX_ROUNDS` scans, or a
    process that does not stop within `STOP_WAIT_S`, is left as it is: the copy is then only as still as it got."""
    stopped = StoppedTree()
    try:
        for _ in range(MAX_ROUNDS):
            fresh = [pid for pid in _below(root) if pid not in stopped.pidfds]
            if not fresh:
                break
            for pid in fresh:
                stopped._stop(pid, {root, *stopped.pidfds})
            deadline = time.monotonic() + STOP_WAIT_S
            while not stopped._settled() and time.monotonic() < deadline:
                time.sleep(0.0005)
    except BaseException:
        stopped.resume()
        raise
    return stopped
