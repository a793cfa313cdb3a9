"""Start a sandbox that holds a task's repository at its base."""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import hashlib
import logging
import shlex
import tempfile
from collections.abc import AsyncIterator
from pathlib import Path

from swe_gym.errors import SandboxError
from swe_gym.sandbox import AsyncSandbox, ImageCommitter, SandboxSpec, get_provider
from swe_gym.sandbox.facade import ProviderLike
from swe_gym.sandbox.pool import SandboxPool
from swe_gym.tasks.bundled import repo_archive
from swe_gym.tasks.model import SWETask

log = logging.getLogger(__name__)


def task_spec(task: SWETask, base: SandboxSpec) -> SandboxSpec:
    """``base`` (limits, env, timeouts) specialised to ``task``: its image, workdir, labels."""
    return base.model_copy(
        update={
            "image": task.image or base.image,
            "workdir": task.workdir,
            "labels": {**base.labels, "task_id": task.instance_id},
            "resources": base.resources.model_copy(update=task.resources.model_dump(exclude_unset=True))
            if task.resources is not None
            else base.resources,
        }
    )


#: Leaves only what the agent may know: the checked-out branch (or detached HEAD) at the base and the
#: objects reachable from it or the index. Refs alone are not enough: the future's objects would stay in
#: packs (``git fsck --lost-found`` finds them), and a partial clone keeps its promisor packs whole even
#: through ``git gc``. So one new pack holds exactly what HEAD and the index reach, and every other object
#: store file goes: packs (``.keep`` and ``.promisor`` included), loose objects, alternates, commit-graph,
#: multi-pack-index. A partial clone stays one (its never-fetched blobs stay missing, now marked as
#: promised by a remote that is gone), and ``.git/shallow`` keeps only commits still present.
SCRUB_HISTORY = r"""
git rev-parse --git-dir >/dev/null 2>&1 || exit 0
gitdir=$(git rev-parse --absolute-git-dir)
current=$(git symbolic-ref -q HEAD || true)
missing=
if [ -n "$(git config extensions.partialClone)$(git config --get-regexp '^remote\..*\.promisor$')" ] ||
  ls "$gitdir"/objects/pack/*.promisor >/dev/null 2>&1; then
  missing=--missing=allow-promisor
  git config core.repositoryformatversion 1
  git config extensions.partialClone origin
fi
for remote in $(git remote); do git remote remove "$remote"; done
git for-each-ref --format='delete %(refname)' | { grep -vxF "delete $current" || true; } | git update-ref --stdin
cd "$gitdir"
rm -rf logs lost-found rr-cache worktrees rebase-merge rebase-apply sequencer swe-gym-pack packed-refs.lock \
  ORIG_HEAD FETCH_HEAD MERGE_HEAD MERGE_MSG MERGE_MODE CHERRY_PICK_HEAD REVERT_HEAD AUTO_MERGE BISECT_* \
  COMMIT_EDITMSG SQUASH_MSG
mkdir swe-gym-pack
name=$(git pack-objects -q --all --indexed-objects --delta-base-offset $missing swe-gym-pack/pack </dev/null)
find objects -mindepth 1 -maxdepth 1 ! -name pack ! -name info -exec rm -rf {} +
rm -rf objects/pack/* objects/info/*
for ext in pack idx; do mv "swe-gym-pack/pack-$name.$ext" "objects/pack/pack-$name.$ext"; done
[ -z "$missing" ] || : >"objects/pack/pack-$name.promisor"
rmdir swe-gym-pack
if [ -f shallow ]; then
  git cat-file --batch-check='%(objectname) %(objecttype)' <shallow | awk '$2 == "commit" {print $1}' >shallow.new
  mv shallow.new shallow
  [ -s shallow ] || rm shallow
fi
"""
#: The base tree as the only commit: for tasks whose past history holds the answer.
SQUASH_HISTORY = r"""
git rev-parse --git-dir >/dev/null 2>&1 || exit 0
branch=$(git symbolic-ref -q --short HEAD || echo main)
git checkout -q --orphan swe-gym-base
git -c user.name=swe_gym -c user.email=swe_gym@localhost commit -q --no-verify --allow-empty -m "task base"
git branch -q -M "$branch"
"""
#: Prepared images are tagged ``swe-gym-prepared:<digest of source image id and recipe>``.
PREPARED_REPOSITORY = "swe-gym-prepared"
PREPARED_FROM = "swe_gym.prepared_from"
#: A prepared image's label: the tree id of its work tree (`snapshot`), so a reset from it need not take one.
BASE_TREE = "swe_gym.base_tree"
#: Host lock files, so concurrent resets (threads or processes) build each prepared image once.
LOCK_DIR = Path(tempfile.gettempdir()) / "swe_gym-prepared"


