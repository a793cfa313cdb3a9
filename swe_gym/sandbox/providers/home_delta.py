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
import itertools
import os
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


class _Tree:
    """A home whose entries are reached one directory at a time, each opened without following a symbolic link, so
    no operation through it reaches outside the home: neither a read of a source whose processes still run (no
    freezer) nor a write of a target whose tree a torn read of the source made inconsistent (a path listed as a
    link and as a directory holding entries)."""

    #: Directories kept open at once (a change across thousands of them must not run out of descriptors).
    MAX_OPEN = 256

    def __init__(self, home: Path | str) -> None:
        self.home = str(home)
        self.dirs: dict[str, int] = {}

    def parent(self, relative: str) -> tuple[int, str]:
        """(descriptor of the directory holding ``relative``, its name); an `OSError` where a parent is no
        directory (ELOOP for a link, ENOTDIR) or is missing."""
        parent, _, name = relative.rpartition("/")
        if parent not in self.dirs:
            if len(self.dirs) >= self.MAX_OPEN:
                self.close()
            # Down from the deepest directory open already (iterative: a tree may be deeper than Python recurses).
            missing = [parent]
            while missing[-1] and missing[-1] not in self.dirs:
                missing.append(missing[-1].rpartition("/")[0])
            flags = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW
            if missing[-1] not in self.dirs:  # "": the home itself
                self.dirs[""] = os.open(self.home, flags)
            for above, below in itertools.pairwise(reversed(missing)):
                self.dirs[below] = os.open(below.rpartition("/")[2], flags, dir_fd=self.dirs[above])
                if above and len(self.dirs) > self.MAX_OPEN:  # deep: keep the way down, not every step of it
                    os.close(self.dirs.pop(above))
        return self.dirs[parent], name

    def lstat(self, relative: str) -> os.stat_result | None:
        """None where nothing is there (or a parent is no directory now: then nothing below it is reached)."""
        try:
            directory, name = self.parent(relative)
            return os.stat(name, dir_fd=directory, follow_symlinks=False)
        except (FileNotFoundError, NotADirectoryError):
            return None
        except OSError as exc:
            if exc.errno == errno.ELOOP:  # a parent is a symbolic link
                return None
            raise

    def forget(self, relative: str) -> None:
        """Close the descriptors of ``relative`` and below (it is about to be removed or replaced)."""
        for key in [key for key in self.dirs if key == relative or key.startswith(f"{relative}/")]:
            os.close(self.dirs.pop(key))

    def reachable(self, relative: str) -> bool:
        """Whether every parent of ``relative`` is a directory (reached without following a link)."""
        try:
            self.parent(relative)
        except OSError as exc:
            if exc.errno in (errno.ENOENT, errno.ENOTDIR, errno.ELOOP):
                return False
            raise
        return True

    def remove(self, relative: str) -> bool:
        """Delete ``relative`` (a tree too, made writable on the way as cp -a's copy may hold it read-only);
        whether there was something. Nothing below a parent that is no directory is touched."""
        if not self.reachable(relative):
            return False
        directory, name = self.parent(relative)
        self.forget(relative)
        return _remove_at(directory, name)

    def close(self) -> None:
        for descriptor in self.dirs.values():
            os.close(descriptor)
        self.dirs.clear()


def _remove_at(directory: int, name: str) -> bool:
    """Delete ``name`` of the open ``directory`` (a tree too: each level opened without following links)."""
    try:
        info = os.stat(name, dir_fd=directory, follow_symlinks=False)
    except FileNotFoundError:
        return False
    if stat.S_ISDIR(info.st_mode):
        below = os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=directory)
        try:
            if stat.S_IMODE(info.st_mode) & 0o700 != 0o700:
                os.fchmod(below, 0o700)
            for child in os.listdir(below):
                _remove_at(below, child)
        finally:
            os.close(below)
        os.rmdir(name, dir_fd=directory)
    else:
        os.unlink(name, dir_fd=directory)
    return True


def _owner(target: _Tree, relative: str, info: os.stat_result, now: os.stat_result) -> None:
    """The source's owner where it differs (which needs privilege; without it a copy keeps ours, as cp -a)."""
    if (now.st_uid, now.st_gid) != (info.st_uid, info.st_gid):
        directory, name = target.parent(relative)
        with contextlib.suppress(PermissionError):
            os.chown(name, info.st_uid, info.st_gid, dir_fd=directory, follow_symlinks=False)


#: Changed files up to this size are read from the source once for all targets.
SMALL_FILE = 1 << 20


