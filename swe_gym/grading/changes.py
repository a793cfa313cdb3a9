"""What applying a patch changed in the grading sandbox, read from the file system, not from the patch.

A diff's headers can lie (no ``a/`` ``b/`` prefixes, plain ``---``/``+++`` diffs, fuzzy
matches that land elsewhere), so the restore set comes from a listing of the work tree
taken before and after the apply: every file, link and directory with its type, size,
mode, inode, mtime and ctime (the kernel sets ctime; no apply can keep it), ignored
files included. ``.git`` is listed too, minus its object store and our scratch space:
a change there means the patch reached the repository's own machinery.

The listing runs before any code of the patch has run in the sandbox (GNU find, or
``python3 -I`` where find lacks ``-printf``).
"""

from __future__ import annotations

import shlex

from swe_gym.errors import GradingError
from swe_gym.grading.patch import GIT_ENV, SCRATCH
from swe_gym.grading.protect import SECTIONED
from swe_gym.sandbox import AsyncSandbox

_LISTING = f"{SCRATCH}/listing"

#: GNU find lists the tree in a few milliseconds; type, size, mode, inode, mtime, ctime, link target.
_FIND = (
    f"find . -path ./.git/objects -prune -o -path ./{SCRATCH} -prune -o -mindepth 1 "
    "-printf '%P\\0%y\\0%s\\0%m\\0%i\\0%T@\\0%C@\\0%l\\0'"
)
#: The same listing where find has no -printf (busybox), from ``python3 -I`` (no work-tree module on its path).
_PY_LIST = r"""
import os, stat, sys
root = sys.argv[1]
skip = {os.path.join(root, ".git", "objects"), os.path.join(root, ".git", "swe_gym")}
out = sys.stdout.buffer
for top, dirs, files in os.walk(root):
    dirs[:] = [d for d in dirs if os.path.join(top, d) not in skip]
    for name in dirs + files:
        path = os.path.join(top, name)
        try:
            st = os.lstat(path)
        except OSError:
            continue
        link = os.readlink(path) if stat.S_ISLNK(st.st_mode) else ""
        fields = [os.path.relpath(path, root), oct(stat.S_IFMT(st.st_mode)), st.st_size, oct(st.st_mode & 0o7777),
                  st.st_ino, st.st_mtime_ns, st.st_ctime_ns, link]
        out.write(b"".join(os.fsencode(str(f)) + b"\0" for f in fields))
"""
_LIST = f"{{ {_FIND} 2>/dev/null || python3 -I -c {shlex.quote(_PY_LIST)} .; }}"
_FIELDS = 8


def _parse(listing: bytes) -> dict[str, tuple[bytes, ...]]:
    """{path: its fields}; a directory's size and times change with its entries, which are listed themselves."""
    parts = listing.split(b"\0")
    entries: dict[str, tuple[bytes, ...]] = {}
    for i in range(0, len(parts) - _FIELDS + 1, _FIELDS):
        path, kind, *rest = parts[i : i + _FIELDS]
        if kind in (b"d", b"0o40000"):
            rest[0] = rest[3] = rest[4] = b""
        entries[path.decode("utf-8", "surrogateescape")] = (kind, *rest)
    return entries


async def record(sandbox: AsyncSandbox) -> None:
    """Remember the work tree as it is now (before the apply)."""
    result = await sandbox.exec(f"mkdir -p {SCRATCH} && {_LIST} > {_LISTING}", timeout=300)
    if result.exit_code != 0:
        raise GradingError(f"could not list the grading sandbox's work tree: {result.output[-500:]}")


async def changed_since_record(sandbox: AsyncSandbox) -> dict[str, str]:
    """{path: "added" | "modified" | "deleted"} since `record` (directories only when added or deleted)."""
    result = await sandbox.exec(f"{_LIST} > {_LISTING}.after", timeout=300)
    if result.exit_code != 0:
        raise GradingError(f"could not list the grading sandbox's work tree: {result.output[-500:]}")
    before = _parse(await sandbox.read_file(_LISTING, max_bytes=1 << 30))
    after = _parse(await sandbox.read_file(f"{_LISTING}.after", max_bytes=1 << 30))
    changed: dict[str, str] = {}
    for path in before.keys() | after.keys():
        old, new = before.get(path), after.get(path)
        if old != new:
            changed[path] = "added" if old is None else "deleted" if new is None else "modified"
    return changed


def in_git_dir(changed: dict[str, str]) -> list[str]:
    """The changed paths inside ``.git``, sorted: a patch (or the agent's files) reached the repository's own
    machinery, which is tampering wherever it is found."""
    return sorted(path for path in changed if path == ".git" or path.startswith(".git/"))


_CONFIG_BYTES = 1 << 20


async def config_texts(sandbox: AsyncSandbox, changed: dict[str, str]) -> dict[str, tuple[str | None, str | None]]:
    """(base, patched) text of each changed tox.ini / setup.cfg / pyproject.toml; a patched one that is not a
    regular file of a sane size (a directory, a link, a device) reads as unreadable, so it differs and goes back."""
    texts: dict[str, tuple[str | None, str | None]] = {}
    for path, kind in changed.items():
        if path.rsplit("/", 1)[-1] not in SECTIONED:
            continue
        quoted = shlex.quote(path)
        base = await sandbox.exec(f"{GIT_ENV} git show HEAD:./{quoted}", timeout=60)
        patched: str | None = None
        if kind != "deleted":
            read = await sandbox.exec(
                f"if [ -f {quoted} ] && [ ! -L {quoted} ]; then head -c {_CONFIG_BYTES + 1} {quoted}; else exit 3; fi",
                timeout=60,
            )
            ok = read.exit_code == 0 and len(read.output) <= _CONFIG_BYTES
            patched = read.output if ok else "\0unreadable"
        texts[path] = (base.output if base.exit_code == 0 else None, patched)
    return texts
