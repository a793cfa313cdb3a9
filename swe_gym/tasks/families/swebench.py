"""SWE-bench-format families: SWE-bench (full, Lite, Verified), SWE-Gym, SWE-bench Multilingual, SWE-rebench.

Their rows share SWE-bench's schema, as the datasets' cards publish it::

    repo, instance_id, base_commit, patch, test_patch, problem_statement, hints_text,
    created_at, version, FAIL_TO_PASS, PASS_TO_PASS, environment_setup_commit
    (+ difficulty in SWE-bench Verified; FAIL_TO_PASS/PASS_TO_PASS are JSON strings)

SWE-Gym (``SWE-Gym/SWE-Gym``, split ``train``) has the same fields but no
``environment_setup_commit``, and lists for the test fields. SWE-rebench
(``nebius/SWE-rebench``) has lists and adds ``meta``, ``install_config``,
``requirements``, ``environment``, ``FAIL_TO_FAIL``, ``PASS_TO_FAIL``, ``license_name``
and its image, ``docker_image``. Pre-built rows (SWE-bench 5.x style, e.g.
``SWE-bench/SWE-bench_Multilingual``) carry their image (``image``/``image_name``),
``eval_script``, ``log_parser`` (and ``eval_type``).

Every task is graded by the official ``swebench`` code (``toolkit="swebench"``) in
its published image, whose repository sits at ``/testbed``. A row's own image name
(``image``, ``image_name``, ``docker_image``) wins over the family's naming; the
providers then apply the ``SWE_GYM_IMAGE_REWRITE`` rules (`swe_gym.sandbox.images`).
Fields that are not `SWETask` fields are kept in ``metadata``.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Any

from swe_gym.errors import TaskError
from swe_gym.tasks.families import register_family
from swe_gym.tasks.model import EvalRecipe, SWETask

# The fields every SWE-bench-format dataset publishes (its dataset card's features).
SWEBENCH_FIELDS = (
    "repo",
    "instance_id",
    "base_commit",
    "patch",
    "test_patch",
    "problem_statement",
    "hints_text",
    "created_at",
    "version",
    "FAIL_TO_PASS",
    "PASS_TO_PASS",
    "environment_setup_commit",
)
# Row keys naming the task's image, most specific first.
IMAGE_KEYS = ("image", "image_name", "docker_image")
# Keys of swe_gym's own records: a row with them is not a dataset row.
_NATIVE_KEYS = ("test_cmd", "eval", "repo_source", "setup_script")
_SIGNATURE = ("instance_id", "base_commit", "test_patch", "FAIL_TO_PASS", "PASS_TO_PASS")
_CONSUMED = {
    "instance_id",
    "repo",
    "problem_statement",
    "base_commit",
    "patch",
    "test_patch",
    "FAIL_TO_PASS",
    "PASS_TO_PASS",
    "image",
    "eval_script",
    "log_parser",
}
EVAL_TIMEOUT_S = 1800.0


def swebench_image(instance_id: str) -> str:
    """SWE-bench's published instance image (SWE-bench full/Lite/Verified and Multilingual).

    >>> swebench_image("django__django-11099")
    'swebench/sweb.eval.x86_64.django_1776_django-11099:latest'
    """
    return f"swebench/sweb.eval.x86_64.{instance_id.replace('__', '_1776_')}:latest".lower()


def swe_gym_image(instance_id: str) -> str:
    """SWE-Gym's published instance image (Docker Hub namespace ``xingyaoww``, ``__`` written ``_s_``).

    >>> swe_gym_image("getmoto__moto-7365")
    'xingyaoww/sweb.eval.x86_64.getmoto_s_moto-7365:latest'
    """
    return f"xingyaoww/sweb.eval.x86_64.{instance_id.replace('__', '_s_')}:latest".lower()


def swe_rebench_image(instance_id: str) -> str:
    """SWE-rebench's image naming, used only when a row lacks its ``docker_image``.

    >>> swe_rebench_image("encode__starlette-1147")
    'swerebench/sweb.eval.x86_64.encode_1776_starlette-1147:latest'
    """
    return f"swerebench/sweb.eval.x86_64.{instance_id.replace('__', '_1776_')}:latest".lower()


def dataset_key(dataset: str | None) -> str:
    """The last part of a dataset name or path, lowercased: ``SWE-Gym/SWE-Gym`` -> ``swe-gym``."""
    if not dataset:
        return ""
    return PurePosixPath(str(dataset).replace("\\", "/").rstrip("/")).name.lower()


def is_swebench_row(row: Mapping[str, Any]) -> bool:
    """A row in SWE-bench's format (not a swe_gym record)."""
    return all(k in row for k in _SIGNATURE) and not any(k in row for k in _NATIVE_KEYS)


