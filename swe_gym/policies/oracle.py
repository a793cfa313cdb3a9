"""`OraclePolicy`: applies the gold patch (a Harbor task: runs its ``solution/solve.sh``), then submits.

This is a *cheating* baseline: it reads each task's gold patch, which an agent
never sees. It exists to prove the pipeline end to end (sandbox, patch
extraction, grading): on a correct setup every task scores reward 1.0.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from swe_gym.envs.prompt import SUBMIT
from swe_gym.errors import ConfigError
from swe_gym.policies.base import PolicyInfo
from swe_gym.tasks import harbor
from swe_gym.tasks.model import SWETask


def heredoc_delimiter(text: str, base: str = "SWE_GYM_PATCH_EOF") -> str:
    """A heredoc delimiter that occurs nowhere in ``text``."""
    delimiter, n = base, 0
    while delimiter in text:
        n += 1
        delimiter = f"{base}_{n}"
    return delimiter


def apply_patch_command(patch: str) -> str:
    """A bash command that feeds ``patch`` verbatim to ``git apply`` through a quoted heredoc."""
    body = patch if patch.endswith("\n") else patch + "\n"
    delimiter = heredoc_delimiter(body)
    return f"git apply --verbose --whitespace=nowarn - <<'{delimiter}'\n{body}{delimiter}\n"


def gold_actions(task: SWETask) -> list[str]:
    """What the oracle does before it submits: apply the gold patch, or run a Harbor task's solution."""
    if task.family == harbor.FAMILY:
        command = harbor.solution_command(task)
        return [command] if command else []
    return [apply_patch_command(task.patch)] if task.patch.strip() else []


class OraclePolicy:
    """Cheating baseline: action 1 applies the task's gold patch (or runs a Harbor task's ``solution/solve.sh``),
    action 2 is ``submit``.

    Args:
        tasks: the tasks the environment may pick from (e.g. ``env.unwrapped.tasks``).
    """

    identity = PolicyInfo(name="oracle")

    def __init__(self, tasks: Sequence[SWETask]) -> None:
        self._gold = {task.instance_id: gold_actions(task) for task in tasks}
        self._pending: list[str] = []

    def reset(self, observation: str, info: dict[str, Any]) -> None:
        instance_id = info.get("instance_id")
        if instance_id not in self._gold:
            raise ConfigError(f"the oracle does not know task {instance_id!r} (it was built for other tasks)")
        self._pending = [*self._gold[instance_id], SUBMIT]

    def act(self, observation: str, info: dict[str, Any]) -> str:
        return self._pending.pop(0) if self._pending else SUBMIT
