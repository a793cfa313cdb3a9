"""`load_tasks`: task records from the bundled set, a file, a datasets folder, a Hugging Face dataset, or a list."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from swe_gym.errors import TaskError, validation_problems
from swe_gym.tasks import harbor
from swe_gym.tasks.bundled import load_bundled
from swe_gym.tasks.datasets import Row, read_rows
from swe_gym.tasks.families import convert
from swe_gym.tasks.model import SWETask

_HINTS = {("eval",): " (give test_cmd or eval_script)"}

TaskSource = str | Path | Iterable[Mapping[str, Any] | SWETask]


def _validate(record: Any, where: str, dataset: str | None) -> SWETask:
    if isinstance(record, SWETask):
        return record
    if not isinstance(record, Mapping):
        raise TaskError(f"{where}: a task record must be an object, got {type(record).__name__}")
    try:
        return convert(record, dataset=dataset)
    except TaskError as exc:
        raise TaskError(f"{where}: {exc}") from None
    except ValidationError as exc:
        problems = validation_problems(exc, whole="record", hint=lambda loc: _HINTS.get(loc[:1], ""))
        raise TaskError(f"{where}: invalid task record ({problems})") from None


def _row_id(record: Any) -> Any:
    if isinstance(record, SWETask):
        return record.instance_id
    return record.get("instance_id") if isinstance(record, Mapping) else None


def _check_unique(rows: list[Row], label: str) -> None:
    first: dict[str, str] = {}
    for record, where in rows:
        key = _row_id(record)
        if isinstance(key, str):
            if key in first:
                raise TaskError(f"{where}: duplicate instance_id {key!r} in {label} (first at {first[key]})")
            first[key] = where


def _select(rows: list[Row], label: str, instance_ids: Iterable[str] | None, limit: int | slice | None) -> list[Row]:
    """The wanted rows (in source order), then ``limit`` of them."""
    if instance_ids is not None:
        wanted = set(instance_ids)
        missing = sorted(wanted - {_row_id(record) for record, _ in rows})
        if missing:
            raise TaskError(f"unknown instance ids: {', '.join(missing)} (not in {label})")
        rows = [row for row in rows if _row_id(row[0]) in wanted]
    if isinstance(limit, slice):
        return rows[limit]
    if limit is not None:
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 0:
            raise TaskError(f"limit must be a non-negative int or a slice, got {limit!r}")
        return rows[:limit]
    return rows


def load_tasks(
    source: TaskSource = "bundled",
    *,
    split: str = "test",
    instance_ids: Iterable[str] | None = None,
    limit: int | slice | None = None,
) -> list[SWETask]:
    """Tasks from ``"bundled"``, a ``.json``/``.jsonl``/``.parquet`` file, a datasets folder, a Hugging Face
    dataset name (``princeton-nlp/SWE-bench_Verified``, ``SWE-Gym/SWE-Gym``, ``nebius/SWE-rebench``, ...),
    a Harbor task directory or a folder of them (`swe_gym.tasks.harbor`: their images built here, once per
    content), or an iterable of records.

    Each row goes through its dataset family (`swe_gym.tasks.families.convert`), recognised from its
    fields and the dataset's name, so SWE-bench-style rows become tasks with their published images.
    ``split`` picks a Hugging Face split (and a split of a multi-split folder); ``instance_ids`` keeps those
    tasks (unknown ids are an error); ``limit`` keeps the first ``n`` tasks, or a ``slice`` of them, after
    the id filter. Only the kept rows are converted.

    >>> [t.instance_id for t in load_tasks("bundled")][:1]  # doctest: +ELLIPSIS
    ['swe-gym__...']
    """
    dataset: str | None = None
    label = repr(source) if isinstance(source, str | Path) else "the given records"
    if isinstance(source, str) and source == "bundled":
        rows: list[Row] = [(task, f"bundled[{i}]") for i, task in enumerate(load_bundled())]
    elif isinstance(source, str | Path) and harbor.is_harbor_source(source):
        rows = list(harbor.read_tasks(source))
    elif isinstance(source, str | Path):
        rows = read_rows(source, split=split)
        dataset = str(source)
    else:
        rows = [(record, f"task[{i}]") for i, record in enumerate(source)]
    tasks = [_validate(record, where, dataset) for record, where in _select(rows, label, instance_ids, limit)]
    _check_unique(rows, label)
    harbor.build_images(tasks)
    if not tasks:
        raise TaskError(f"no tasks in {label}" + (f" (limit={limit!r})" if limit is not None else ""))
    return tasks
