"""Prediction files: reading them, the gold patches as predictions, and the patches no grading can use.

A prediction is one row ``{"instance_id", "model_name_or_path", "model_patch"}``. `read_predictions`
reads them from JSONL or JSON and reports bad rows (`UnusablePrediction`, naming where each is) instead of
stopping at them; `reject_patch` says why a patch is no diff at all (too big, binary, no file headers).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, StrictStr, ValidationError

from swe_gym.errors import ConfigError, validation_problems
from swe_gym.grading.patch import MAX_PATCH_BYTES
from swe_gym.jsonl import BadLine, json_document, json_lines
from swe_gym.tasks.model import SWETask

log = logging.getLogger(__name__)


_DIFF_GIT = re.compile(r"^diff --git ", re.MULTILINE)
_OLD_NEW = (re.compile(r"^--- ", re.MULTILINE), re.compile(r"^\+\+\+ ", re.MULTILINE))


class Prediction(BaseModel):
    """One row of a predictions file (swebench's fields; others, such as ``full_output``, are ignored).

    ``model_patch`` may be ``null``, which swebench counts as an empty patch.
    """

    model_config = ConfigDict(extra="ignore", frozen=True)

    instance_id: StrictStr = Field(min_length=1)
    model_name_or_path: StrictStr = Field(min_length=1)
    model_patch: StrictStr | None
    where: str = Field(default="", exclude=True, description="file and line or index it came from")


class UnusablePrediction(BaseModel):
    """A row that is no valid prediction, where it is, and why."""

    where: str
    instance_id: str | None = None
    error: str


def _row_id(row: Any) -> str | None:
    value = row.get("instance_id") if isinstance(row, Mapping) else None
    return value if isinstance(value, str) and value else None


def _validate(row: Any, where: str) -> Prediction | UnusablePrediction:
    if not isinstance(row, Mapping):
        return UnusablePrediction(where=where, error=f"a prediction must be a JSON object, got {type(row).__name__}")
    try:
        return Prediction.model_validate({**row, "where": where})
    except ValidationError as exc:
        text = validation_problems(exc, whole="row").lower()
        return UnusablePrediction(where=where, instance_id=_row_id(row), error=f"invalid prediction ({text})")


def _json_rows(path: Path) -> list[tuple[Any, str]]:
    parsed = json_document(path, escape_bytes=True)
    if isinstance(parsed, BadLine):
        raise ConfigError(f"predictions file {path} is {parsed.reason}; use a list of predictions")
    if isinstance(parsed, dict) and "instance_id" in parsed:
        return [(parsed, f"{path}")]
    if isinstance(parsed, dict):  # keyed by instance_id, as swebench accepts
        return [
            ({"instance_id": key, **row} if isinstance(row, dict) else row, f"{path}[{key!r}]")
            for key, row in parsed.items()
        ]
    if isinstance(parsed, list):
        return [(row, f"{path}[{i}]") for i, row in enumerate(parsed)]
    raise ConfigError(f"predictions file {path} holds a {type(parsed).__name__}; expected a list or an object")


def read_predictions(path: str | Path) -> tuple[list[Prediction], list[UnusablePrediction]]:
    """Predictions from a ``.jsonl`` file (one per line) or a ``.json`` file (a list, or an object keyed
    by instance id); every bad row or line becomes an `UnusablePrediction` naming where it is, and reading
    goes on. Bytes that are not UTF-8 inside a row's strings (a patch of a Latin-1 file, written raw) are
    kept as they are (surrogate escapes), so such a patch is graded byte for byte. Raises `ConfigError` only
    when the file itself cannot be read as predictions.
    """
    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"predictions file {path} does not exist")
    if path.suffix not in (".json", ".jsonl"):
        raise ConfigError(f"predictions file {path} must be .json or .jsonl")
    predictions: list[Prediction] = []
    errors: list[UnusablePrediction] = []
    if path.suffix == ".json":
        rows = _json_rows(path)
    else:
        rows = []
        for number, value in json_lines(path, escape_bytes=True):
            if isinstance(value, BadLine):
                errors.append(UnusablePrediction(where=f"{path}:{number}", error=value.reason))
            else:
                rows.append((value, f"{path}:{number}"))
    for row, where in rows:
        item = _validate(row, where)
        (predictions if isinstance(item, Prediction) else errors).append(item)  # type: ignore[arg-type]
    if errors:
        log.warning(
            "%d invalid prediction rows in %s (first: %s: %s)", len(errors), path, errors[0].where, errors[0].error
        )
    return predictions, errors


def gold_predictions(tasks: Iterable[SWETask]) -> list[Prediction]:
    """The tasks' own gold patches as predictions of the model ``gold`` (a check of the images and tasks)."""
    return [
        Prediction(instance_id=t.instance_id, model_name_or_path="gold", model_patch=t.patch, where="gold")
        for t in tasks
    ]


def reject_patch(patch: str, max_bytes: int = MAX_PATCH_BYTES) -> str | None:
    """Why ``patch`` cannot be graded as a diff at all (None if it can): too big, binary, or no diff."""
    try:
        size = len(patch.encode("utf-8", "surrogateescape"))
    except UnicodeEncodeError:
        return "patch rejected: it holds characters no file can (lone UTF-16 surrogates)"
    if size > max_bytes:
        return f"patch rejected: {size / 1e6:.1f} MB is over the limit of {max_bytes / 1e6:.1f} MB"
    if "\x00" in patch:
        return "patch rejected: it holds NUL bytes (raw binary data; binary files need git's 'GIT binary patch' form)"
    if not _DIFF_GIT.search(patch) and not all(p.search(patch) for p in _OLD_NEW):
        return "patch rejected: not a unified diff (no 'diff --git' or '---'/'+++' file headers)"
    return None
