"""Harbor-format task directories as swe_gym tasks (``gym.make("swe_gym/SWE-v0", tasks="path/to/harbor-tasks")``).

A Harbor task is a directory: ``task.toml`` (settings), ``instruction.md`` (what the agent reads), ``environment/``
(a ``Dockerfile`` and its build context, unless ``[environment].docker_image`` names a built image), ``tests/``
(``test.sh``, which writes the reward to ``/logs/verifier/reward.txt`` or ``reward.json``) and optionally
``solution/`` (``solve.sh``, what the oracle runs). A source is one such directory or a folder of them.

The image is built with the Docker engine from ``environment/``, tagged by the digest of the directory's files
(``swe-gym-harbor:<digest>``), so an unchanged task builds once; a base image that is not on the engine is a clear
error, never a pull, unless pulls are allowed (``SWE_GYM_PULL=missing``). The apptainer provider converts the built
image as it converts any local one. ``tests/`` and ``solution/`` never enter the agent's sandbox (they are not in
the build context, and ``/tests``, ``/solution`` and ``/logs`` are removed at reset if the image has them); grading
runs the verifier in a fresh sandbox (`swe_gym.grading.harbor_verifier`).
"""

from __future__ import annotations

import base64
import hashlib
import io
import os
import re
import shlex
import tarfile
import tomllib
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from swe_gym.errors import TaskError, validation_problems
from swe_gym.sandbox.spec import Resources
from swe_gym.settings import settings
from swe_gym.tasks.model import EvalRecipe, SWETask

FAMILY = "harbor"
IMAGE_REPOSITORY = "swe-gym-harbor"
CONFIG = "task.toml"
#: Where Harbor puts the verifier's files, the oracle's and the logs: never the agent's to see or pre-fill.
HIDDEN = ["/tests", "/solution", "/logs"]


class _Section(BaseModel):
    model_config = ConfigDict(extra="ignore")


class _Environment(_Section):
    docker_image: str | None = None
    workdir: str | None = None
    build_timeout_sec: float = Field(default=600.0, gt=0)
    cpus: float | None = Field(default=None, gt=0)
    memory_mb: int | None = Field(default=None, gt=0)
    env: dict[str, str] = Field(default_factory=dict)


class _Agent(_Section):
    timeout_sec: float | None = Field(default=None, gt=0)


class _Verifier(_Section):
    timeout_sec: float = Field(default=600.0, gt=0)
    env: dict[str, str] = Field(default_factory=dict)
    user: str | int | None = None


class _Solution(_Section):
    env: dict[str, str] = Field(default_factory=dict)


class _Package(_Section):
    name: str | None = None


class HarborConfig(_Section):
    """The parts of ``task.toml`` swe_gym reads (the rest, metadata included, is kept in the task's metadata)."""

    task: _Package | None = None
    environment: _Environment = Field(default_factory=_Environment)
    agent: _Agent = Field(default_factory=_Agent)
    verifier: _Verifier = Field(default_factory=_Verifier)
    solution: _Solution = Field(default_factory=_Solution)
    steps: list[Any] | None = None
    artifacts: list[Any] = Field(default_factory=list)
    metadata: dict[str, Any] = Field(default_factory=dict)


def is_harbor_source(source: str | Path) -> bool:
    """A Harbor task directory, or a folder holding at least one."""
    path = Path(source)
    return path.is_dir() and ((path / CONFIG).is_file() or any(path.glob(f"*/{CONFIG}")))


def task_dirs(source: str | Path) -> list[Path]:
    path = Path(source)
    if (path / CONFIG).is_file():
        return [path]
    return sorted(child.parent for child in path.glob(f"*/{CONFIG}"))


def read_config(task_dir: Path) -> tuple[HarborConfig, dict[str, Any]]:
    where = task_dir / CONFIG
    try:
        raw = tomllib.loads(where.read_text())
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise TaskError(f"{where}: cannot read it as TOML: {exc}") from None
    try:
        config = HarborConfig.model_validate(raw)
    except ValidationError as exc:
        raise TaskError(f"{where}: {validation_problems(exc, whole='task.toml')}") from None
    if config.steps:
        raise TaskError(f"{where}: multi-step Harbor tasks ([[steps]]) are not supported; give one task per step")
    return config, raw