async def _run_setup(sandbox: AsyncSandbox, task: SWETask, script: str, what: str) -> None:
    result = await sandbox.exec(script, cwd=task.workdir, timeout=600)
    if not result.ok:
        raise SandboxError(f"{what} failed for {task.instance_id} (exit {result.exit_code}): {result.output[-1500:]}")


def _history_script(task: SWETask, scrub_history: bool | str) -> str | None:
    """Bash that hides the history from the agent (None: nothing to hide; ``"gc"`` is the same as True)."""
    squash = task.hide_history == "all"
    if not (scrub_history or squash) or task.repo_source is not None:  # a bundled repository has no history
        return None
    return f"set -e; cd {shlex.quote(task.workdir)}\n" + (SQUASH_HISTORY if squash else "") + SCRUB_HISTORY


async def _prepare(sandbox: AsyncSandbox, task: SWETask, history: str | None, *, agent: bool) -> None:
    """The task's setup script, then for the ``agent`` its hidden paths and ``history`` go."""
    if task.repo_source is not None:
        archive, _ = repo_archive(task)
        await sandbox.upload_tar(archive)
    if task.setup_script:
        await _run_setup(sandbox, task, task.setup_script, "the task's setup script")
    if agent and task.hidden_paths:
        await _run_setup(sandbox, task, "rm -rf -- " + " ".join(map(shlex.quote, task.hidden_paths)), "hiding tests")
    if agent and history is not None:
        await _run_setup(sandbox, task, history, "scrubbing git history")


def _worth_preparing(task: SWETask, history: str | None, provider: object) -> bool:
    """Whether the agent's sandboxes of ``task`` should start from a prepared image: always where there is history
    to scrub; also for any other preparation (the repository's upload, the setup script, hiding tests) where the
    provider's images cost less than that (`ImageCommitter.prepares_every_task`: local's, a copy of a few files)."""
    if not isinstance(provider, ImageCommitter):
        return False
    if history is not None:
        return True
    return provider.prepares_every_task and bool(task.repo_source or task.setup_script or task.hidden_paths)


def _prepared_tag(task: SWETask, source_id: str, history: str | None) -> str:
    repository = repo_archive(task)[1] if task.repo_source is not None else None
    recipe = [source_id, task.base_commit, repository, task.workdir, task.setup_script, task.hidden_paths, history]
    recipe.append("snapshot in the image")  # images made before their base tree was labelled are not reused
    return f"{PREPARED_REPOSITORY}:{hashlib.sha256(repr(recipe).encode()).hexdigest()[:32]}"


async def _prepared_image(
    provider: ImageCommitter, spec: SandboxSpec, task: SWETask, history: str | None
) -> tuple[str, str]:
    """(source image id, prepared image tag) for the task; empty when the source image is not there."""
    source = await provider.image_info(spec.image or "")
    return (source.id, _prepared_tag(task, source.id, history)) if source is not None else ("", "")


async def _built(provider: ImageCommitter, tag: str, source_id: str) -> bool:
    found = await provider.image_info(tag)
    return found is not None and found.labels.get(PREPARED_FROM) == source_id


@contextlib.asynccontextmanager
async def _build_lock(tag: str) -> AsyncIterator[None]:
    LOCK_DIR.mkdir(parents=True, exist_ok=True)
    with open(LOCK_DIR / (tag.replace(":", "-").replace("/", "-") + ".lock"), "w") as lock:
        await asyncio.to_thread(fcntl.flock, lock, fcntl.LOCK_EX)
        yield  # closing the file releases the lock


async def _start(spec: SandboxSpec, provider: ProviderLike, pool: SandboxPool | None) -> AsyncSandbox:
    return await (pool.take(spec) if pool is not None else AsyncSandbox.create(spec, provider))


