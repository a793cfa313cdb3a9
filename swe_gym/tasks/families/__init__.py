"""Dataset families: recognise a row's family and convert it to `SWETask` without losing fields.

Each module of this package defines `Family` objects and registers them here;
`detect` tries them by ``priority`` (lower first: the most specific families,
such as pre-built SWE-bench rows, before the general ones), using the row's
fields and, when known, the dataset name it came from.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from swe_gym.errors import TaskError
from swe_gym.tasks.model import SWETask


class Family(Protocol):
    name: str
    priority: int

    def matches(self, row: Mapping[str, Any], dataset: str | None) -> bool:
        """Whether ``row`` (from dataset ``dataset``, when known) is of this family."""
        ...

    def to_task(self, row: Mapping[str, Any]) -> SWETask:
        """The row as a task; unknown fields go to ``metadata``. Raise `TaskError` naming a bad field."""
        ...


FAMILIES: list[Family] = []


def register_family(family: Family) -> None:
    FAMILIES.append(family)
    FAMILIES.sort(key=lambda f: f.priority)


def detect(row: Mapping[str, Any], dataset: str | None = None) -> Family | None:
    """The first registered family that claims ``row``, or None (a plain swe_gym task record)."""
    _load_builtin()
    return next((family for family in FAMILIES if family.matches(row, dataset)), None)


def convert(row: Mapping[str, Any], dataset: str | None = None) -> SWETask:
    """``row`` as a task: through its family's converter, or validated as a swe_gym record."""
    family = detect(row, dataset)
    if family is None:
        return SWETask.model_validate(dict(row))
    return family.to_task(row)


_loaded = False


def _load_builtin() -> None:
    global _loaded
    if _loaded:
        return
    _loaded = True
    import importlib
    import pkgutil

    for info in pkgutil.iter_modules(__path__):
        importlib.import_module(f"{__name__}.{info.name}")


__all__ = ["FAMILIES", "Family", "TaskError", "convert", "detect", "register_family"]
