"""Which files the agent's patch may not change for grading: they go back to base before the tests run.

Which tests run and how they are judged is the task's decision, never the patch's. The set is
decided from what applying the patch actually changed (`changes`), never from its headers, and
holds the files that steer the test run: the task's test files, test code and fixtures, pytest's
configuration wherever pytest would find it, ``conftest.py`` anywhere, ``.gitattributes`` (it
changes what the grader's own git commands write), bytecode (a ``.pyc`` can shadow its source),
and new top-level modules that would shadow the test runner or the standard library.

Packaging metadata (``*.dist-info``, ``*.egg-info``) anywhere in the work tree goes back too: on an import
root it registers entry points (pytest plugins that auto-load) and shadows installed distributions. A new
top-level module is judged against every top-level name the base environment can import (``shadowed``,
read from the sandbox before the patch), not only the runner's own.

Library code that merely lives under a directory called ``test`` or ``testing`` inside a package
(``django/test/``, ``sympy/testing/``, ``numpy/testing/``, ``sphinx/testing/``) is source: gold
fixes there must survive. No file of SWE-bench Lite's 323 gold patches falls in this set (tested).
"""

from __future__ import annotations

import configparser
import re
import sys
import tomllib
from collections.abc import Callable, Collection, Iterable

#: Directory names that hold tests wherever they are.
_TEST_DIRS = {"tests", "__tests__", "spec", "specs"}
#: Directory names that hold tests only at the top of the repository (inside a package they are library code).
_TOP_TEST_DIRS = {"test", "testing"}
_TEST_FILE = re.compile(r"(^test_.*\.py$|.*_tests?\.py$|^tests\.py$|.*\.(test|spec)\.[cm]?[jt]sx?$|.*_test\.go$)")
#: Files that configure pytest by their name alone.
_PYTEST_FILES = {"pytest.ini", ".pytest.ini", "conftest.py"}
#: Files that configure pytest only through one section: file name -> that section's reader.
SECTIONED = {"tox.ini", "setup.cfg", "pyproject.toml"}
#: Modules a test run imports before any test: a new one at the top of the tree would replace it.
_RUNNER_MODULES = {"pytest", "_pytest", "py", "pluggy", "iniconfig", "nose", "sitecustomize", "usercustomize"}
_SHADOWED = _RUNNER_MODULES | set(sys.stdlib_module_names)
#: Where a repository's import roots usually are: its top and a ``src``/``lib`` layout.
_IMPORT_ROOTS = ("", "src/", "lib/")


def is_test_path(path: str) -> bool:
    """A test file, helper or fixture by its place or name (``tests/…``, ``test_*.py``, top-level ``testing/``)."""
    parts = path.split("/")
    dirs = parts[:-1]
    return (
        any(p in _TEST_DIRS for p in dirs)
        or bool(dirs and dirs[0] in _TOP_TEST_DIRS)
        or bool(_TEST_FILE.match(parts[-1]))
    )


def _module_names(path: str) -> set[str]:
    """The top-level module a new entry right at an import root would be (``src/pytest.py`` -> ``pytest``).

    A new package shows up as its added directory (``_pytest``); files added inside an existing
    package create no new top-level module.
    """
    names = set()
    for root in _IMPORT_ROOTS:
        rest = path[len(root) :] if path.startswith(root) else None
        if rest and "/" not in rest:
            names.add(rest.split(".")[0] if rest.endswith((".py", ".pyc", ".pth", ".so")) else rest)
    return names


def _pytest_section(name: str, text: str | None) -> object:
    """pytest's own section of a tox.ini / setup.cfg / pyproject.toml (None if absent); unreadable -> the text."""
    if text is None:
        return None
    try:
        if name == "pyproject.toml":
            tool = tomllib.loads(text).get("tool", {})
            pytest_table = tool.get("pytest") if isinstance(tool, dict) else None
            return pytest_table or None
        parser = configparser.RawConfigParser(strict=False, interpolation=None)
        parser.read_string(text)
        section = "pytest" if name == "tox.ini" else "tool:pytest"
        return dict(parser.items(section)) if parser.has_section(section) else None
    except (configparser.Error, tomllib.TOMLDecodeError, ValueError, RecursionError, MemoryError):
        return text  # what pytest would make of it is unclear: any change counts


