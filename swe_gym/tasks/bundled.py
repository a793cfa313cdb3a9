"""The bundled offline tasks, shipped as package data, and their repositories.

Each ``bundled/<name>/`` folder holds ``task.json``, ``repo/`` (the project at
its base), ``gold.patch`` and ``test.patch``. A repository becomes a git
checkout with one deterministic base commit the first time it is needed.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from functools import lru_cache
from importlib.resources import files
from pathlib import Path

from swe_gym.errors import TaskError
from swe_gym.sandbox.backend import tar_directory
from swe_gym.tasks.model import SWETask

_COMMIT_ENV = {
    "GIT_AUTHOR_NAME": "swe-gym",
    "GIT_AUTHOR_EMAIL": "swe-gym@localhost",
    "GIT_COMMITTER_NAME": "swe-gym",
    "GIT_COMMITTER_EMAIL": "swe-gym@localhost",
    "GIT_AUTHOR_DATE": "2024-01-01T00:00:00+0000",
    "GIT_COMMITTER_DATE": "2024-01-01T00:00:00+0000",
    "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_CONFIG_NOSYSTEM": "1",
}


def bundled_root() -> Path:
    return Path(str(files("swe_gym.tasks").joinpath("bundled")))


def load_bundled() -> list[SWETask]:
    tasks = []
    for folder in sorted(p for p in bundled_root().iterdir() if (p / "task.json").is_file()):
        record = json.loads((folder / "task.json").read_text())
        record["patch"] = (folder / "gold.patch").read_text()
        record["test_patch"] = (folder / "test.patch").read_text()
        record["repo_source"] = folder / "repo"
        tasks.append(SWETask.model_validate(record))
    return tasks


@lru_cache(maxsize=256)
def _archive(source: Path) -> tuple[bytes, str]:
    """Built once per process and directory: resets must not re-read the tree."""
    if shutil.which("git") is None:
        raise TaskError("tasks with a repo_source need git on the host to build their base commit")
    with tempfile.TemporaryDirectory(prefix="swe_gym-repo-") as tmp:
        repo = Path(tmp) / "repo"
        shutil.copytree(source, repo, ignore=shutil.ignore_patterns("__pycache__", "*.pyc", ".pytest_cache"))
        env = {**os.environ, **_COMMIT_ENV}
        for args in (
            ["init", "-q", "-b", "main", "--template="],
            ["add", "-A"],
            ["commit", "-q", "-m", "base"],
            ["repack", "-adq"],
            ["prune-packed"],
        ):
            subprocess.run(["git", *args], cwd=repo, env=env, check=True, capture_output=True)
        head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=repo, env=env, check=True, capture_output=True)
        return tar_directory(repo), head.stdout.decode().strip()


def repo_archive(task: SWETask) -> tuple[bytes, str]:
    """(tar of the checkout with its .git, base commit sha) for a task with ``repo_source``."""
    if task.repo_source is None:
        raise TaskError(f"task {task.instance_id} has no repo_source; its image must hold the repository")
    if not task.repo_source.is_dir():
        raise TaskError(f"task {task.instance_id}: repo_source {task.repo_source} is not a directory")
    return _archive(task.repo_source)
