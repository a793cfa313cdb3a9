"""Reading JSON and JSON Lines files that users hand us: every bad byte or line is named, never a traceback."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class BadLine:
    """A line that is not JSON (or not UTF-8), and why."""

    reason: str


def json_lines(path: Path) -> Iterator[tuple[int, Any | BadLine]]:
    """(line number, its value or a `BadLine`) for each non-blank line of a ``.jsonl`` file."""
    for number, raw in enumerate(path.read_bytes().split(b"\n"), 1):
        if not raw.strip():
            continue
        try:
            yield number, json.loads(raw.decode("utf-8"))
        except UnicodeDecodeError as exc:
            yield number, BadLine(f"not UTF-8 text ({exc.reason} at byte {exc.start})")
        except json.JSONDecodeError as exc:
            yield number, BadLine(f"not valid JSON ({exc.msg}: column {exc.colno})")


def json_document(path: Path) -> Any | BadLine:
    """The value of a whole ``.json`` file, or a `BadLine` saying why it has none."""
    data = path.read_bytes()
    try:
        return json.loads(data.decode("utf-8"))
    except UnicodeDecodeError as exc:
        return BadLine(f"not UTF-8 text ({exc.reason} at byte {exc.start})")
    except json.JSONDecodeError as exc:
        return BadLine(f"not valid JSON ({exc.msg} at line {exc.lineno})")