def _instance_id(task_dir: Path, config: HarborConfig) -> str:
    """The id a task exported by swe_gym had (its metadata keeps it), else its Harbor name, else its directory's."""
    exported = config.metadata.get("swe_gym_instance_id")
    if isinstance(exported, str) and exported:
        return exported
    name = config.task.name if config.task and config.task.name else task_dir.resolve().name
    return name.replace("/", "__")


def context_digest(directory: Path) -> str:
    """The digest of a build context: every file's path, mode bits and bytes, and every symlink's target."""
    digest = hashlib.sha256()
    for root, dirs, files in os.walk(directory):
        dirs.sort()
        for name in sorted(files) + [d for d in dirs if os.path.islink(os.path.join(root, d))]:
            path = os.path.join(root, name)
            relative = os.path.relpath(path, directory)
            info = os.lstat(path)
            digest.update(f"{relative}\0{info.st_mode & 0o777777}\0".encode())
            if os.path.islink(path):
                digest.update(os.readlink(path).encode())
            else:
                with open(path, "rb") as handle:
                    for chunk in iter(lambda: handle.read(1 << 20), b""):
                        digest.update(chunk)
            digest.update(b"\0")
    return digest.hexdigest()[:32]


def to_task(task_dir: Path) -> SWETask:
    """One Harbor task directory as a `SWETask` (its image named, not built: `build_images` builds it)."""
    config, raw = read_config(task_dir)
    where = task_dir / CONFIG
    instruction = task_dir / "instruction.md"
    tests = task_dir / "tests"
    if not instruction.is_file():
        raise TaskError(f"{task_dir}: a Harbor task needs instruction.md")
    if not (tests / "test.sh").is_file():
        raise TaskError(f"{task_dir}: a Harbor task needs tests/test.sh (Windows .bat verifiers are not supported)")
    environment = config.environment
    dockerfile = task_dir / "environment" / "Dockerfile"
    if environment.docker_image:
        image, build = environment.docker_image, None
    elif dockerfile.is_file():
        image, build = f"{IMAGE_REPOSITORY}:{context_digest(task_dir / 'environment')}", str(dockerfile.parent)
    else:
        raise TaskError(f"{where}: give [environment].docker_image or an environment/Dockerfile")
    solution = task_dir / "solution" / "solve.sh"
    limits = {"cpus": environment.cpus, "memory_mb": environment.memory_mb}
    resources = Resources(**{name: value for name, value in limits.items() if value is not None})
    return SWETask(
        instance_id=_instance_id(task_dir, config),
        family=FAMILY,
        repo=config.task.name if config.task and config.task.name else task_dir.name,
        problem_statement=instruction.read_text(errors="replace").strip() or f"(empty instruction.md in {task_dir})",
        image=image,
        workdir=environment.workdir or dockerfile_workdir(dockerfile) or "/app",
        eval=EvalRecipe(toolkit="harbor", timeout_s=config.verifier.timeout_sec),
        hidden_paths=list(HIDDEN),
        hide_history="future",
        resources=resources,
        metadata={
            "harbor": {
                "task_dir": str(task_dir.resolve()),
                "build_context": build,
                "build_timeout_s": environment.build_timeout_sec,
                "tests_dir": str(tests.resolve()),
                "solution": str(solution.resolve()) if solution.is_file() else None,
                "solution_env": config.solution.env,
                "verifier_env": config.verifier.env,
                "verifier_user": None if config.verifier.user is None else str(config.verifier.user),
                "environment_env": environment.env,
                "agent_timeout_s": config.agent.timeout_sec,
                "artifacts": artifact_paths(config.artifacts, where),
            },
            "harbor_config": raw,
        },
    )


#: Harbor's conventional directory for what the agent publishes: always carried to the verifier.
ARTIFACTS_DIR = "/logs/artifacts"


def artifact_paths(entries: list[Any], where: Path) -> list[str]:
    """The absolute paths ``artifacts`` names (a string, or a table's ``source``), Harbor's own directory first."""
    paths = [ARTIFACTS_DIR]
    for entry in entries:
        source = entry.get("source") if isinstance(entry, dict) else entry
        if not isinstance(source, str) or not source.startswith("/") or ".." in source.split("/"):
            raise TaskError(f"{where}: an artifact must name an absolute path without '..', got {entry!r}")
        normal = "/" + "/".join(part for part in source.split("/") if part)
        if normal != "/" and normal not in paths:
            paths.append(normal)
    return paths


