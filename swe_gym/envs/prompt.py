"""The first observation: the issue and the rules of the episode."""

from __future__ import annotations

from swe_gym.tasks.model import SWETask

SUBMIT = "submit"
#: mini-swe-agent's convention: a command whose output starts with this line submits.
SUBMIT_MARKER = "COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"


def task_prompt(task: SWETask, *, workdir: str, step_timeout: float, max_steps: int) -> str:
    return (
        f"You are in a sandbox holding the repository {task.repo} at {workdir}.\n"
        "Resolve the issue below by changing the repository's source code.\n\n"
        f"<issue>\n{task.problem_statement.strip()}\n</issue>\n\n"
        "How to act:\n"
        f"- Each action is one bash command, run in a fresh shell in {workdir}; its combined\n"
        "  stdout and stderr is your next observation. Chain commands with && or ;.\n"
        f"- A command is killed after {step_timeout:g}s; processes it leaves in the background\n"
        "  are stopped when it returns. Nothing reads stdin, so use non-interactive tools\n"
        "  (sed, cat <<'EOF' > file, python3 -c ...), not editors.\n"
        "- Hidden tests grade your change; edits to test files are discarded.\n"
        f"- When you are done, send the action `{SUBMIT}` (or run `echo {SUBMIT_MARKER}`).\n"
        f"  You have {max_steps} actions.\n"
    )
