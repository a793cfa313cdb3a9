"""Start a sandbox that holds a task's repository at its base."""

from __future__ import annotations

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


async def provision(
    task: SWETask, provider: ProviderLike, base: SandboxSpec, pool: SandboxPool | None = None
) -> AsyncSandbox:
    """A sandbox with the task's repository in its workdir (from ``pool`` when given); closed if setup fails."""
    spec = task_spec(task, base)
    sandbox = await (pool.take(spec) if pool is not None else AsyncSandbox.create(spec, provider))
    try:
        if task.repo_source is not None:
            archive, _ = repo_archive(task)
            await sandbox.upload_tar(archive)
    except BaseException:
        await sandbox.close()
        raise
    return sandbox
