"""Patches in and out of a sandbox, and which of their paths are tests.

Extraction diffs the working tree against a snapshot taken at reset (a tree
object written with a private index), so the image's own uncommitted state is
never part of the agent's patch and the agent's commits, new files and deletions
all are; ignored files (build output, caches) are not.
"""

from __future__ import annotations

import re
import shlex

from swe_gym.errors import GradingError
from swe_gym.sandbox import AsyncSandbox

#: Scratch space inside the repository's .git: present on every provider, never in a diff.
SCRATCH = ".git/swe_gym"

_SNAPSHOT = (
    'set -e; mkdir -p {scratch}; idx={scratch}/index; rm -f "$idx"; '
    'if [ -f .git/index ]; then cp .git/index "$idx"; fi; '
    'GIT_INDEX_FILE="$idx" git add -A >/dev/null 2>&1; GIT_INDEX_FILE="$idx" git write-tree; rm -f "$idx"'
)
_DIFF = (
    "set -e; tree=$({snapshot}); "
    'git -c core.quotepath=off diff --binary --no-color --no-ext-diff --no-renames {base} "$tree" > {out}'
)

#: Tried in order until one applies the whole patch; nothing partial is kept.
APPLY_LADDER: tuple[tuple[str, str], ...] = (
    ("git apply", "git apply --verbose --binary {patch}"),
    ("git apply --recount", "git apply --verbose --binary --recount --ignore-whitespace {patch}"),
    ("patch --fuzz=5", "patch --batch --fuzz=5 -p1 --dry-run -i {patch} && patch --batch --fuzz=5 -p1 -i {patch}"),
)

_TEST_DIRS = {"test", "tests", "testing", "__tests__", "spec", "specs"}
_TEST_FILE = re.compile(r"(^test_.*|.*_tests?\.\w+$|^conftest\.py$|.*\.(test|spec)\.\w+$)")
_DIFF_HEADER = re.compile(r"^diff --git a/(.+?) b/(.+)$", re.MULTILINE)


def is_test_path(path: str) -> bool:
    parts = path.split("/")
    return any(p in _TEST_DIRS for p in parts[:-1]) or bool(_TEST_FILE.match(parts[-1]))


def patch_paths(patch: str) -> list[str]:
    """Every path a git diff touches (old and new side)."""
    found: list[str] = []
    for old, new in _DIFF_HEADER.findall(patch):
        for path in (old, new):
            if path not in found:
                found.append(path)
    return found


async def snapshot(sandbox: AsyncSandbox) -> str:
    """Tree id of the workdir as it is now (tracked and untracked, minus ignored files)."""
    result = await sandbox.exec(_SNAPSHOT.format(scratch=SCRATCH), timeout=300)
    tree = result.output.strip().splitlines()[-1] if result.output.strip() else ""
    if result.exit_code != 0 or not re.fullmatch(r"[0-9a-f]{40,64}", tree):
        raise GradingError(
            f"could not snapshot the repository (is {sandbox.workdir} a git checkout?): {result.output[-500:]}"
        )
    return tree


async def extract_patch(sandbox: AsyncSandbox, base_tree: str) -> str:
    """The agent's changes since ``snapshot``, as a binary-safe git diff.

    Raises `GradingError` when the repository no longer allows a diff (e.g. the
    agent deleted .git); a dead sandbox raises `SandboxDiedError`.
    """
    out = f"{SCRATCH}/agent.diff"
    command = _DIFF.format(snapshot=_SNAPSHOT.format(scratch=SCRATCH), base=base_tree, out=out)
    result = await sandbox.exec(command, timeout=300)
    if result.exit_code != 0:
        raise GradingError(f"could not extract the patch: {result.output[-500:]}")
    data = await sandbox.read_file(out)
    return data.decode("utf-8", errors="surrogateescape")


async def apply_patch(sandbox: AsyncSandbox, patch: str, name: str = "agent.patch") -> tuple[str | None, str]:
    """Apply ``patch`` with the first method of `APPLY_LADDER` that takes all of it.

    Returns (method or None, the log of the attempts).
    """
    path = f"{SCRATCH}/{name}"
    await sandbox.write_file(path, patch.encode("utf-8", errors="surrogateescape"))
    attempts = []
    for method, template in APPLY_LADDER:
        result = await sandbox.exec(template.format(patch=shlex.quote(path)), timeout=300)
        attempts.append(f"$ {method} -> exit {result.exit_code}\n{result.output}")
        if result.exit_code == 0:
            return method, "\n".join(attempts)
    return None, "\n".join(attempts)
