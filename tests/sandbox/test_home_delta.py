"""`home_delta`: what a home changed since it was primed, replayed in homes primed from the same saved copy, must
leave each exactly as the source is, whatever the source did (a property over random changes, real files)."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from swe_gym.sandbox.providers import home_delta

DIRS = ("work", "tmp", "state")


def tree(home: Path) -> dict[str, tuple]:
    """Every entry below ``home``'s dirs: type, mode, size, mtime (not of symlinks), link target, bytes."""
    found: dict[str, tuple] = {}
    for name in DIRS:
        for directory, dirs, files in os.walk(home / name):
            for entry in [directory, *(os.path.join(directory, n) for n in dirs + files)]:
                info = os.lstat(entry)
                link = os.readlink(entry) if stat.S_ISLNK(info.st_mode) else None
                content = Path(entry).read_bytes() if stat.S_ISREG(info.st_mode) else None
                mtime = None if link is not None else info.st_mtime_ns
                found[os.path.relpath(entry, home)] = (stat.S_IFMT(info.st_mode), info.st_mode, mtime, link, content)
    return found


def make_base(root: Path) -> Path:
    base = root / "base"
    (base / "work/pkg/sub").mkdir(parents=True)
    (base / "work/pkg/a.py").write_text("alpha\n")
    (base / "work/pkg/sub/b.txt").write_text("bravo\n")
    (base / "work/big.bin").write_bytes(os.urandom(200_000))
    (base / "work/other").mkdir()
    (base / "work/other/c.txt").write_text("charlie\n")
    os.symlink("pkg/a.py", base / "work/link")
    (base / "tmp").mkdir()
    (base / "tmp/t").write_text("tmp\n")
    (base / "state").mkdir()
    return base


def copy(base: Path, home: Path) -> home_delta.HomeBase:
    home.mkdir()
    subprocess.run(["cp", "-a", *(str(base / name) for name in DIRS), str(home)], check=True)
    return home_delta.prime(home, "img", DIRS)


#: Changes a sandbox's commands can make, each a shell command run in the source home.
OPERATIONS = [
    "echo more >> work/pkg/a.py",
    "printf 'ALPHA\\n' > work/pkg/a.py && touch -d @1000000000 work/pkg/a.py",  # same size, old mtime
    "rm work/pkg/sub/b.txt",
    "rm -rf work/other && mkdir work/other && echo new > work/other/d.txt",
    "mv work/pkg/sub work/moved",  # the children keep their ctime: their paths are new
    "rm -rf work/other && mv work/pkg work/other",  # a directory where another was, other children
    "rm work/link && echo notalink > work/link",
    "rm -rf work/other && ln -s /etc work/other",  # a directory replaced by a link out of the home
    "chmod 600 work/pkg/a.py",
    "chmod 555 work/pkg",
    "mkdir -p work/new/deep && echo x > work/new/deep/y && touch -d @1200000000 work/new",
    "touch work/big.bin",  # its bytes, a new mtime
    "dd if=/dev/urandom of=work/big.bin bs=1k count=3 conv=notrunc status=none",
    "rm tmp/t && mkfifo tmp/t",
    "echo home > state/h",
    "rm -rf tmp",
]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.sampled_from(OPERATIONS), max_size=5), st.lists(st.sampled_from(OPERATIONS), max_size=2))
def test_sync_makes_every_target_the_source(tmp_path_factory, source_ops: list[str], target_ops: list[str]) -> None:
    """Random changes in the source (and some in one target, which `changes` of it covers) replayed: each target's
    tree is then the source's, entry for entry (types, modes, bytes, times, link targets)."""
    root = tmp_path_factory.mktemp("delta")
    base = make_base(root)
    source_base = copy(base, root / "source")
    targets = [root / f"target{i}" for i in range(2)]
    target_bases = [copy(base, target) for target in targets]
    for operation in source_ops:
        subprocess.run(["bash", "-c", operation], cwd=root / "source", capture_output=True)
    for operation in target_ops:
        subprocess.run(["bash", "-c", operation], cwd=targets[0], capture_output=True)
    found = [home_delta.changes(root / "source", source_base), home_delta.changes(targets[0], target_bases[0])]
    assert all(change is not None for change in found)
    untouched = home_delta.changes(targets[1], target_bases[1])
    assert untouched is not None and not untouched.paths  # nothing ran there: nothing to see
    paths = frozenset().union(*(change.paths for change in found if change is not None))
    home_delta.sync(root / "source", targets, paths)
    expected = tree(root / "source")
    for target in targets:
        assert tree(target) == expected
    for home in [root / "source", *targets]:
        subprocess.run(["chmod", "-R", "u+rwx", str(home)], check=True)
    shutil.rmtree(root)


def test_what_only_a_whole_copy_carries_is_refused(tmp_path: Path) -> None:
    """A hard link or a device node in the changes: None (the caller copies the whole home)."""
    base = make_base(tmp_path)
    for change in ("ln work/pkg/a.py work/hard", "mknod work/null c 1 3"):
        home = tmp_path / "home"
        primed = copy(base, home)
        if subprocess.run(["bash", "-c", change], cwd=home, capture_output=True).returncode != 0:
            assert change.startswith("mknod") and os.geteuid() != 0  # only root makes device nodes
            continue
        assert home_delta.changes(home, primed) is None
        shutil.rmtree(home)


