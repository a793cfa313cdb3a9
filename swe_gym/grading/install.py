"""The eval script's reinstall of the repository: run it only when it can change what the tests import.

SWE-bench's eval scripts reinstall the repository before the tests (the spec's ``install``, e.g.
``python -m pip install -e .``). Grading sandboxes have no network, so pip spends ~8 s in retries
fetching build dependencies and then fails, leaving the image's install in place. That wait is
most of a grade on a small test run, and it changes nothing the tests see:

- pip always runs offline here (``PIP_NO_INDEX``) and builds with the environment's own setuptools
  (``PIP_NO_BUILD_ISOLATION=0``, pip's spelling of ``--no-build-isolation``), so an install that
  can succeed without a network does, at once, and one that cannot fails at once;
- an *editable* install (``-e``/``--editable``, ``setup.py develop``) already serves the work tree's
  files, so after a patch that changes no build input (`build_inputs`) the reinstall is skipped: the
  tests import exactly what they would after it. A non-editable install (``pip install .``) always
  runs, since the installed copy would otherwise be the unpatched one.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

#: Prepended to every eval script: pip never waits on the network the grading sandbox does not have.
OFFLINE_PIP = "export PIP_NO_INDEX=1 PIP_NO_BUILD_ISOLATION=0 PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_INPUT=1"

_EDITABLE = re.compile(r"(?:^|[\s;&|])(?:-e|--editable)(?:[\s=]|$)|\bsetup\.py\s+develop\b")
#: Files a build reads (metadata, entry points, extensions), by name.
_BUILD_FILES = frozenset(
    {
        "setup.py",
        "setup.cfg",
        "pyproject.toml",
        "MANIFEST.in",
        "meson.build",
        "meson_options.txt",
        "meson.options",
        "CMakeLists.txt",
    }
)
#: Sources compiled into extensions, and templates generated into them (numpy's ``.c.src``, ``.h.in``).
_BUILD_SUFFIXES = (
    ".c",
    ".cc",
    ".cpp",
    ".cxx",
    ".h",
    ".hh",
    ".hpp",
    ".hxx",
    ".pyx",
    ".pxd",
    ".pxi",
    ".f",
    ".f90",
    ".f95",
    ".for",
    ".cu",
    ".rs",
    ".src",
    ".in",
    ".pth",
)
#: A new top-level module or package: an editable install's import hook may only know the old ones.
_TOP_LEVEL = re.compile(r"^(?:src/)?[^/]+(?:\.py|/__init__\.py)$")


def is_editable(install: str) -> bool:
    return bool(_EDITABLE.search(install))


def build_inputs(changed: Mapping[str, str]) -> list[str]:
    """The changed paths (``{path: "added" | "modified" | "deleted"}``) a reinstall would read."""
    found = []
    for path, kind in changed.items():
        name = path.rsplit("/", 1)[-1]
        parts = path.split("/")
        if (
            name in _BUILD_FILES
            or (name.startswith("requirements") and name.endswith(".txt"))
            or name.endswith(_BUILD_SUFFIXES)
            or any(part.endswith((".egg-info", ".dist-info")) for part in parts)
            or (kind == "added" and _TOP_LEVEL.match(path))
        ):
            found.append(path)
    return sorted(found)


def plan(script: str, install: str | None, changed: Mapping[str, str]) -> tuple[str, str]:
    """(the eval script to run, what happens to its reinstall and why)."""
    if not install or install not in script.splitlines():
        return script, "none in the eval script"
    if not is_editable(install):
        return script, "ran (offline): the install is not editable"
    inputs = build_inputs(changed)
    if inputs:
        return script, f"ran (offline): the patch changed build inputs ({', '.join(inputs[:5])})"
    why = "editable install, no build input changed"
    lines = [f": swe_gym: reinstall skipped: {why}" if line == install else line for line in script.splitlines()]
    return "\n".join(lines) + "\n", f"skipped: {why}"
