"""The eval script run in the grading sandbox after the agent's patch is applied."""

from __future__ import annotations

import shlex

from swe_gym.grading.patch import SCRATCH
from swe_gym.tasks.model import SWETask

# The same markers as the swebench harness, so its logs and ours read alike.
START_TEST_OUTPUT = ">>>>> Start Test Output"
END_TEST_OUTPUT = ">>>>> End Test Output"
TEST_PATCH_FAILED = ">>>>> swe_gym: test patch failed to apply"


def build_eval_script(task: SWETask, restore: list[str], script: str | None = None) -> str:
    """Restore ``restore`` (test files) to base, then run ``script`` (a whole eval script, e.g. the
    official one) or the task's own: apply the hidden tests, run them between markers."""
    lines = [
        "#!/bin/bash",
        "set -uo pipefail",
        f'cd {shlex.quote(task.workdir)} 2>/dev/null || cd "$(dirname "$0")/../.."',
    ]
    if restore:
        quoted = " ".join(shlex.quote(path) for path in restore)
        lines += [
            f"for f in {quoted}; do",
            '  if git cat-file -e "HEAD:$f" 2>/dev/null; then git checkout -q HEAD -- "$f"; else rm -rf -- "$f"; fi',
            "done",
        ]
    script = script or task.eval.eval_script
    if script:
        lines.append(script)
        return "\n".join(lines) + "\n"
    if task.test_patch.strip():
        lines.append(
            f"git apply --binary {SCRATCH}/test.patch || {{ echo {shlex.quote(TEST_PATCH_FAILED)}; exit 97; }}"
        )
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
