"""The agent's sandbox holds no git object beyond the base commit; the grader still grades.

Three images hold the same small repository at its base with the fix in its future: as loose objects,
packed (one pack with a ``.keep``, a commit-graph, packed refs), and as a partial clone whose promisor
packs hold the fix (which ``git gc`` would keep). On docker the scrub runs once per image and task and
is saved as a prepared image; providers without that capability (apptainer, opensandbox) run it
in every reset, which the wrapper below stands in for.
"""

from __future__ import annotations

import dataclasses
import shutil
from pathlib import Path
from typing import Any

import docker
import gymnasium as gym
import pytest

import swe_gym  # noqa: F401 - registers the env
from swe_gym.sandbox import SandboxSpec, get_provider
from swe_gym.sandbox.loop import run_sync
from swe_gym.tasks import SWETask, provision
from swe_gym.tasks.provision import PREPARED_FROM, PREPARED_REPOSITORY
from tests.conftest import require_docker
from tests.family_images import CalcRepo, git, swebench_image

IMAGES = {
    "loose": "swe-gym-test-history:latest",
    "packed": "swe-gym-test-history-packed:latest",
    "partial": "swe-gym-test-history-partial:latest",
}


def _packed(repo: CalcRepo, dest: Path) -> CalcRepo:
    """The repository with every object in one kept pack, a commit-graph and packed refs."""
    shutil.copytree(repo.path, dest)
    git(dest, "repack", "-a", "-d", "-q")
    git(dest, "pack-refs", "--all")
    git(dest, "commit-graph", "write", "--reachable")
    for pack in (dest / ".git" / "objects" / "pack").glob("*.pack"):
        pack.with_suffix(".keep").write_text("kept\n")
    return dataclasses.replace(repo, path=dest)


def _partial(repo: CalcRepo, dest: Path) -> CalcRepo:
    """A ``--filter=blob:none`` clone that checked out the fix (its blobs in promisor packs), then the base."""
    source = dest.with_name(dest.name + "-source")
    shutil.copytree(repo.path, source)
    git(source, "config", "uploadpack.allowFilter", "true")
    git(dest.parent, "clone", "-q", "--filter=blob:none", "--branch", "fix-branch", f"file://{source}", dest.name)
    git(dest, "checkout", "-q", "-B", "main", repo.base)
    assert list((dest / ".git" / "objects" / "pack").glob("*.promisor"))
    return dataclasses.replace(repo, path=dest)


@pytest.fixture(scope="module")
def images(tmp_path_factory: pytest.TempPathFactory) -> tuple[CalcRepo, dict[str, str]]:
    require_docker()
    root = tmp_path_factory.mktemp("history")
    repo = CalcRepo.create(root / "repo")
    variants = {"loose": repo, "packed": _packed(repo, root / "packed"), "partial": _partial(repo, root / "partial")}
    built = {
        name: swebench_image(IMAGES[name], variant, root / f"context-{name}") for name, variant in variants.items()
    }
    yield repo, built
    _remove_prepared(built.values())


def _remove_prepared(images: Any) -> None:
    """Prepared images of these test images, through the provider's own cleanup."""
    client = docker.from_env()
    provider = get_provider("docker")
    for image in images:
        run_sync(provider.cleanup(labels={PREPARED_FROM: client.images.get(image).id}))


def _task(repo: CalcRepo, image: str, **extra: object) -> SWETask:
    return SWETask(
        instance_id="calc__calc-1",
        repo="example/calc",
        problem_statement="add() subtracts",
        base_commit=repo.base,
        image=image,
        test_cmd="pytest -rA tests/test_calc.py",
        FAIL_TO_PASS=["tests/test_calc.py::test_add"],
        PASS_TO_PASS=["tests/test_calc.py::test_sub"],
        patch=repo.gold_patch,
        test_patch=repo.test_patch,
        **extra,
    )


#: Every object in the store, then every object HEAD, the refs and the index reach (they must be equal).
ALL_OBJECTS = "git cat-file --batch-all-objects --batch-check='%(objectname)' 2>/dev/null | sort"
REACHABLE = "git rev-list --objects --all --indexed-objects --missing=allow-promisor | cut -c1-40 | sort -u"
#: What could keep or point to other objects: object-store files beside the one pack, and packed refs.
STORE_FILES = "cd .git/objects && ls -A | grep -vx -e pack -e info; ls -A info; ls -A pack | sed 's/^pack-[0-9a-f]*//'"


def _assert_only_the_base(run: Any, repo: CalcRepo, *, partial: bool) -> None:
    """Nothing in the agent's repository leads to the fix: no ref, no object, no file of the object store."""
    fix_blob = git(repo.path, "rev-parse", f"{repo.fix}:calc.py")
    assert run("git log --all --format=%H; git tag; git branch -a; git remote; git reflog | wc -l").split() == [
        repo.base,
        "*",
        "main",
        "0",
    ]
    assert run("git fsck --unreachable --dangling --no-reflogs --lost-found 2>&1; ls .git/lost-found 2>&1") == (
        "ls: cannot access '.git/lost-found': No such file or directory\n"
    )
    assert run(ALL_OBJECTS) == run(REACHABLE) != ""
    assert run(STORE_FILES).split() == [".idx", ".pack", *([".promisor"] if partial else [])]
    assert run("cat .git/packed-refs 2>/dev/null | grep -v '^#' | cut -d' ' -f2") in ("", "refs/heads/main\n")
    for sha in (repo.fix, fix_blob):
        for command in (f"git show {sha}", f"git cat-file -p {sha}", f"git grep -n 'a + b' {sha}"):
            out = run(f"{command} 2>&1; echo exit=$?")
            assert "a + b" not in out and not out.endswith("exit=0\n"), (command, out)
    assert run("git status --porcelain") == ""


