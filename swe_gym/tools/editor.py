"""The file editor tool (``view``, ``create``, ``str_replace``, ``insert``, ``undo_edit``), run on the sandbox.

Every read and write goes through the sandbox's runner (`AsyncSandbox.read_file` / ``write_file``, and one
shell test for what a path is), so it works the same on every provider and never touches the host. Files
are handled as bytes, and text both ways is `swe_gym.shown_text`: ``view`` shows every character the file
holds (non-UTF-8 bytes marked ``�xe9``), and ``old_str``/``new_str`` are those bytes again, so text copied
from any view or command output matches exactly, and a file with non-UTF-8 bytes is edited without damage.
Each failure is an `EditorError` whose message says what to do (a missing or non-unique ``old_str`` names
the lines).
"""

from __future__ import annotations

import posixpath
import shlex
from dataclasses import dataclass, field
from typing import Any

from swe_gym.sandbox import AsyncSandbox
from swe_gym.shown_text import to_bytes, to_text

SNIPPET_LINES = 4
MAX_VIEW_BYTES = 16 << 20
COMMANDS = ("view", "create", "str_replace", "insert", "undo_edit")


class EditorError(ValueError):
    """An edit that cannot be made; the message is for the agent."""


@dataclass
class EditorHistory:
    """Per file, its contents before each edit (None: it did not exist), for ``undo_edit``; one per episode."""

    before: dict[str, list[bytes | None]] = field(default_factory=dict)

    def copy(self) -> EditorHistory:
        return EditorHistory({path: list(states) for path, states in self.before.items()})


def _numbered(data: bytes, first: int = 1) -> str:
    lines = to_text(data).split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return "\n".join(f"{number:6}\t{line}" for number, line in enumerate(lines, first))


def _snippet(data: bytes, line: int, added: int) -> str:
    """The edited region with a few lines around it, numbered."""
    lines = data.split(b"\n")
    start = max(0, line - SNIPPET_LINES)
    end = min(len(lines), line + added + SNIPPET_LINES + 1)
    return _numbered(b"\n".join(lines[start:end]), start + 1)


def _string(arguments: dict[str, Any], name: str, *, required: bool = True) -> str | None:
    value = arguments.get(name)
    if value is None:
        if required:
            raise EditorError(f"the {name!r} argument is required for this command")
        return None
    if not isinstance(value, str):
        raise EditorError(f"the {name!r} argument must be a string, got {type(value).__name__}")
    return value


