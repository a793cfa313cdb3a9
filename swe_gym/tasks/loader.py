"""`load_tasks`: task records from a file, a list, or the bundled set."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from swe_gym.errors import TaskError
from swe_gym.tasks.bundled import load_bundled
from swe_gym.tasks.model import SWETask

_HINTS = {("eval",): " (give test_cmd or eval_script)"}

TaskSource = str | Path | Iterable[Mapping[str, Any] | SWETask]


def _validate(record: Any, where: str) -> SWETask:
    if isinstance(record, SWETask):
        return record
    if not isinstance(record, Mapping):
        raise TaskError(f"{where}: a task record must be an object, got {type(record).__name__}")
    try:
        return SWETask.model_validate(dict(record))
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in err['loc']) or 'record'}: {err['msg']}{_HINTS.get(err['loc'][:1], '')}"
            for err in exc.errors()
        )
        raise TaskError(f"{where}: invalid task record ({problems})") from None


def _read_file(path: Path) -> list[tuple[Any, str]]:
    if not path.is_file():
        raise TaskError(f"task file {path} does not exist")
    text = path.read_text()
    if path.suffix == ".jsonl":
        rows = []
        for number, line in enumerate(text.splitlines(), 1):
            if line.strip():
                try:
                    rows.append((json.loads(line), f"{path}:{number}"))
                except json.JSONDecodeError as exc:
                    raise TaskError(f"{path}:{number}: not valid JSON ({exc.msg})") from None
        return rows
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise TaskError(f"{path}: not valid JSON ({exc.msg} at line {exc.lineno})") from None
    data = data.get("tasks", data) if isinstance(data, dict) else data
    records = data if isinstance(data, list) else [data]
    return [(record, f"{path}[{i}]") for i, record in enumerate(records)]


def load_tasks(source: TaskSource = "bundled", *, instance_ids: Iterable[str] | None = None) -> list[SWETask]:
    """Tasks from ``"bundled"``, a ``.json``/``.jsonl`` file, or an iterable of records.

    >>> [t.instance_id for t in load_tasks("bundled")][:1]  # doctest: +ELLIPSIS
    ['swe-gym__...']
    """
    if isinstance(source, str) and source == "bundled":
        tasks = load_bundled()
    elif isinstance(source, str | Path):
        tasks = [_validate(record, where) for record, where in _read_file(Path(source))]
    else:
        tasks = [_validate(record, f"task[{i}]") for i, record in enumerate(source)]
    seen: set[str] = set()
    for task in tasks:
        if task.instance_id in seen:
            raise TaskError(f"duplicate instance_id {task.instance_id!r} in {source!r}")
        seen.add(task.instance_id)
    if instance_ids is not None:
        wanted = list(instance_ids)
        missing = sorted(set(wanted) - seen)
        if missing:
            raise TaskError(f"unknown instance ids: {', '.join(missing)}")
        tasks = [t for t in tasks if t.instance_id in set(wanted)]
    if not tasks:
        raise TaskError(f"no tasks in {source!r}")
    return tasks