def _stepper(env: gym.Env) -> Any:
    """A command's output, as the agent would see it from a step."""
    return lambda command: env.step(command)[0]


@pytest.mark.parametrize("variant", ["loose", "packed", "partial"])
def test_default_reset_leaves_no_object_beyond_the_base(images: tuple[CalcRepo, dict[str, str]], variant: str) -> None:
    repo, built = images
    _remove_prepared([built[variant]])
    for reset in ("builds the prepared image", "starts from it"):
        env = gym.make("swe_gym/SWE-v0", tasks=[_task(repo, built[variant])], provider="docker")
        try:
            _, info = env.reset(seed=0)
            container = docker.from_env().containers.get(info["sandbox_id"])
            assert container.attrs["Config"]["Image"].startswith(PREPARED_REPOSITORY) == (reset == "starts from it")
            _assert_only_the_base(_stepper(env), repo, partial=variant == "partial")
            env.step(f"git apply <<'EOF'\n{repo.gold_patch}EOF")
            obs, reward, terminated, *_ = env.step("submit")
            assert terminated and reward == 1.0, obs
        finally:
            env.close()


class _DockerWithoutCommit:
    """Test stand-in: docker without the `ImageCommitter` capability, as apptainer and opensandbox are."""

    name = "docker"

    def __init__(self) -> None:
        self.docker = get_provider("docker")
        self.max_concurrent_creates = self.docker.max_concurrent_creates

    async def create(self, spec: SandboxSpec) -> Any:
        return await self.docker.create(spec)

    async def cleanup(self, **filters: Any) -> list[str]:
        return await self.docker.cleanup(**filters)


@pytest.mark.parametrize("variant", ["packed", "partial"])
def test_providers_that_cannot_commit_scrub_in_every_reset(
    images: tuple[CalcRepo, dict[str, str]], variant: str
) -> None:
    repo, built = images
    sandbox = run_sync(provision(_task(repo, built[variant]), _DockerWithoutCommit(), SandboxSpec(), agent=True))
    try:
        assert not sandbox.spec.image.startswith(PREPARED_REPOSITORY)
        _assert_only_the_base(
            lambda command: run_sync(sandbox.exec(command)).output, repo, partial=variant == "partial"
        )
    finally:
        run_sync(sandbox.close())


def test_the_prepared_image_keeps_the_setup_scripts_files_and_cleanup_removes_it(
    images: tuple[CalcRepo, dict[str, str]],
) -> None:
    repo, built = images
    _remove_prepared([built["packed"]])
    task = _task(repo, built["packed"], setup_script="echo ready > .git/setup-ran")
    for _ in range(2):  # build, then reuse
        env = gym.make("swe_gym/SWE-v0", tasks=[task], provider="docker")
        try:
            env.reset(seed=0)
            assert env.step("cat .git/setup-ran; git log --all --format=%H")[0].split() == ["ready", repo.base]
        finally:
            env.close()
    client = docker.from_env()
    source = client.images.get(built["packed"]).id
    prepared = client.images.list(filters={"label": f"{PREPARED_FROM}={source}"})
    assert len(prepared) == 1 and prepared[0].labels["swe_gym.managed"] == "true"
    assert not any(e.startswith("SWE_GYM_RUNNER=") and len(e) > 15 for e in prepared[0].attrs["Config"]["Env"])
    assert run_sync(get_provider("docker").cleanup(labels={PREPARED_FROM: source}))
    assert not client.images.list(filters={"label": f"{PREPARED_FROM}={source}"})


def test_scrub_can_be_turned_off_and_setup_script_runs_first(images: tuple[CalcRepo, dict[str, str]]) -> None:
    repo, built = images
    task = _task(repo, built["loose"], setup_script="git checkout -q -b task-branch && echo ready > .setup-ran")
    env = gym.make("swe_gym/SWE-v0", tasks=[task], provider="docker", scrub_history=False)
    try:
        env.reset(seed=0)
        assert repo.fix in env.step("git log --all --format=%H")[0]
        assert env.step("git branch --show-current; cat .setup-ran")[0].split() == ["task-branch", "ready"]
    finally:
        env.close()


def test_a_failing_setup_script_masks_the_episode_with_a_clear_reason(images: tuple[CalcRepo, dict[str, str]]) -> None:
    """The task's own setup failing is the environment's failure (the host's rule): masked, never the agent's 0."""
    repo, built = images
    task = _task(repo, built["loose"], setup_script="git checkout no-such-branch")
    env = gym.make("swe_gym/SWE-v0", tasks=[task], provider="docker")
    try:
        _, info = env.reset(seed=0)
        assert info["masked"] and "setup script failed for calc__calc-1" in info["masked_reason"]
        assert "no-such-branch" in info["masked_reason"]
        _, reward, _, truncated, info = env.step("ls")
        assert truncated and reward == 0.0 and info["masked"]
    finally:
        env.close()