class Editor:
    """The editor of one episode's sandbox (``history`` goes with the episode, and with its forks)."""

    def __init__(self, sandbox: AsyncSandbox, history: EditorHistory | None = None) -> None:
        self.sandbox = sandbox
        self.history = history or EditorHistory()

    def _path(self, raw: str) -> str:
        if not raw.strip():
            raise EditorError("the path is empty")
        joined = raw if raw.startswith("/") else posixpath.join(self.sandbox.workdir, raw)
        return posixpath.normpath(joined)

    async def _kind(self, path: str) -> tuple[str, int]:
        """('dir' | 'file' | 'other' | 'missing', the file's mode)."""
        quoted = shlex.quote(path)
        probe = (
            f"if [ -d {quoted} ]; then echo dir 0; elif [ -f {quoted} ]; then echo file $(stat -c %a {quoted}); "
            f"elif [ -e {quoted} ]; then echo other 0; else echo missing 0; fi"
        )
        result = await self.sandbox.exec(probe, timeout=30)
        kind, _, mode = result.output.strip().partition(" ")
        return kind, int(mode or "0", 8) if mode.isdigit() else 0o644

    async def _read(self, path: str, probed: tuple[str, int] | None = None) -> tuple[bytes, int]:
        """The file's bytes and mode (``probed``: `_kind`'s answer, when the caller already asked)."""
        kind, mode = probed or await self._kind(path)
        if kind == "missing":
            raise EditorError(f"{path} does not exist")
        if kind != "file":
            raise EditorError(f"{path} is not a regular file ({kind})")
        return await self.sandbox.read_file(path, max_bytes=MAX_VIEW_BYTES), mode

    async def _write(self, path: str, data: bytes, mode: int, previous: bytes | None) -> None:
        await self.sandbox.write_file(path, data, mode or 0o644)
        self.history.before.setdefault(path, []).append(previous)

    async def run(self, arguments: dict[str, Any]) -> str:
        command = _string(arguments, "command")
        if command not in COMMANDS:
            raise EditorError(f"unknown command {command!r}; one of: {', '.join(COMMANDS)}")
        path = self._path(_string(arguments, "path") or "")
        return await getattr(self, f"_{command}")(path, arguments)

    async def _view(self, path: str, arguments: dict[str, Any]) -> str:
        kind, mode = await self._kind(path)
        if kind == "dir":
            listing = await self.sandbox.exec(
                f"cd {shlex.quote(path)} && find . -maxdepth 2 -not -path '*/.*' | sort | head -n 2000", timeout=60
            )
            return f"The files and directories up to 2 levels deep in {path}, hidden ones left out:\n{listing.output}"
        data, _ = await self._read(path, (kind, mode))  # one probe per view
        if b"\0" in data[:8192]:
            raise EditorError(f"{path} is a binary file ({len(data)} bytes); view shows text files")
        first = 1
        window = arguments.get("view_range")
        if window is not None:
            if not (isinstance(window, list) and len(window) == 2 and all(isinstance(n, int) for n in window)):
                raise EditorError("view_range must be two integers: [first, last] (last -1: to the end)")
            lines = data.split(b"\n")
            count = len(lines) - (1 if data.endswith(b"\n") else 0)
            first, last = window
            if not 1 <= first <= max(count, 1) or not (last == -1 or first <= last <= count):
                raise EditorError(f"view_range {window} is outside the file's {count} lines")
            data = b"\n".join(lines[first - 1 : None if last == -1 else last])
        return f"Here is {path} with line numbers (cat -n):\n{_numbered(data, first)}"

    async def _create(self, path: str, arguments: dict[str, Any]) -> str:
        text = _string(arguments, "file_text")
        kind, _ = await self._kind(path)
        if kind != "missing":
            raise EditorError(f"{path} already exists; create writes new files only (edit it with str_replace)")
        await self._write(path, to_bytes(text or ""), 0o644, None)
        return f"File created: {path}"

    async def _str_replace(self, path: str, arguments: dict[str, Any]) -> str:
        old = to_bytes(_string(arguments, "old_str") or "")
        new = to_bytes(_string(arguments, "new_str", required=False) or "")
        if not old:
            raise EditorError("old_str is empty; give the exact text to replace")
        data, mode = await self._read(path)
        count = data.count(old)
        if count == 0:
            raise EditorError(f"old_str does not appear verbatim in {path}; view the file and copy the text exactly")
        if count > 1:
            lines, at = [], data.find(old)
            while at >= 0:
                lines.append(data.count(b"\n", 0, at) + 1)
                at = data.find(old, at + 1)
            raise EditorError(
                f"old_str appears {count} times in {path} (lines {', '.join(map(str, lines))}); include more "
                "context so that it is unique"
            )
        at = data.find(old)
        edited = data[:at] + new + data[at + len(old) :]
        await self._write(path, edited, mode, data)
        line, added = data.count(b"\n", 0, at), new.count(b"\n")
        return f"Edited {path}; the changed lines with context (cat -n):\n{_snippet(edited, line, added)}"

    async def _insert(self, path: str, arguments: dict[str, Any]) -> str:
        new = to_bytes(_string(arguments, "new_str") or "")
        after = arguments.get("insert_line")
        if not isinstance(after, int) or isinstance(after, bool):
            raise EditorError("insert_line must be an integer: the line after which new_str goes (0: at the top)")
        data, mode = await self._read(path)
        lines = data.split(b"\n")
        trailing = data.endswith(b"\n")
        count = len(lines) - (1 if trailing else 0)
        if not 0 <= after <= count:
            raise EditorError(f"insert_line {after} is outside the file's {count} lines (0 to {count})")
        body = lines[:-1] if trailing else lines
        inserted = new.split(b"\n")
        if new.endswith(b"\n"):
            inserted.pop()
        edited = b"\n".join(body[:after] + inserted + body[after:]) + (b"\n" if trailing or not body else b"")
        await self._write(path, edited, mode, data)
        return f"Inserted into {path}; the lines around it (cat -n):\n{_snippet(edited, after, len(inserted))}"

    async def _undo_edit(self, path: str, arguments: dict[str, Any]) -> str:
        states = self.history.before.get(path)
        if not states:
            raise EditorError(f"no edit of {path} to undo")
        previous = states.pop()
        if previous is None:
            await self.sandbox.exec(f"rm -f -- {shlex.quote(path)}", timeout=30)
            return f"Undid the creation of {path} (removed)"
        _, mode = await self._kind(path)
        await self.sandbox.write_file(path, previous, mode or 0o644)
        return f"Undid the last edit of {path}; it is now (cat -n):\n{_numbered(previous)}"
