import pytest

from globmatch import PathSpec, filter_paths, match, normalize_path


@pytest.mark.parametrize(
    "path, pattern",
    [
        ("src/pkg/test_io.py", "src/**/test_*.py"),
        ("src/a/b/c/test_x.py", "src/**/test_*.py"),
        ("pkg/mod.py", "**/*.py"),
        ("docs/a/b.md", "docs/**"),
        ("build/x/y", "build/**/y"),
    ],
    ids=["one-dir", "three-dirs", "leading", "trailing", "middle"],
)
def test_double_star_matches(path, pattern):
    assert match(path, pattern)


@pytest.mark.parametrize(
    "path, pattern",
    [
        ("srcx/pkg/test_io.py", "src/**/test_*.py"),
        ("src/pkg/io.py", "src/**/test_*.py"),
        ("pkg/mod.pyc", "**/*.py"),
        ("documents/a.md", "docs/**"),
    ],
    ids=["prefix", "name", "suffix", "dir-prefix"],
)
def test_double_star_non_matches(path, pattern):
    assert not match(path, pattern)


def test_case_insensitive():
    assert match("SRC/Main.PY", "src/*.py", case_sensitive=False)
    assert not match("SRC/Main.PY", "src/*.py")


def test_path_normalisation():
    assert normalize_path(".\\src\\\\a.py") == "src/a.py"
    assert match(".\\src\\a.py", "src/*.py")
    assert match("/src/a.py", "/src/*.py")


def test_filter_paths():
    paths = ["src/a.py", "src/b.txt", "build/src/c.py", "tests/t.py"]
    assert filter_paths(paths, include=["*/*.py"], exclude=["tests/*"]) == ["src/a.py"]
    assert filter_paths(paths, exclude=["build/**"]) == ["src/a.py", "src/b.txt", "tests/t.py"]


def test_pathspec_without_include_selects_all():
    spec = PathSpec(exclude=["*.txt", "*/*.txt"])
    assert spec.filter(["a.py", "b.txt", "d/c.txt"]) == ["a.py"]
