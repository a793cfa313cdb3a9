"""Start a sandbox that holds a task's repository at its base."""

from __future__ import annotations

import shlex

from swe_gym.errors import SandboxError
from swe_gym.sandbox import AsyncSandbox, SandboxSpec
from swe_gym.sandbox.facade import ProviderLike
from swe_gym.sandbox.pool import SandboxPool
from swe_gym.tasks.bundled import repo_archive
from swe_gym.tasks.model import SWETask


def task_spec(task: SWETask, base: SandboxSpec) -> SandboxSpec:
    """``base`` (limits, env, timeouts) specialised to ``task``: its image, workdir, labels."""
    return base.model_copy(
        update={
            "image": task.image or base.image,
            "workdir": task.workdir,
            "labels": {**base.labels, "task_id": task.instance_id},
        }
    )


#: Leaves only what the agent may know: no remotes, no refs but the checked-out branch, no tags,
#: stash or reflog, so ``git log --all`` cannot show commits after the base (the fix).
SCRUB_HISTORY = r"""
git rev-parse --git-dir >/dev/null 2>&1 || exit 0
current=$(git symbolic-ref -q HEAD || true)
for remote in $(git remote); do git remote remove "$remote"; done
git for-each-ref --format='%(refname)' | while read -r ref; do
  [ "$ref" = "$current" ] || git update-ref -d "$ref"
done
git reflog expire --expire=now --all
rm -rf .git/logs .git/ORIG_HEAD .git/FETCH_HEAD .git/packed-refs.lock
"""
#: Also drops the now unreachable objects (slow on big repositories: seconds).
PRUNE_OBJECTS = "git gc --quiet --prune=now\n"


async def _run_setup(sandbox: AsyncSandbox, task: SWETask, script: str, what: str) -> None:
    result = await sandbox.exec(script, cwd=task.workdir, timeout=600)
    if not result.ok:
        raise SandboxError(f"{what} failed for {task.instance_id} (exit {result.exit_code}): {result.output[-1500:]}")


async def provision(
    task: SWETask,
    provider: ProviderLike,
    base: SandboxSpec,
    pool: SandboxPool | None = None,
    *,
    scrub_history: bool | str = False,
) -> AsyncSandbox:
    """A sandbox with the task's repository in its workdir (from ``pool`` when given); closed if setup fails.

    The task's ``setup_script`` runs after the repository is in place. ``scrub_history`` (the agent's
    sandbox) removes git history the agent must not see: ``True`` the refs, ``"gc"`` the objects too.
    """
    spec = task_spec(task, base)
    sandbox = await (pool.take(spec) if pool is not None else AsyncSandbox.create(spec, provider))
    try:
        if task.repo_source is not None:
            archive, _ = repo_archive(task)
            await sandbox.upload_tar(archive)
        if task.setup_script:
            await _run_setup(sandbox, task, task.setup_script, "the task's setup script")
        if scrub_history and task.repo_source is None:  # a bundled repository has no future to hide
            script = SCRUB_HISTORY + (PRUNE_OBJECTS if scrub_history == "gc" else "")
            script = f"set -e; cd {shlex.quote(task.workdir)}\n{script}"
            await _run_setup(sandbox, task, script, "scrubbing git history")
    except BaseException:
        await sandbox.close()
        raise
    return sandbox
