"""Reading JSON and JSON Lines files that users hand us: every bad byte or line is named, never a traceback."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from swe_gym.errors import ConfigError, validation_problems

Record = TypeVar("Record", bound=BaseModel)


@dataclass(frozen=True)
class BadLine:
    """A line that is not JSON (or not UTF-8), and why."""

    reason: str


def _escaped(data: bytes, bad: BadLine) -> Any | BadLine:
    """``data``'s value with the bytes that are not UTF-8 kept as surrogate escapes in its strings, else ``bad``."""
    try:
        return json.loads(data.decode("utf-8", "surrogateescape"))
    except json.JSONDecodeError:
        return bad


def json_lines(path: Path, *, escape_bytes: bool = False) -> Iterator[tuple[int, Any | BadLine]]:
    """(line number, its value or a `BadLine`) for each non-blank line of a ``.jsonl`` file.

    ``escape_bytes``: a line that is not UTF-8 but is JSON once its bad bytes are read as surrogate escapes
    (``surrogateescape``) is kept, its strings holding those bytes (a patch of a Latin-1 file, written raw).
    """
    for number, raw in enumerate(path.read_bytes().split(b"\n"), 1):
        if not raw.strip():
            continue
        try:
            yield number, json.loads(raw.decode("utf-8"))
        except UnicodeDecodeError as exc:
            bad = BadLine(f"not UTF-8 text ({exc.reason} at byte {exc.start})")
            yield number, _escaped(raw, bad) if escape_bytes else bad
        except json.JSONDecodeError as exc:
            yield number, BadLine(f"not valid JSON ({exc.msg}: column {exc.colno})")


def json_document(path: Path, *, escape_bytes: bool = False) -> Any | BadLine:
    """The value of a whole ``.json`` file, or a `BadLine` saying why it has none (``escape_bytes``: as
    `json_lines`)."""
    data = path.read_bytes()
    try:
        return json.loads(data.decode("utf-8"))
    except UnicodeDecodeError as exc:
        bad = BadLine(f"not UTF-8 text ({exc.reason} at byte {exc.start})")
        return _escaped(data, bad) if escape_bytes else bad
    except json.JSONDecodeError as exc:
        return BadLine(f"not valid JSON ({exc.msg} at line {exc.lineno})")


def read_records(path: Path, model: type[Record], *, what: str) -> list[tuple[int, Record]]:
    """(line number, record) for each non-blank line of a ``.jsonl`` file, parsed as ``model``.

    Any line that is not one (not UTF-8, not JSON, not ``model``) is a `ConfigError` saying
    ``PATH:LINE: not WHAT (PROBLEM)``, as is a file that cannot be read.
    """
    try:
        lines = list(json_lines(path))
    except OSError as exc:
        raise ConfigError(f"cannot read {path}: {exc.strerror or exc}") from None
    records = []
    for number, value in lines:
        if isinstance(value, BadLine):
            raise ConfigError(f"{path}:{number}: not {what} ({value.reason})")
        try:
            records.append((number, model.model_validate(value)))
        except ValidationError as exc:
            raise ConfigError(f"{path}:{number}: not {what} ({validation_problems(exc, whole='line')})") from None
    return records
