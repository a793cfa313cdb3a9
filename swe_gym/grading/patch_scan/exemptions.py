"""The runners' own repositories: a patch there edits the runner legitimately, so its modules are no target and
its runner files may use frames, hooks, exec and report paths as runners do."""

from __future__ import annotations

import re

#: Per runner repository: the modules it owns (no target there) and its runner's files (which may use frames,
#: hooks, exec and report paths as runners do).
RUNNER_REPOS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "pytest-dev/pytest": (
        ("_pytest", "pytest", "py"),
        ("src/_pytest/", "src/pytest/", "_pytest/", "pytest/", "src/py.py"),
    ),
    "django/django": (("django.test",), ("django/test/",)),
    "sympy/sympy": (
        ("sympy.testing", "sympy.utilities.runtests", "sympy.utilities.pytest", "doctest"),
        ("sympy/testing/", "sympy/utilities/runtests.py", "sympy/utilities/pytest.py", "bin/"),
    ),
    "numpy/numpy": (("numpy.testing",), ("numpy/testing/",)),
}
#: The rules a runner's own files are exempt from.
HOME_EXEMPT = frozenset({"runner-patch", "process-hook", "frame-reading", "dynamic-code", "test-write"})


def repo_name(repo: str) -> str:
    """``owner/name``, lower case, from ``owner/name``, ``owner__name`` or a GitHub URL."""
    name = (repo or "").strip().lower().removesuffix(".git").rstrip("/")
    name = re.sub(r"^(?:https?://)?(?:www\.)?github\.com/", "", name)
    if "/" not in name and "__" in name:
        name = name.replace("__", "/", 1)
    return name