def secret_changed(tmp_path: Path, content: str) -> tuple[Path, Path, Path, frozenset[str]]:
    """A source home that wrote ``work/pkg/secret``, a target of the same base, an empty directory outside both,
    and the source's changes."""
    base = make_base(tmp_path)
    home, target = tmp_path / "home", tmp_path / "target"
    primed = copy(base, home)
    copy(base, target)
    (home / "work/pkg/secret").write_text(content)
    found = home_delta.changes(home, primed)
    assert found is not None and "work/pkg/secret" in found.paths
    outside = tmp_path / "outside"
    outside.mkdir()
    return home, target, outside, found.paths


def test_a_source_that_swaps_a_directory_for_a_link_is_never_read_through_it(tmp_path: Path) -> None:
    """A changed path whose parent became a symlink since it was found (processes still running in the source)
    is read as absent, never through the link: no host file reaches a target."""
    home, target, outside, paths = secret_changed(tmp_path, "mine\n")
    (outside / "secret").write_text("host secret\n")
    shutil.rmtree(home / "work/pkg")
    os.symlink(outside, home / "work/pkg")
    home_delta.sync(home, [target], paths)
    assert os.readlink(target / "work/pkg") == str(outside)  # the link itself is the source's
    assert (outside / "secret").read_text() == "host secret\n"  # nothing deleted or written through it
    files = [os.path.join(d, name) for d, _, names in os.walk(target) for name in names]  # links not followed
    assert not [path for path in files if os.path.isfile(path) and b"host" in Path(path).read_bytes()]


def test_a_torn_read_of_the_source_never_writes_outside_a_target(tmp_path: Path, monkeypatch) -> None:
    """A source whose process swaps a directory for a link between the reads of one sync (no freezer) gives a
    torn listing: ``work/pkg`` read as a link out of the home, ``work/pkg/secret`` as a file below it. The target
    gets the link, and the file is left out: nothing is written through the link."""
    home, target, outside, paths = secret_changed(tmp_path, "agent bytes\n")
    pkg, real = home / "work/pkg", home / "work/pkg.real"
    os.rename(pkg, real)
    os.symlink(outside, pkg)  # the change the walk did not see: work/pkg is now a link (a new inode)
    paths |= {"work/pkg"}
    read = home_delta._Tree.lstat

    def racing(tree: home_delta._Tree, relative: str) -> os.stat_result | None:
        """The source's process, swapping work/pkg just before each read of it or below it."""
        if str(tree.home) == str(home) and relative.startswith("work/pkg"):
            as_dir = relative != "work/pkg"
            if as_dir == os.path.islink(pkg):
                os.unlink(pkg) if as_dir else os.rename(pkg, real)
                os.rename(real, pkg) if as_dir else os.symlink(outside, pkg)
        return read(tree, relative)

    monkeypatch.setattr(home_delta._Tree, "lstat", racing)
    home_delta.sync(home, [target], paths)
    assert os.listdir(outside) == []  # nothing written through the link
    assert os.readlink(target / "work/pkg") == str(outside)  # the link as the source held it when read


def test_a_change_across_more_directories_than_it_keeps_open(tmp_path: Path, monkeypatch) -> None:
    """Directories are kept open up to a bound (a change across thousands must not run out of descriptors): past
    it they are closed and reopened, and every target still ends as the source."""
    monkeypatch.setattr(home_delta._Tree, "MAX_OPEN", 2)
    base = make_base(tmp_path)
    home, targets = tmp_path / "home", [tmp_path / "t0", tmp_path / "t1"]
    primed = copy(base, home)
    for target in targets:
        copy(base, target)
    for i in range(12):
        deep = home / f"work/d{i}/e/f"
        deep.mkdir(parents=True)
        (deep / "g.txt").write_text(f"{i}\n")
    shutil.rmtree(home / "work/pkg/sub")
    found = home_delta.changes(home, primed)
    assert found is not None
    home_delta.sync(home, targets, found.paths)
    for target in targets:
        assert tree(target) == tree(home)


def test_a_tree_deeper_than_python_recurses(tmp_path: Path) -> None:
    """A change 1200 directories deep (a path a sandbox may make) replays like any other."""
    base = make_base(tmp_path)
    home, target = tmp_path / "home", tmp_path / "target"
    primed = copy(base, home)
    copy(base, target)
    deep = "work/" + "/".join(["d"] * 1200)
    try:
        subprocess.run(["mkdir", "-p", deep], cwd=home, check=True)  # (os.makedirs recurses as deep)
        (home / deep / "leaf").write_text("bottom\n")
        found = home_delta.changes(home, primed)
        assert found is not None and f"{deep}/leaf" in found.paths
        home_delta.sync(home, [target], found.paths)
        assert (target / deep / "leaf").read_text() == "bottom\n"
    finally:  # by rm, which goes as deep: pytest's own removal of old temporary directories recurses
        subprocess.run(["rm", "-rf", str(home / "work/d"), str(target / "work/d")], check=True)
