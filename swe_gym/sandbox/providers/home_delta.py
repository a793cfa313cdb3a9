"""What a sandbox home changed since it was primed from a saved home, and that change replayed in another.

A local sandbox started from a saved home (a prepared task: `LocalProvider.commit`) is a copy of it. `prime`
records that copy as a `HomeBase`: each entry's inode number, and a change time later than every copied entry's.
The kernel sets an inode's change time (ctime) on every write, truncate, chmod, chown, link, unlink and rename of
it, and nothing a sandbox can run sets it back (only the system clock could). So an entry still at its path, with
its inode and a ctime before the mark, is the copy untouched; everything else the home changed is new (a path the
base lacks, or another inode there), changed (a later ctime) or deleted (a base path the walk no longer finds).

`sync` makes started homes of the same base equal to a source home by touching only those paths (and the ones
the targets changed, normally none): a fork into the warm pool then costs the episode's changes, not a copy of the
whole repository. A change it cannot replay faithfully (a hard link, a device node, extended attributes) or one
past `MAX_SYNC_BYTES` makes `changes` None: the caller copies the whole home then.
"""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import stat
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

#: Past this many bytes of changed file content a whole copy (``cp -a``, which streams) is no slower.
MAX_SYNC_BYTES = 256 << 20
MARK = "primed.mark"


@dataclass(frozen=True)
class HomeBase:
    """The saved home a sandbox home was copied from (``image``: the id of that one save), and what the copy was:
    ``inodes`` (path relative to the home -> inode number) of ``dirs``, and ``since_ns``, a ctime no copied entry
    reaches."""

    image: str
    dirs: tuple[str, ...]
    inodes: dict[str, int]
    since_ns: int


def _walk(home: Path, dirs: Sequence[str]) -> Iterator[tuple[str, os.stat_result]]:
    """(path relative to ``home``, lstat) of each of ``dirs`` and everything below, parents first; never follows
    a symbolic link."""
    root = str(home)
    stack = [name for name in reversed(dirs) if os.path.isdir(os.path.join(root, name))]
    while stack:
        relative = stack.pop()
        info = os.lstat(os.path.join(root, relative))
        yield relative, info
        if stat.S_ISDIR(info.st_mode):
            names = sorted(os.listdir(os.path.join(root, relative)))
            stack.extend(f"{relative}/{name}" for name in reversed(names))


def prime(home: Path, image: str, dirs: Sequence[str]) -> HomeBase | None:
    """The base of ``home`` as it is now: call once the copy is in place and before anything runs there. None
    where the home cannot be walked (a path past the system's limit, say): its forks copy it whole."""
    try:
        inodes = {relative: info.st_ino for relative, info in _walk(home, dirs)}
    except OSError:
        return None
    mark = home / MARK
    mark.touch()
    copied = os.stat(mark).st_ctime_ns
    since = copied
    while since <= copied:  # one tick of the file system's clock on: later changes land at or after it
        time.sleep(0.001)
        os.utime(mark)
        since = os.stat(mark).st_ctime_ns
    mark.unlink()
    return HomeBase(image, tuple(dirs), inodes, since)


@dataclass(frozen=True)
class Changes:
    """The paths (relative to the home) that differ from the base: each either in the home (write it) or not
    (delete it)."""

    paths: frozenset[str]


def changes(home: Path, base: HomeBase) -> Changes | None:
    """What ``home`` changed since ``base`` (see the module docstring); None where `sync` could not replay it."""
    try:
        return _changes(home, base)
    except OSError:  # a path past the system's limit, an entry gone meanwhile: only a whole copy can tell
        return None


def _changes(home: Path, base: HomeBase) -> Changes | None:
    seen: set[str] = set()
    changed: set[str] = set()
    size = 0
    for relative, info in _walk(home, base.dirs):
        seen.add(relative)
        if base.inodes.get(relative) == info.st_ino and info.st_ctime_ns < base.since_ns:
            continue
        mode = info.st_mode
        if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode) or stat.S_ISLNK(mode) or stat.S_ISFIFO(mode)):
            if stat.S_ISSOCK(mode):
                continue  # a server's socket is no file a fork could use (a whole copy drops it too)
            return None  # a device node: only a whole copy reproduces it
        if stat.S_ISREG(mode) and info.st_nlink > 1:
            return None  # a hard link: written twice it would be two files
        if not stat.S_ISLNK(mode) and os.listxattr(os.path.join(home, relative), follow_symlinks=False):
            return None
        if stat.S_ISREG(mode):
            size += info.st_size
            if size > MAX_SYNC_BYTES:
                return None
        changed.add(relative)
    return Changes(frozenset(changed | (base.inodes.keys() - seen)))