async def _from_prepared(
    task: SWETask, spec: SandboxSpec, provider: ImageCommitter, pool: SandboxPool | None, history: str | None
) -> AsyncSandbox | None:
    """The agent's sandbox from the prepared image, built first if need be (None: the source image is absent)."""
    from swe_gym.grading.patch import snapshot  # (swe_gym.grading needs this module first)

    source_id, tag = await _prepared_image(provider, spec, task, history)
    if not tag:
        return None  # e.g. an image still to be pulled: the plain path pulls it
    if not await _built(provider, tag, source_id):
        async with _build_lock(tag):
            if not await _built(provider, tag, source_id):
                sandbox = await _start(spec, provider, pool)
                try:
                    await _prepare(sandbox, task, history, agent=True)
                    tree = await snapshot(sandbox)  # its objects and private repository go into the image too
                    labels = {PREPARED_FROM: source_id, BASE_TREE: tree, "task_id": task.instance_id}
                except BaseException:
                    await sandbox.close()
                    raise
                try:
                    await provider.commit(sandbox.backend, tag, labels)
                except SandboxError as exc:  # prepared all the same: this reset goes on, the next prepares again
                    log.warning("could not save %s for %s (%s); each reset prepares it", tag, task.instance_id, exc)
                    return sandbox
                except BaseException:
                    await sandbox.close()
                    raise
                log.info("prepared %s for %s: its git history is scrubbed once, not per reset", tag, task.instance_id)
                return sandbox  # already in the state every later sandbox of the image starts in
    return await _start(spec.model_copy(update={"image": tag}), provider, pool)


async def prepared_tree(sandbox: AsyncSandbox, provider: ProviderLike) -> str | None:
    """The base tree of the prepared image ``sandbox`` started from, where nothing has run in it since (a reset's
    sandbox, fresh or from the pool): the tree `snapshot` would take, labelled on the image when it was made."""
    resolved = get_provider(provider)
    image = sandbox.spec.image
    if not image or not image.startswith(f"{PREPARED_REPOSITORY}:") or not isinstance(resolved, ImageCommitter):
        return None
    info = await resolved.image_info(image)
    return info.labels.get(BASE_TREE) if info is not None and PREPARED_FROM in info.labels else None


async def agent_spec(
    task: SWETask, base: SandboxSpec, provider: ProviderLike, scrub_history: bool | str = True
) -> SandboxSpec:
    """The spec the agent's sandbox of ``task`` starts from now: its prepared image's once that exists.

    What a warm pool should hold for the task (the first reset builds the prepared image from a
    sandbox of the task's own image, so until then that one).
    """
    spec = task_spec(task, base)
    history = _history_script(task, scrub_history)
    resolved = get_provider(provider)
    if not _worth_preparing(task, history, resolved):
        return spec
    assert isinstance(resolved, ImageCommitter)
    source_id, tag = await _prepared_image(resolved, spec, task, history)
    return spec.model_copy(update={"image": tag}) if tag and await _built(resolved, tag, source_id) else spec


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
    (not the grader's) the task's ``hidden_paths`` are removed and, with ``scrub_history`` (``True``;
    ``"gc"`` is the same), the git history it must not see: every ref, and every object not reachable
    from the base (a task that hides ``"all"`` its history is first squashed to one commit). That costs
    about a second on a big repository, so a provider that can commit images (`ImageCommitter`, e.g.
    docker) does it once per image and task: the result is saved as a prepared image, labelled ours,
    that later resets start from directly (the setup script's effects on files included). Local prepares
    every task so (its images are saved homes): the upload goes too, and forks into the warm pool copy only
    what the episode changed.
    """
    spec = task_spec(task, base)
    history = _history_script(task, scrub_history) if agent else None
    resolved = get_provider(provider)
    if agent and _worth_preparing(task, history, resolved):
        assert isinstance(resolved, ImageCommitter)
        prepared = await _from_prepared(task, spec, resolved, pool, history)
        if prepared is not None:
            return prepared
    sandbox = await _start(spec, resolved, pool)
    try:
        await _prepare(sandbox, task, history, agent=agent)
    except BaseException:
        await sandbox.close()
        raise
    return sandbox
