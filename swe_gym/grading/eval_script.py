"""The eval script run in the grading sandbox after the agent's patch is applied."""

from __future__ import annotations

import shlex

from swe_gym.grading.eval_plan import OFFLINE_PIP
from swe_gym.grading.patch import GIT_ENV, SCRATCH
from swe_gym.tasks.model import SWETask

# The same markers as the swebench harness, so its logs and ours read alike.
START_TEST_OUTPUT = ">>>>> Start Test Output"
END_TEST_OUTPUT = ">>>>> End Test Output"
TEST_PATCH_FAILED = ">>>>> swe_gym: test patch failed to apply"


def restore_script(paths: list[str]) -> str:
    """Return ``paths`` to the checked-out base: tracked ones checked out, new ones removed.

    Runs with git's system and global configuration off; the repository's own is the image's
    (the patch cannot reach ``.git``), and ``.gitattributes`` go back first.
    """
    ordered = sorted(paths, key=lambda p: (not p.endswith(".gitattributes"), p))
    quoted = " ".join(shlex.quote(path) for path in ordered)
    return "\n".join(
        [
            f"export {GIT_ENV}",
            f"for f in {quoted}; do",
            '  if git cat-file -e "HEAD:$f" 2>/dev/null; then rm -rf -- "$f"; git checkout -q HEAD -- "$f"; '
            'else rm -rf -- "$f"; fi',
            "done",
            "",
        ]
    )


def build_eval_script(task: SWETask, script: str | None = None, restore: list[str] | None = None) -> str:
    """Run ``script`` (a whole eval script, e.g. the official one) or the task's own: apply the
    hidden tests, run them between markers. ``restore`` (test files) go back to base first."""
    lines = [
        "#!/bin/bash",
        "set -uo pipefail",
        OFFLINE_PIP,
        f'cd {shlex.quote(task.workdir)} 2>/dev/null || cd "$(dirname "$0")/../.."',
    ]
    if restore:
        lines.append(restore_script(restore))
    script = script or task.eval.eval_script
    if script:
        lines.append(script)
        return "\n".join(lines) + "\n"
    if task.test_patch.strip():
        lines += [
            f"if ! {GIT_ENV} git apply --binary {SCRATCH}/test.patch; then",
            f"echo {shlex.quote(TEST_PATCH_FAILED)}",
            "exit 97",
            "fi",
        ]
    lines += [
        f"echo {shlex.quote(START_TEST_OUTPUT)}",
        task.eval.test_cmd or "true",
        f"echo {shlex.quote(END_TEST_OUTPUT)}",
    ]
    return "\n".join(lines) + "\n"


def test_section(log: str) -> str | None:
    """The text between the markers, or None when the tests never started."""
    start = log.find(START_TEST_OUTPUT)
    if start < 0:
        return None
    end = log.find(END_TEST_OUTPUT, start)
    return log[start + len(START_TEST_OUTPUT) : end if end >= 0 else len(log)]