_WORKDIR = re.compile(r"^\s*WORKDIR\s+(\S+)\s*$", re.IGNORECASE | re.MULTILINE)


def dockerfile_workdir(dockerfile: Path) -> str | None:
    """The last absolute ``WORKDIR`` of the Dockerfile (its final stage's, as the container starts in it)."""
    if not dockerfile.is_file():
        return None
    found = [w.strip("\"'") for w in _WORKDIR.findall(dockerfile.read_text(errors="replace"))]
    absolute = [w for w in found if w.startswith("/") and "$" not in w]
    return absolute[-1] if absolute else None


def read_tasks(source: str | Path) -> list[tuple[SWETask, str]]:
    """Each Harbor task of ``source`` as (task, where), in directory order."""
    return [(to_task(task_dir), str(task_dir)) for task_dir in task_dirs(source)]


_FROM = re.compile(r"^\s*FROM\s+(?:--platform=\S+\s+)?(\S+)(?:\s+AS\s+(\S+))?\s*$", re.IGNORECASE | re.MULTILINE)


def base_images(dockerfile: Path) -> list[str]:
    """The images the Dockerfile builds FROM (not its own stages, not ``scratch``)."""
    stages: set[str] = set()
    bases: list[str] = []
    for image, stage in _FROM.findall(dockerfile.read_text(errors="replace")):
        if image.lower() not in stages and image != "scratch" and image not in bases:
            bases.append(image)
        if stage:
            stages.add(stage.lower())
    return bases


def build_images(tasks: list[SWETask], *, pull: bool | None = None) -> None:
    """Build each Harbor task's image from its ``environment/`` where that tag is not on the engine yet; a base
    image not on the engine is pulled only with ``pull`` (default: ``SWE_GYM_PULL=missing``)."""
    if pull is None:
        pull = settings().pull == "missing"
    contexts = {
        task.image: task.metadata[FAMILY] for task in tasks if task.family == FAMILY and task.metadata.get(FAMILY)
    }
    todo = {image: meta for image, meta in contexts.items() if meta.get("build_context") and image}
    if not todo:
        return
    import docker
    import docker.errors

    try:
        client = docker.from_env()
        client.ping()
    except docker.errors.DockerException as exc:
        raise TaskError(f"Harbor tasks build their images with the Docker engine; it is not reachable: {exc}") from None
    for image, meta in todo.items():
        try:
            client.images.get(image)
            continue
        except docker.errors.ImageNotFound:
            pass
        context = Path(meta["build_context"])
        for base in base_images(context / "Dockerfile"):
            if "$" in base:
                continue  # an ARG: the build says what it resolves to
            try:
                client.images.get(base)
            except docker.errors.ImageNotFound:
                if not pull:
                    raise TaskError(
                        f"{context / 'Dockerfile'}: its base image {base} is not on the Docker engine, and swe_gym "
                        f"does not pull without leave: `docker pull {base}`, or set SWE_GYM_PULL=missing"
                    ) from None
        try:
            client.images.build(
                path=str(context), tag=image, pull=pull, rm=True, forcerm=True, timeout=meta["build_timeout_s"],
                labels={"swe_gym.harbor_task": meta["task_dir"]},
            )  # fmt: skip
        except (docker.errors.BuildError, docker.errors.APIError) as exc:
            raise TaskError(f"{context}: the image did not build: {exc}") from None


def solution_command(task: SWETask) -> str | None:
    """A bash command that unpacks the task's ``solution/`` at ``/solution`` and runs ``solve.sh`` in the work
    tree with ``[solution].env`` (what Harbor's oracle agent does); None for a task without one."""
    meta = task.metadata.get(FAMILY) or {}
    if not meta.get("solution"):
        return None
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        archive.add(Path(meta["solution"]).parent, arcname=".")
    payload = base64.encodebytes(buffer.getvalue()).decode()
    exports = "".join(f"export {name}={shlex.quote(value)}; " for name, value in meta.get("solution_env", {}).items())
    return (
        "rm -rf /solution && mkdir -p /solution && base64 -d <<'SWE_GYM_SOLUTION' | tar -xzf - -C /solution\n"
        f"{payload}SWE_GYM_SOLUTION\n"
        f"cd {shlex.quote(task.workdir)} && {exports}bash /solution/solve.sh"
    )
