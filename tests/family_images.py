"""Local Docker images that stand in for each dataset family's published images, built from the test image.

Each holds a small real git repository where the family's images keep theirs
(``/testbed``), with a base commit holding a bug, and *later* history (the fix
on a branch, a tag, a remote-tracking ref) that must never reach the agent. The
images are tagged with the family's published image name for the row, so the
providers find them exactly as they would find the real ones. SWE-bench images
carry conda; ours carries a no-op ``conda`` and ``activate`` (a test shim, named
as such inside the image) so the official eval script's activation lines run.
"""

from __future__ import annotations

import hashlib
import io
import os
import subprocess
import tarfile
from dataclasses import dataclass, field
from pathlib import Path

from swe_gym.grading import grade
from swe_gym.sandbox import SandboxSpec
from swe_gym.tasks import SWETask
from tests.conftest import TEST_IMAGE

BUGGY = "def add(a, b):\n    return a - b\n\n\ndef sub(a, b):\n    return a - b\n"
FIXED = "def add(a, b):\n    return a + b\n\n\ndef sub(a, b):\n    return a - b\n"
TESTS = "from calc import add, sub\n\n\ndef test_sub():\n    assert sub(5, 3) == 2\n"
TESTS_WITH_ADD = TESTS + "\n\ndef test_add():\n    assert add(2, 3) == 5\n"
BREAKS_SUB = "def add(a, b):\n    return a + b\n\n\ndef sub(a, b):\n    return a + b\n"

CONDA_SHIM = "#!/bin/sh\n# swe_gym TEST SHIM standing in for conda: activation is a no-op here.\nexit 0\n"
#: Sourced by the eval script, so no `exit`.
ACTIVATE_SHIM = "# swe_gym TEST SHIM standing in for conda's activate: a no-op here.\n:\n"

_GIT_ENV = {
    "GIT_AUTHOR_NAME": "swe_gym tests",
    "GIT_AUTHOR_EMAIL": "tests@swe-gym.invalid",
    "GIT_COMMITTER_NAME": "swe_gym tests",
    "GIT_COMMITTER_EMAIL": "tests@swe-gym.invalid",
    "GIT_AUTHOR_DATE": "2024-01-01T00:00:00Z",
    "GIT_COMMITTER_DATE": "2024-01-01T00:00:00Z",
}


def git(repo: Path, *args: str) -> str:
    env = {**os.environ, **_GIT_ENV, "GIT_CONFIG_GLOBAL": "/dev/null", "GIT_CONFIG_NOSYSTEM": "1"}
    return subprocess.run(["git", *args], cwd=repo, env=env, check=True, capture_output=True, text=True).stdout.strip()


def diff(repo: Path, old: str, new: str, *paths: str) -> str:
    return git(repo, "diff", old, new, "--", *paths) + "\n"


@dataclass
class CalcRepo:
    """The repository every family image holds, and the patches between its commits."""

    path: Path
    base: str = ""
    fix: str = ""
    gold_patch: str = ""
    test_patch: str = ""
    breaks_p2p_patch: str = ""
    extra_branches: dict[str, str] = field(default_factory=dict)

    @classmethod
    def create(cls, path: Path) -> CalcRepo:
        path.mkdir(parents=True)
        git(path, "init", "-q", "--template=", "-b", "main")
        (path / "calc.py").write_text(BUGGY)
        (path / "conftest.py").write_text("# puts the repository root on sys.path for `pytest`\n")
        (path / "tests").mkdir()
        (path / "tests" / "test_calc.py").write_text(TESTS)
        git(path, "add", "-A")
        git(path, "commit", "-q", "-m", "base: add() is wrong")
        repo = cls(path, base=git(path, "rev-parse", "HEAD"))
        # The future the agent must not see: the fix, its tests, a tag and a remote-tracking ref.
        (path / "calc.py").write_text(FIXED)
        (path / "tests" / "test_calc.py").write_text(TESTS_WITH_ADD)
        git(path, "commit", "-q", "-am", "fix add() (the answer)")
        repo.fix = git(path, "rev-parse", "HEAD")
        git(path, "tag", "v1.1")
        git(path, "update-ref", "refs/remotes/origin/main", repo.fix)
        repo.gold_patch = diff(path, repo.base, repo.fix, "calc.py")
        repo.test_patch = diff(path, repo.base, repo.fix, "tests")
        (path / "calc.py").write_text(BREAKS_SUB)
        repo.breaks_p2p_patch = git(path, "diff", repo.base, "--", "calc.py") + "\n"
        git(path, "checkout", "-q", "-f", repo.base)
        git(path, "branch", "-q", "-f", "main", repo.base)
        git(path, "checkout", "-q", "main")
        git(path, "branch", "-q", "fix-branch", repo.fix)
        return repo


def build_image(tag: str, context: Path, dockerfile_lines: list[str]) -> str:
    """``docker build`` of ``context`` on top of the test image; skipped when ``tag`` already has this content."""
    import docker

    dockerfile = "\n".join([f"FROM {TEST_IMAGE}", *dockerfile_lines]) + "\n"
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as archive:
        archive.add(context, arcname=".")
        data = dockerfile.encode()
        info = tarfile.TarInfo("Dockerfile")
        info.size = len(data)
        archive.addfile(info, io.BytesIO(data))
    digest = hashlib.sha256(buffer.getvalue()).hexdigest()[:16]
    client = docker.from_env()
    try:
        if client.images.get(tag).labels.get("swe_gym.test_context") == digest:
            return tag
    except docker.errors.ImageNotFound:
        pass
    buffer.seek(0)
    client.images.build(fileobj=buffer, custom_context=True, tag=tag, rm=True, labels={"swe_gym.test_context": digest})
    return tag


def swebench_image(tag: str, repo: CalcRepo, context: Path) -> str:
    """A SWE-bench-like image: the repository at /testbed, conda activation shimmed."""
    context.mkdir(parents=True, exist_ok=True)
    subprocess.run(["cp", "-a", str(repo.path), str(context / "testbed")], check=True)
    (context / "conda").write_text(CONDA_SHIM)
    (context / "activate").write_text(ACTIVATE_SHIM)
    lines = [
        "COPY testbed /testbed",
        "COPY activate /opt/miniconda3/bin/activate",
        "COPY conda /usr/local/bin/conda",
        "RUN chmod 755 /opt/miniconda3/bin/activate /usr/local/bin/conda",
    ]
    return build_image(tag, context, lines)


def assert_four_verdicts(task: SWETask, breaks_p2p_patch: str) -> None:
    """Gold resolves; empty, a PASS_TO_PASS-breaking and a non-diff patch do not — each with its reason."""
    spec = SandboxSpec()
    gold = grade(task, task.patch, provider="docker", spec=spec)
    assert not gold.masked, gold.masked_reason
    assert gold.resolved, gold.log_tail
    assert gold.fail_to_pass.success == task.fail_to_pass and gold.pass_to_pass.success == task.pass_to_pass
    empty = grade(task, "", provider="docker", spec=spec)
    assert not empty.masked and empty.empty_patch and not empty.resolved
    assert empty.fail_to_pass.failure == task.fail_to_pass
    broken = grade(task, breaks_p2p_patch, provider="docker", spec=spec)
    assert not broken.masked and not broken.resolved
    assert broken.fail_to_pass.success == task.fail_to_pass and broken.pass_to_pass.failure == task.pass_to_pass
    garbage = grade(task, "this is not a diff\n", provider="docker", spec=spec)
    assert not garbage.masked and not garbage.resolved and not garbage.patch_applied
    assert garbage.log_tail  # the apply ladder's reason
