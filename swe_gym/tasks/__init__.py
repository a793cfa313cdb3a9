"""Task records, where they come from, and how a sandbox gets a task's repository."""

from swe_gym.tasks.bundled import load_bundled, repo_archive
from swe_gym.tasks.loader import load_tasks
from swe_gym.tasks.model import EvalRecipe, SWETask
from swe_gym.tasks.provision import agent_spec, provision, task_spec

__all__ = [
    "EvalRecipe",
    "SWETask",
    "agent_spec",
    "load_bundled",
    "load_tasks",
    "provision",
    "repo_archive",
    "task_spec",
]
