"""`OraclePolicy`: applies the gold patch, then submits.

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


class OraclePolicy:
    """Cheating baseline: action 1 applies the task's gold patch, action 2 is ``submit``.

    Args:
        tasks: the tasks the environment may pick from (e.g. ``env.unwrapped.tasks``).
    """

    identity = PolicyInfo(name="oracle")

    def __init__(self, tasks: Sequence[SWETask]) -> None:
        self._patches = {task.instance_id: task.patch for task in tasks}
        self._pending: list[str] = []

    def reset(self, observation: str, info: dict[str, Any]) -> None:
        instance_id = info.get("instance_id")
        if instance_id not in self._patches:
            raise ConfigError(f"the oracle does not know task {instance_id!r} (it was built for other tasks)")
        patch = self._patches[instance_id]
        self._pending = [apply_patch_command(patch)] if patch.strip() else []
        self._pending.append(SUBMIT)

    def act(self, observation: str, info: dict[str, Any]) -> str:
        return self._pending.pop(0) if self._pending else SUBMIT
