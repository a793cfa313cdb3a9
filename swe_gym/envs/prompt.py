"""The first observation: the issue and the rules of the episode."""

from __future__ import annotations

from swe_gym.tasks.model import SWETask

SUBMIT = "submit"
#: mini-swe-agent's convention: a command that exits 0 and whose output starts with this line submits.
SUBMIT_MARKER = "COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"


def is_submission(output: str, exit_code: int | None) -> bool:
    """Whether a command's result submits: it exited 0 and the first line of its output is `SUBMIT_MARKER`.

    This is mini-swe-agent's rule (its environments raise ``Submitted`` only on ``returncode == 0``), and
    the one every swe_gym front end follows, so one action ends an episode the same way in an `SWEEnv`,
    the NeMo RL env and mini-swe-agent. It is also the right rule for an RL env: the submission is the
    agent's decision, and mini-swe-agent's idiom ``echo MARKER && git add -A && git diff --cached`` prints
    the marker before the steps that make the submission; when one of them fails (or the command times
    out) the command did not do what it was meant to, and the episode goes on with the failure shown,
    instead of grading a half-done submission. The plain `SUBMIT` action needs no exit code.
    """
    return exit_code == 0 and output.lstrip().split("\n", 1)[0].strip() == SUBMIT_MARKER


def task_prompt(task: SWETask, *, workdir: str, step_timeout: float, max_steps: int, shell: str = "stateless") -> str:
    where = (
        f"run in one bash session that starts in\n  {workdir} (cd, export and activated virtualenvs carry over)"
        if shell == "persistent"
        else f"run in a fresh shell in {workdir}"
    )
    return (
        f"You are in a sandbox holding the repository {task.repo} at {workdir}.\n"
        "Resolve the issue below by changing the repository's source code.\n\n"
        f"<issue>\n{task.problem_statement.strip()}\n</issue>\n\n"
        "How to act:\n"
        f"- Each action is one bash command, {where}; its combined\n"
        "  stdout and stderr is your next observation. Chain commands with && or ;.\n"
        f"- A command is killed after {step_timeout:g}s; processes it leaves in the background\n"
        "  are stopped when it returns. Nothing reads stdin, so use non-interactive tools\n"
        "  (sed, cat <<'EOF' > file, python3 -c ...), not editors.\n"
        "- Hidden tests grade your change; edits to test files are discarded.\n"
        f"- When you are done, send the action `{SUBMIT}` (or run `echo {SUBMIT_MARKER}`:\n"
        "  a command that prints it as its first line and exits 0 submits).\n"
        f"  You have {max_steps} actions.\n"
    )
