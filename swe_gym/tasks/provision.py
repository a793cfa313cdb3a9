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
#: The base tree as the only commit: for tasks whose past history holds the answer.
SQUASH_HISTORY = r"""
git rev-parse --git-dir >/dev/null 2>&1 || exit 0
branch=$(git symbolic-ref -q --short HEAD || echo main)
git checkout -q --orphan swe-gym-base
git -c user.name=swe_gym -c user.email=swe_gym@localhost commit -q --no-verify --allow-empty -m "task base"
git branch -q -M "$branch"
"""


async def _run_setup(sandbox: AsyncSandbox, task: SWETask, script: str, what: str) -> None:
    result = await sandbox.exec(script, cwd=task.workdir, timeout=600)
    if not result.ok:
        raise SandboxError(f"{what} failed for {task.instance_id} (exit {result.exit_code}): {result.output[-1500:]}")


async def _hide(sandbox: AsyncSandbox, task: SWETask, scrub_history: bool | str) -> None:
    if task.hidden_paths:
        await _run_setup(sandbox, task, "rm -rf -- " + " ".join(map(shlex.quote, task.hidden_paths)), "hiding tests")
    squash = task.hide_history == "all"
    if (scrub_history or squash) and task.repo_source is None:  # a bundled repository has no history to hide
        script = (SQUASH_HISTORY if squash else "") + SCRUB_HISTORY
        script += PRUNE_OBJECTS if squash or scrub_history == "gc" else ""
        await _run_setup(sandbox, task, f"set -e; cd {shlex.quote(task.workdir)}\n{script}", "scrubbing git history")


async def provision(
    task: SWETask,
    provider: ProviderLike,
    base: SandboxSpec,
    pool: SandboxPool | None = None,
    *,
    agent: bool = False,
    scrub_history: bool | str = True,
) -> AsyncSandbox:
    """A sandbox with the task's repository in its workdir (from ``pool`` when given); closed if setup fails.

    The task's ``setup_script`` runs after the repository is in place. For the ``agent``'s sandbox
    (not the grader's) the task's ``hidden_paths`` are removed and, with ``scrub_history``, the git
    history it must not see: ``True`` the refs to it, ``"gc"`` its objects too (a task that hides
    ``"all"`` its history is squashed to one commit and always collected).
    """
    spec = task_spec(task, base)
    sandbox = await (pool.take(spec) if pool is not None else AsyncSandbox.create(spec, provider))
    try:
        if task.repo_source is not None:
            archive, _ = repo_archive(task)
            await sandbox.upload_tar(archive)
        if task.setup_script:
            await _run_setup(sandbox, task, task.setup_script, "the task's setup script")
        if agent:
            await _hide(sandbox, task, scrub_history)
    except BaseException:
        await sandbox.close()
        raise
    return sandbox
