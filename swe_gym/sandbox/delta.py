"""What an overlay's writable layer holds, as one tar and two lists: how a fork reaches a started sandbox.

An overlay file system (docker's overlay2) keeps every change a container made in its upper directory: new and
modified files whole, a deleted file of the image as a whiteout (a character device 0:0), a directory deleted and
made anew as an opaque one (xattr ``trusted.overlay.opaque=y``). `read_delta` reads that directory into a `Delta`,
which `RunnerSandbox.apply_delta` replays in another sandbox of the same image (a warm pool's), so a fork costs the
size of what the source changed instead of a container start. A file copied up only for its metadata (git
freshens a pack's mtime, ``chmod`` a file of the image) holds the same bytes as the image's: given the lower
directories, it travels as its metadata alone (``touch``), not as its content. A layer it cannot replay
faithfully (renamed directories kept as redirects, the kernel's own metadata-only copies) or one too big to hold
in memory is None: the caller forks the usual way then. File xattrs (file capabilities, SELinux labels) are not
carried.
"""

from __future__ import annotations

import filecmp
import io
import os
import stat
import tarfile
from dataclasses import dataclass

#: Past this many bytes of file content, or entries, a new sandbox on a copied layer is no slower than a replay
#: (and the tar, held in memory, stays bounded whatever the agent wrote: a million empty files included).
MAX_DELTA_BYTES = 256 << 20
MAX_DELTA_ENTRIES = 100_000
_OPAQUE = ("trusted.overlay.opaque", "user.overlay.opaque")
#: Overlay features whose layer is not the plain picture above: such a layer is forked the usual way.
_UNREPLAYABLE = ("trusted.overlay.redirect", "trusted.overlay.metacopy", "user.overlay.redirect")


@dataclass(frozen=True)
class Delta:
    """The tar of the layer's entries (owners as numbers), the paths it deleted, the directories it emptied, and
    the files whose bytes are the image's: ``[path, mode, uid, gid, mtime]`` each."""

    archive: bytes
    remove: list[str]
    clear: list[str]
    touch: list[list[str | int | float]]
    content_bytes: int


def _xattr(path: str, name: str) -> bytes | None:
    try:
        return os.getxattr(path, name, follow_symlinks=False)
    except OSError:
        return None


def _unchanged(lowers: list[str], arcname: str, path: str, info: os.stat_result) -> bool:
    """Whether the topmost lower directory holding ``arcname`` holds it as a regular file with the bytes of ``path``.

    (A lower layer's own opaque directory is not looked at: a file found below one that the merged view does not
    show fails the replay, which then forks the usual way.)"""
    for lower in lowers:
        below = os.path.join(lower, arcname)
        try:
            found = os.lstat(below)
        except OSError:
            continue
        return stat.S_ISREG(found.st_mode) and found.st_size == info.st_size and filecmp.cmp(below, path, False)
    return False


def read_delta(
    upper: str, lowers: list[str] | None = None, limit: int | None = None, skip: tuple[str, ...] = ()
) -> Delta | None:
    """The layer at ``upper`` (an overlay upper directory) over ``lowers`` (its lower directories, topmost first),
    or None where it cannot be replayed (see above) or holds more than ``limit`` bytes of file content (default
    `MAX_DELTA_BYTES`) or `MAX_DELTA_ENTRIES` entries. ``skip``: top-level names left out (a mount point the
    engine makes in every container).

    Paths are relative to the root of the file system the layer belongs to. Read it while nothing writes there.
    """
    limit = MAX_DELTA_BYTES if limit is None else limit
    buffer = io.BytesIO()
    remove: list[str] = []
    clear: list[str] = []
    touch: list[list[str | int | float]] = []
    size = 0
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.PAX_FORMAT) as archive:
        for directory, dirs, files in os.walk(upper):
            relative = os.path.relpath(directory, upper)
            if relative == ".":
                dirs[:] = [name for name in dirs if name not in skip]
                files = [name for name in files if name not in skip]
            if any(_xattr(directory, name) is not None for name in _UNREPLAYABLE):
                return None
            if relative != "." and any(_xattr(directory, name) == b"y" for name in _OPAQUE):
                clear.append(relative)
            for name in sorted(dirs) + sorted(files):
                path = os.path.join(directory, name)
                arcname = name if relative == "." else os.path.join(relative, name)
                info = os.lstat(path)
                if stat.S_ISCHR(info.st_mode) and info.st_rdev == 0:
                    remove.append(arcname)
                    continue
                if stat.S_ISSOCK(info.st_mode):
                    continue  # a socket is no file a fork could use (a server's, which is not carried over)
                if len(archive.members) + len(remove) >= MAX_DELTA_ENTRIES:
                    return None
                emptied = any(arcname.startswith(f"{directory}/") for directory in clear)
                if (
                    stat.S_ISREG(info.st_mode)
                    and info.st_nlink == 1
                    and not emptied
                    and _unchanged(lowers or [], arcname, path, info)
                ):
                    touch.append([arcname, stat.S_IMODE(info.st_mode), info.st_uid, info.st_gid, info.st_mtime])
                    continue
                member = archive.gettarinfo(path, arcname)
                member.uname = member.gname = ""  # numeric owners: the host's user names mean nothing inside
                if member.isreg():
                    size += member.size
                    if size > limit:
                        return None
                    with os.fdopen(os.open(path, os.O_RDONLY | os.O_NOFOLLOW), "rb") as content:
                        archive.addfile(member, content)
                else:
                    archive.addfile(member)
    return Delta(buffer.getvalue(), remove, clear, touch, size)