def restore_reason(
    path: str,
    *,
    added: bool,
    task_tests: set[str],
    shadowed: Collection[str] = (),
    own: Collection[str] = (),
    test_code: bool = True,
) -> str | None:
    """Why ``path`` (changed by the patch) goes back to base, or None; sectioned configs are decided later.

    ``shadowed``: top-level names importable in the base environment; ``own``: normalised names of the
    project's own distributions, whose metadata the grader's reinstall may rewrite. ``test_code``: test files by
    their place or name go back too (off where the task's tests live apart, and the work tree's may be the
    agent's to write: a Harbor task's).
    """
    name = path.rsplit("/", 1)[-1]
    parts = path.split("/")
    if path in task_tests:
        return "a file of the task's tests"
    if name in _PYTEST_FILES:
        return "test runner configuration"
    if name == ".gitattributes":
        return "git attributes (they change what the grader's git writes)"
    if "__pycache__" in parts or name.endswith((".pyc", ".pyo")):
        return "bytecode (it can shadow its source)"
    if any(part.endswith((".dist-info", ".egg-info")) for part in parts) and not (own and _owned(parts, own)):
        return "packaging metadata (it can register plugins and entry points, and shadow installed distributions)"
    if test_code and is_test_path(path):
        return "test code"
    hit = sorted(_module_names(path) & (_SHADOWED | set(shadowed))) if added else []
    if hit:
        return f"a new top-level module {hit[0]!r} would shadow an installed module (the test runner's or its own)"
    return None


def normalized_name(name: str) -> str:
    """A distribution's name as packaging compares them (``Django`` ``django_foo`` ``django.foo`` alike)."""
    return re.sub(r"[-_.]+", "_", name).lower()


def _owned(parts: list[str], own: Collection[str]) -> bool:
    """The metadata directory in ``parts`` is that of one of the project's own distributions (``own``)."""
    meta = next(part for part in parts if part.endswith((".dist-info", ".egg-info")))
    return normalized_name(meta.rsplit(".", 1)[0].split("-", 1)[0]) in own


def restore_set(
    changed: dict[str, str],
    task_tests: Iterable[str],
    read_both: Callable[[str], tuple[str | None, str | None]] | None = None,
    *,
    shadowed: Collection[str] = (),
    own: Collection[str] = (),
    test_code: bool = True,
) -> dict[str, str]:
    """{path: reason} of the files in ``changed`` ({path: "added"|"modified"|"deleted"}) that go back to base.

    ``read_both(path)`` gives (base text, patched text) of a tox.ini / setup.cfg / pyproject.toml;
    such a file goes back only when pytest's section of it changed (gold fixes edit their other parts).
    """
    tests = set(task_tests)
    found: dict[str, str] = {}
    for path, kind in sorted(changed.items()):
        reason = restore_reason(
            path, added=kind == "added", task_tests=tests, shadowed=shadowed, own=own, test_code=test_code
        )
        if reason is None and path.rsplit("/", 1)[-1] in SECTIONED and read_both is not None:
            name = path.rsplit("/", 1)[-1]
            base, patched = read_both(path)
            if _pytest_section(name, base) != _pytest_section(name, patched):
                reason = "test runner configuration (its pytest section changed)"
        if reason is not None:
            found[path] = reason
    return found


def task_test_files(test_patch_paths: Iterable[str], test_ids: Iterable[str]) -> set[str]:
    """The files of the task's tests: those its test patch touches and those its test ids name (``f.py::t``)."""
    files = set(test_patch_paths)
    files.update(test.split("::", 1)[0] for test in test_ids if "::" in test)
    return files
