"""The fenced code blocks of the manual (README.md and docs/), as the doc tests run them.

Fence languages say what a block is:

- ``python`` and ``bash`` blocks are runnable: the doc tests run each one, on its own, in a
  fresh directory, and fail when it exits non-zero or outlives its timeout.
- ``console`` (shell commands shown, not run: provisioning, cluster jobs, the suite itself),
  ``text``, ``yaml``, ``toml``, ``json`` and ``pycon`` blocks are shown only.

Any other language, or none, is an error, so a new block is always one or the other.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
RUNNABLE = frozenset({"python", "bash"})
SHOWN = frozenset({"console", "text", "yaml", "toml", "json", "pycon"})

_OPEN = re.compile(r"^(?P<indent>[ \t]*)(?P<fence>`{3,}|~{3,})[ \t]*(?P<lang>[^\s`{]*)(?P<rest>[^`]*)$")


@dataclass(frozen=True)
class Block:
    path: Path
    line: int  # 1-based line of the opening fence
    lang: str
    code: str

    @property
    def id(self) -> str:
        return f"{self.path.relative_to(ROOT)}:{self.line}"


def manual_files() -> list[Path]:
    """README.md and every Markdown page under docs/."""
    return [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


def blocks(path: Path) -> list[Block]:
    """The fenced blocks of one Markdown file, dedented by their fence's indent (list items)."""
    found: list[Block] = []
    lines = path.read_text(encoding="utf-8").split("\n")
    i = 0
    while i < len(lines):
        match = _OPEN.match(lines[i])
        if match is None:
            i += 1
            continue
        indent, fence, lang = match["indent"], match["fence"], match["lang"]
        close = re.compile(rf"^{re.escape(indent)}{re.escape(fence[0])}{{{len(fence)},}}[ \t]*$")
        body: list[str] = []
        j = i + 1
        while j < len(lines) and not close.match(lines[j]):
            body.append(lines[j][len(indent) :] if lines[j].startswith(indent) else lines[j].lstrip())
            j += 1
        if j == len(lines):
            raise ValueError(f"{path}:{i + 1}: the code fence is never closed")
        found.append(Block(path, i + 1, lang, "\n".join(body) + "\n"))
        i = j + 1
    return found


def all_blocks() -> list[Block]:
    return [block for path in manual_files() for block in blocks(path)]