def _remove(path: str) -> bool:
    """Delete ``path`` (a tree too), making read-only directories writable on the way as cp -a's copy may hold;
    whether there was something."""

    def unlock(func, failed, _exc):  # type: ignore[no-untyped-def]
        with contextlib.suppress(OSError):
            os.chmod(os.path.dirname(failed), 0o700)
        with contextlib.suppress(FileNotFoundError):
            func(failed)

    try:
        if stat.S_ISDIR(os.lstat(path).st_mode):
            shutil.rmtree(path, onerror=unlock)  # (onerror: Python 3.11 has no onexc)
        else:
            os.unlink(path)
    except FileNotFoundError:
        return False
    return True


class _Source:
    """Reads ``home``'s entries one directory at a time without following a symbolic link anywhere on the way, so
    a source whose processes still run (no freezer) cannot point a read at the host's files."""

    def __init__(self, home: Path) -> None:
        self.home = home
        self.dirs: dict[str, int] = {}

    def parent(self, relative: str) -> tuple[int, str]:
        """(descriptor of the directory holding ``relative``, its name)."""
        parent, _, name = relative.rpartition("/")
        if parent not in self.dirs:
            above, below = self.parent(parent) if parent else (None, str(self.home))
            flags = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW
            self.dirs[parent] = os.open(below, flags, dir_fd=above) if above is not None else os.open(below, flags)
        return self.dirs[parent], name

    def lstat(self, relative: str) -> os.stat_result | None:
        """None where nothing is there (or a parent is no directory now: then nothing below it is copied)."""
        try:
            directory, name = self.parent(relative)
            return os.stat(name, dir_fd=directory, follow_symlinks=False)
        except (FileNotFoundError, NotADirectoryError):
            return None
        except OSError as exc:
            if exc.errno == errno.ELOOP:  # a parent is a symbolic link
                return None
            raise

    def close(self) -> None:
        for descriptor in self.dirs.values():
            os.close(descriptor)


def _owner(path: str, info: os.stat_result, now: os.stat_result | None = None) -> None:
    """The source's owner where it differs (which needs privilege; without it a copy keeps ours, as cp -a)."""
    now = now or os.lstat(path)
    if (now.st_uid, now.st_gid) != (info.st_uid, info.st_gid):
        with contextlib.suppress(PermissionError):
            os.chown(path, info.st_uid, info.st_gid, follow_symlinks=False)


#: Changed files up to this size are read from the source once for all targets.
SMALL_FILE = 1 << 20


def _write(
    source: _Source, relative: str, target: str, info: os.stat_result, content: bytes | None
) -> os.stat_result | None:
    """``target`` made the entry ``relative`` of ``source`` is (a directory: made, its contents aside; ``content``:
    a regular file's bytes, read once, or None to stream them); its mode and times are set by `sync` once the
    children are in. Returns what was there and is kept (its metadata may still differ), None where an entry was
    made (its parent's times move then). A regular file of the target stays its inode where it can (new inodes
    are what costs most on a slow disk): left as it is when its bytes are the source's (git freshening a pack,
    say), else rewritten in place."""
    mode = info.st_mode
    existing = None
    with contextlib.suppress(FileNotFoundError):
        existing = os.lstat(target)
    if stat.S_ISREG(mode) and existing is not None and stat.S_ISREG(existing.st_mode) and existing.st_nlink == 1:
        if content is not None:
            _rewrite_small(target, existing, content)
        else:
            directory, name = source.parent(relative)
            reader = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK, dir_fd=directory)
            try:
                writer = os.open(target, os.O_RDWR | os.O_NOFOLLOW)
                try:
                    if existing.st_size != info.st_size or not _same_bytes(reader, writer):
                        os.ftruncate(writer, 0)
                        os.lseek(reader, 0, os.SEEK_SET)
                        os.lseek(writer, 0, os.SEEK_SET)
                        _copy_bytes(reader, writer)
                finally:
                    os.close(writer)
            finally:
                os.close(reader)
        _owner(target, info, existing)
        return existing
    if stat.S_ISDIR(mode) and existing is not None and stat.S_ISDIR(existing.st_mode):
        _owner(target, info, existing)
        return existing
    if existing is not None:
        _remove(target)
    directory, name = source.parent(relative)
    if stat.S_ISDIR(mode):
        os.mkdir(target, 0o700)
    elif stat.S_ISLNK(mode):
        os.symlink(os.readlink(name, dir_fd=directory), target)
    elif stat.S_ISFIFO(mode):
        os.mkfifo(target, 0o600)
    else:
        writer = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        try:
            if content is not None:
                _write_all(writer, content)
            else:
                reader = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK, dir_fd=directory)
                try:
                    _copy_bytes(reader, writer)
                finally:
                    os.close(reader)
        finally:
            os.close(writer)
    _owner(target, info)
    return None