@dataclass(frozen=True)
class SWEBenchFamily:
    """One SWE-bench-format dataset family: how it is recognised and which images it publishes.

    ``names`` are substrings of the dataset's name (its last part, lowercased) that
    together identify the family; ``fields`` are row keys that identify a SWE-bench-format
    row of it without a name (``any_row``: every SWE-bench-format row is of it).
    """

    name: str
    priority: int
    image_for: Callable[[str], str]
    names: tuple[str, ...] = ()
    fields: tuple[str, ...] = ()
    exclude_names: tuple[str, ...] = ()
    any_row: bool = False

    def matches(self, row: Mapping[str, Any], dataset: str | None) -> bool:
        key = dataset_key(dataset)
        if any(n in key for n in self.exclude_names):
            return False
        if key and self.names and all(n in key for n in self.names):
            return not any(k in row for k in _NATIVE_KEYS)
        return is_swebench_row(row) and (self.any_row or any(k in row for k in self.fields))

    def to_task(self, row: Mapping[str, Any]) -> SWETask:
        return swebench_task(row, family=self.name, image_for=self.image_for)


def swebench_task(row: Mapping[str, Any], *, family: str, image_for: Callable[[str], str]) -> SWETask:
    """A SWE-bench-format row as a task of ``family``; its image is the row's own, else ``image_for(id)``."""
    instance_id = _text(row, "instance_id", None)
    image = next((row[k] for k in IMAGE_KEYS if row.get(k)), None)
    if image is not None and not isinstance(image, str):
        raise TaskError(f"{family} row {instance_id!r}: image name must be a string, got {type(image).__name__}")
    return SWETask(
        instance_id=instance_id,
        family=family,
        repo=_text(row, "repo", instance_id),
        problem_statement=_text(row, "problem_statement", instance_id),
        base_commit=_optional_text(row, "base_commit", instance_id),
        image=image or image_for(instance_id),
        workdir="/testbed",
        eval=EvalRecipe(
            toolkit="swebench",
            eval_script=_optional_text(row, "eval_script", instance_id),
            log_parser=_optional_text(row, "log_parser", instance_id),
            timeout_s=EVAL_TIMEOUT_S,
        ),
        FAIL_TO_PASS=_test_list(row, "FAIL_TO_PASS", instance_id),
        PASS_TO_PASS=_test_list(row, "PASS_TO_PASS", instance_id),
        patch=_optional_text(row, "patch", instance_id) or "",
        test_patch=_optional_text(row, "test_patch", instance_id) or "",
        metadata={k: v for k, v in row.items() if k not in _CONSUMED},
    )


def _where(instance_id: str | None) -> str:
    return f"row {instance_id!r}" if instance_id else "row"


def _text(row: Mapping[str, Any], field: str, instance_id: str | None) -> str:
    value = row.get(field)
    if not isinstance(value, str) or not value.strip():
        got = "missing" if field not in row else f"got {type(value).__name__} {value!r:.40}"
        raise TaskError(f"{_where(instance_id)}: field {field!r} must be a non-empty string ({got})")
    return value


def _optional_text(row: Mapping[str, Any], field: str, instance_id: str | None) -> str | None:
    value = row.get(field)
    if value is not None and not isinstance(value, str):
        raise TaskError(f"{_where(instance_id)}: field {field!r} must be a string, got {type(value).__name__}")
    return value or None


def _test_list(row: Mapping[str, Any], field: str, instance_id: str) -> list[str]:
    """A list of test names, given as a list or (SWE-bench) as a JSON string of one."""
    value = row.get(field)
    if value is None:
        return []
    if isinstance(value, str):
        try:
            value = json.loads(value) if value.strip() else []
        except json.JSONDecodeError:
            raise TaskError(f"{_where(instance_id)}: field {field!r} is not a JSON list ({value!r:.60})") from None
    if not isinstance(value, list | tuple) or not all(isinstance(t, str) for t in value):
        raise TaskError(f"{_where(instance_id)}: field {field!r} must be a list of test names, got {value!r:.60}")
    return list(value)


# More specific families first; swe-smith and r2e-gym use priorities below 30.
SWE_REBENCH = SWEBenchFamily(
    "swe-rebench", 30, swe_rebench_image, names=("swe-rebench",), fields=("install_config", "docker_image")
)
SWE_GYM = SWEBenchFamily("swe-gym", 32, swe_gym_image, names=("swe-gym",))
SWEBENCH_MULTILINGUAL = SWEBenchFamily("swebench-multilingual", 34, swebench_image, names=("swe-bench", "multilingual"))
SWEBENCH_PREBUILT = SWEBenchFamily(
    "swebench",
    40,
    swebench_image,
    fields=("eval_script", "log_parser", "image_name", "image"),
    exclude_names=("swe-smith", "r2e-gym"),
)
SWEBENCH = SWEBenchFamily(
    "swebench",
    50,
    swebench_image,
    names=("swe-bench",),
    any_row=True,
    exclude_names=("swe-smith", "r2e-gym"),
)

for _family in (SWE_REBENCH, SWE_GYM, SWEBENCH_MULTILINGUAL, SWEBENCH_PREBUILT, SWEBENCH):
    register_family(_family)

__all__ = [
    "IMAGE_KEYS",
    "SWEBENCH",
    "SWEBENCH_FIELDS",
    "SWEBENCH_MULTILINGUAL",
    "SWEBENCH_PREBUILT",
    "SWE_GYM",
    "SWE_REBENCH",
    "SWEBenchFamily",
    "dataset_key",
    "is_swebench_row",
    "swe_gym_image",
    "swe_rebench_image",
    "swebench_image",
    "swebench_task",
]
