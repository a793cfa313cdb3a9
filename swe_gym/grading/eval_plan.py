"""What an eval script runs besides the tests: only what can change what the tests see.

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
  runs, since the installed copy would otherwise be the unpatched one;
- ``locale-gen`` (Django's eval commands run it every time, ~2 s) runs only when a locale
  ``/etc/locale.gen`` enables is not built yet: otherwise it would rebuild the same archive.
  The patch cannot reach either file (they are outside the repository).
- ``git status``, ``git show`` and ``git diff <base>`` before the tests only print the tree's state into the
  log, outside the test output the safe grader reads (``git status`` alone takes ~0.5 s on Django's tree): it
  leaves them out (`without_state_commands`), and with them every git run between the patch and the tests,
  which a patched repository's git configuration could otherwise turn into code (the grader refuses such
  patches anyway). ``harness="official"`` keeps them: swebench reads the whole log, ``git diff``'s included.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping

#: Prepended to every eval script: pip never waits on the network the grading sandbox does not have.
OFFLINE_PIP = "export PIP_NO_INDEX=1 PIP_NO_BUILD_ISOLATION=0 PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_INPUT=1"
#: Prepended to eval scripts that call ``locale-gen``: a function of that name runs the real one only
#: when some enabled locale is missing (names compared as ``locale -a`` spells them: en_us.utf8).
LOCALE_GEN_GUARD = r"""locale-gen() {
  local built want
  built=$(locale -a 2>/dev/null | tr '[:upper:]' '[:lower:]' | tr -d '-')
  for want in $(grep -v '^#' /etc/locale.gen 2>/dev/null | awk '{print $1}' \
                | tr '[:upper:]' '[:lower:]' | tr -d '-'); do
    grep -qxF "$want" <<<"$built" || { command locale-gen "$@"; return; }
  done
  echo "swe_gym: locale-gen skipped: every locale /etc/locale.gen enables is built"
}"""

#: The eval script's commands that only print the repository's state (``git status``, ``git show``,
#: ``git -c core.fileMode=false diff <base>``); a line that is exactly one of them.
_STATE_ONLY = re.compile(r"git (?:status|show|(?:-c \S+ )*diff [0-9a-f]{7,40})")
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
    if re.search(r"(?:^|[\s;&|])locale-gen\b", script):
        head, _, rest = script.partition("\n")
        script = f"{head}\n{LOCALE_GEN_GUARD}\n{rest}" if head.startswith("#!") else f"{LOCALE_GEN_GUARD}\n{script}"
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


def without_state_commands(script: str) -> str:
    """``script`` with its ``git status`` / ``git show`` / ``git diff <base>`` lines left out (as ``:`` comments).

    Only for the safe grader, which reads the sealed test output alone: swebench's ``get_logs_eval`` scans the
    whole log, where ``git diff`` prints the patch, so ``harness="official"`` keeps them to keep its verdicts.
    """
    lines = [
        f": swe_gym: left out, it prints state only: {shlex.quote(line)}" if _STATE_ONLY.fullmatch(line) else line
        for line in script.splitlines()
    ]
    return "\n".join(lines) + ("\n" if script.endswith("\n") else "")


#: Where an eval script's set-up ends: it touches the test files or starts the tests.
_PREAMBLE_ENDS = ("git apply", "git checkout", ">>>>> Start Test Output", "test.patch")


def preamble(script: str, until: str | None = None) -> str:
    """The set-up lines of ``script`` before ``until`` (or its first test marker): environment activation, ``cd``,
    exports; without its ``git`` commands, which only print state. It ends where the test files are touched."""
    lines = []
    for line in script.splitlines():
        if (until is not None and line == until) or any(s in line for s in _PREAMBLE_ENDS):
            break
        if not line.lstrip().startswith("git "):
            lines.append(line)
    return "\n".join(lines) + "\n"


def split_install(script: str, install: str) -> tuple[str, str]:
    """(the set-up lines and the reinstall, run on their own before the restore; the rest of ``script``)."""
    head = preamble(script, until=install)
    rest = [": swe_gym: reinstall ran before the restore" if line == install else line for line in script.splitlines()]
    return f"{head}{install}\n", "\n".join(rest) + "\n"