def _write(
    source: _Tree, target: _Tree, relative: str, info: os.stat_result, content: bytes | None
) -> os.stat_result | None:
    """``target``'s entry ``relative`` made what ``source``'s is (a directory: made, its contents aside;
    ``content``: a regular file's bytes, read once, or None to stream them); its mode and times are set by `sync`
    once the children are in. Returns what was there and is kept (its metadata may still differ), None where an
    entry was made (its parent's times move then). A regular file of the target stays its inode where it can (new
    inodes are what costs most on a slow disk): left as it is when its bytes are the source's (git freshening a
    pack, say), else rewritten in place. Every call is relative to a parent opened without following links."""
    mode = info.st_mode
    at, name = target.parent(relative)
    existing = None
    with contextlib.suppress(FileNotFoundError):
        existing = os.stat(name, dir_fd=at, follow_symlinks=False)
    if stat.S_ISREG(mode) and existing is not None and stat.S_ISREG(existing.st_mode) and existing.st_nlink == 1:
        writer = os.open(name, os.O_RDWR | os.O_NOFOLLOW, dir_fd=at)
        try:
            if content is not None:
                _rewrite_small(writer, existing, content)
            else:
                reader = _open_source(source, relative)
                try:
                    if existing.st_size != info.st_size or not _same_bytes(reader, writer):
                        os.ftruncate(writer, 0)
                        os.lseek(reader, 0, os.SEEK_SET)
                        os.lseek(writer, 0, os.SEEK_SET)
                        _copy_bytes(reader, writer)
                finally:
                    os.close(reader)
        finally:
            os.close(writer)
        _owner(target, relative, info, existing)
        return existing
    if stat.S_ISDIR(mode) and existing is not None and stat.S_ISDIR(existing.st_mode):
        _owner(target, relative, info, existing)
        return existing
    if existing is not None:
        target.remove(relative)
    if stat.S_ISDIR(mode):
        os.mkdir(name, 0o700, dir_fd=at)
    elif stat.S_ISLNK(mode):
        directory, source_name = source.parent(relative)
        os.symlink(os.readlink(source_name, dir_fd=directory), name, dir_fd=at)
    elif stat.S_ISFIFO(mode):
        os.mkfifo(name, 0o600, dir_fd=at)
    else:
        writer = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600, dir_fd=at)
        try:
            if content is not None:
                _write_all(writer, content)
            else:
                reader = _open_source(source, relative)
                try:
                    _copy_bytes(reader, writer)
                finally:
                    os.close(reader)
        finally:
            os.close(writer)
    _owner(target, relative, info, os.stat(name, dir_fd=at, follow_symlinks=False))
    return None


def _open_source(source: _Tree, relative: str) -> int:
    directory, name = source.parent(relative)
    return os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK, dir_fd=directory)


def _rewrite_small(writer: int, existing: os.stat_result, content: bytes) -> None:
    """The open regular file ``writer`` holding ``content``, in place; untouched where it does already."""
    if existing.st_size == len(content) and os.read(writer, len(content) + 1) == content:
        return
    os.ftruncate(writer, 0)
    os.lseek(writer, 0, os.SEEK_SET)
    _write_all(writer, content)


def _write_all(writer: int, content: bytes) -> None:
    view = memoryview(content)
    while view:
        view = view[os.write(writer, view) :]


def _read_small(source: _Tree, relative: str, info: os.stat_result) -> bytes | None:
    """A small regular file's bytes (None: stream it per target instead)."""
    if not stat.S_ISREG(info.st_mode) or info.st_size > SMALL_FILE:
        return None
    reader = _open_source(source, relative)
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
    while nothing writes there. Whatever the source does meanwhile, nothing outside the targets is written and
    nothing outside the source is read: an entry below one that is no directory (in the source as read, or in a
    target as written) is left out."""
    order = sorted(paths, key=lambda p: (p.count("/"), p))  # parents before children
    reader = _Tree(source)
    try:
        present = {relative: info for relative in order if (info := reader.lstat(relative)) is not None}
        small = {relative: _read_small(reader, relative, info) for relative, info in present.items()}
        parents = {relative: reader.lstat(relative) for relative in {os.path.dirname(p) for p in order} - {""}}
        for home in targets:
            _sync_one(reader, _Tree(home), order, present, small, parents)
    finally:
        reader.close()


def _sync_one(
    source: _Tree,
    target: _Tree,
    order: list[str],
    present: dict[str, os.stat_result],
    small: dict[str, bytes | None],
    parents: dict[str, os.stat_result | None],
) -> None:
    try:
        moved = set()  # directories an entry was made in or removed from: their times go back too
        for relative in reversed(order):  # deletions deepest first (a deleted parent takes its children)
            if relative not in present and target.remove(relative):
                moved.add(os.path.dirname(relative))
        kept: dict[str, os.stat_result | None] = {}
        for relative, info in present.items():
            if not target.reachable(relative):
                continue  # below an entry that is no directory here (a torn read of the source): left out
            kept[relative] = _write(source, target, relative, info, small[relative])
            if kept[relative] is None:
                moved.add(os.path.dirname(relative))
        settle = {relative: present[relative] for relative in kept}
        settle.update((p, info) for p in moved - settle.keys() if (info := parents.get(p)) is not None)
        for relative in sorted(settle, key=lambda p: (-p.count("/"), p)):  # children first
            info, was = settle[relative], kept.get(relative)
            now = target.lstat(relative)
            if now is None or stat.S_IFMT(now.st_mode) != stat.S_IFMT(info.st_mode):
                continue  # (a parent moved: the entry was left out above)
            directory, name = target.parent(relative)
            if not stat.S_ISLNK(info.st_mode) and (was is None or was.st_mode != info.st_mode):
                os.chmod(name, stat.S_IMODE(info.st_mode), dir_fd=directory)
            os.utime(name, ns=(info.st_atime_ns, info.st_mtime_ns), dir_fd=directory, follow_symlinks=False)
    finally:
        target.close()