def _rewrite_small(target: str, existing: os.stat_result, content: bytes) -> None:
    """``target`` (a regular file) holding ``content``, in place; untouched where it does already."""
    writer = os.open(target, os.O_RDWR | os.O_NOFOLLOW)
    try:
        if existing.st_size == len(content) and os.read(writer, len(content) + 1) == content:
            return
        os.ftruncate(writer, 0)
        os.lseek(writer, 0, os.SEEK_SET)
        _write_all(writer, content)
    finally:
        os.close(writer)


def _write_all(writer: int, content: bytes) -> None:
    view = memoryview(content)
    while view:
        view = view[os.write(writer, view) :]


def _read_small(source: _Source, relative: str, info: os.stat_result) -> bytes | None:
    """A small regular file's bytes (None: stream it per target instead)."""
    if not stat.S_ISREG(info.st_mode) or info.st_size > SMALL_FILE:
        return None
    directory, name = source.parent(relative)
    reader = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK, dir_fd=directory)
    try:
        chunks = []
        while chunk := os.read(reader, SMALL_FILE + 1):
            chunks.append(chunk)
        return b"".join(chunks)
    finally:
        os.close(reader)


def _same_bytes(one: int, other: int) -> bool:
    """Whether the two open files (of one size) hold the same bytes, read from their starts."""
    while True:
        chunk = os.read(one, 1 << 20)
        if chunk != os.read(other, len(chunk) or 1):
            return False
        if not chunk:
            return True


def _below_dirs(home: str, relative: str) -> bool:
    """Whether every parent of ``relative`` in ``home`` is a directory (no link a deletion would go through)."""
    parent = os.path.dirname(relative)
    while parent:
        try:
            if not stat.S_ISDIR(os.lstat(f"{home}/{parent}").st_mode):
                return False
        except FileNotFoundError:
            return False
        parent = os.path.dirname(parent)
    return True


def _copy_bytes(reader: int, writer: int) -> None:
    """In the kernel (reflinked where the file system can) on one file system; read and written across two."""
    try:
        while os.copy_file_range(reader, writer, 1 << 30):
            pass
    except OSError as exc:
        if exc.errno not in (errno.EXDEV, errno.ENOSYS, errno.EOPNOTSUPP, errno.EINVAL):
            raise
        while chunk := os.read(reader, 1 << 20):
            os.write(writer, chunk)


def sync(source: Path, targets: Sequence[Path], paths: frozenset[str]) -> None:
    """Make each home of ``targets`` hold what ``source`` holds at ``paths`` (entries relative to the homes,
    each present in ``source`` or to be deleted); every other entry is already the same. Blocking; read ``source``
    while nothing writes there."""
    order = sorted(paths, key=lambda p: (p.count("/"), p))  # parents before children
    reader = _Source(source)
    try:
        present = {relative: info for relative in order if (info := reader.lstat(relative)) is not None}
        small = {relative: _read_small(reader, relative, info) for relative, info in present.items()}
        parents = {relative: reader.lstat(relative) for relative in {os.path.dirname(p) for p in order} - {""}}
        for target in map(str, targets):
            moved = set()  # directories an entry was made in or removed from: their times go back too
            for relative in reversed(order):  # deletions deepest first (a deleted parent takes its children)
                if relative not in present and _below_dirs(target, relative) and _remove(f"{target}/{relative}"):
                    moved.add(os.path.dirname(relative))
            kept: dict[str, os.stat_result | None] = {}
            for relative, info in present.items():
                kept[relative] = _write(reader, relative, os.path.join(target, relative), info, small[relative])
                if kept[relative] is None:
                    moved.add(os.path.dirname(relative))
            settle = dict(present)
            settle.update((p, info) for p in moved - settle.keys() if (info := parents.get(p)) is not None)
            for relative in sorted(settle, key=lambda p: (-p.count("/"), p)):  # children first
                info, path, was = settle[relative], os.path.join(target, relative), kept.get(relative)
                if not stat.S_ISLNK(info.st_mode) and (was is None or was.st_mode != info.st_mode):
                    os.chmod(path, stat.S_IMODE(info.st_mode))
                os.utime(path, ns=(info.st_atime_ns, info.st_mtime_ns), follow_symlinks=False)
    finally:
        reader.close()
