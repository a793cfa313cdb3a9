"""A git or plain unified diff read into its file changes: each hunk's new side with its added lines marked, and a
``GIT binary patch`` literal decoded (base85, then zlib) into the new file it is."""

from __future__ import annotations

import base64
import codecs
import re
import zlib
from dataclasses import dataclass, field

_MAX_BINARY = 8 << 20  # bytes a binary literal may inflate to


@dataclass
class Line:
    """One line of a hunk's new side: added by the patch, or context it keeps."""

    number: int  # on the new side
    text: str
    added: bool


@dataclass
class Change:
    """One file of the diff: where it lands, and its hunks or the binary literal that is its new content."""

    path: str = ""
    new_file: bool = False
    deleted: bool = False
    headed: bool = False
    hunks: list[list[Line]] = field(default_factory=list)
    binary: bytes | None = None
    binary_unreadable: bool = False


_HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")


def parse_diff(text: str) -> list[Change]:
    """Every file change of ``text``, git or plain; lines outside files and hunks are ignored."""
    lines = text.split("\n")
    changes: list[Change] = []
    current: Change | None = None
    i = 0
    while i < len(lines):
        line = lines[i].removesuffix("\r")
        if line.startswith("diff --git "):
            current = Change(path=_git_header_path(line[len("diff --git ") :]))
            changes.append(current)
        elif line.startswith("--- ") and i + 1 < len(lines) and lines[i + 1].startswith("+++ "):
            if current is None or current.headed or current.hunks:
                current = Change()
                changes.append(current)
            _set_paths(current, line[4:], lines[i + 1].removesuffix("\r")[4:])
            i += 1
        elif (match := _HUNK.match(line)) is not None:
            if current is None:
                current = Change()
                changes.append(current)
            hunk, i = _read_hunk(lines, i + 1, match)
            current.hunks.append(hunk)
            continue
        elif current is not None and not current.hunks:
            if line == "GIT binary patch":
                i = _read_binary(lines, i + 1, current)
                continue
            _extended_header(current, line)
        i += 1
    return changes


def _set_paths(change: Change, old: str, new: str) -> None:
    change.headed = True
    new_path, old_path = _header_path(new), _header_path(old)
    if new_path == "/dev/null":
        change.deleted = True
    else:
        change.path = new_path
    if old_path == "/dev/null":
        change.new_file = True


def _extended_header(change: Change, line: str) -> None:
    if line.startswith("new file mode"):
        change.new_file = True
    elif line.startswith("deleted file mode"):
        change.deleted = True
    elif line.startswith(("rename to ", "copy to ")):
        change.path = _unquote(line.split(" ", 2)[2])


def _git_header_path(rest: str) -> str:
    rest = rest.strip()
    if rest.endswith('"') and ' "' in rest:
        return _strip_prefix(_unquote(rest[rest.rindex(' "') + 1 :]))
    at = rest.rfind(" b/")
    return rest[at + 3 :] if at >= 0 else rest.split(" ")[-1]


def _header_path(raw: str) -> str:
    raw = raw.split("\t", 1)[0].strip()
    return raw if raw == "/dev/null" else _strip_prefix(_unquote(raw))


def _strip_prefix(path: str) -> str:
    return path[2:] if path[:2] in ("a/", "b/") else path


def _unquote(path: str) -> str:
    path = path.strip()
    if len(path) >= 2 and path[0] == path[-1] == '"':
        try:
            return codecs.escape_decode(path[1:-1].encode("utf-8", "surrogateescape"))[0].decode("utf-8", "replace")
        except (ValueError, UnicodeError):
            return path[1:-1]
    return path


def _read_hunk(lines: list[str], i: int, match: re.Match[str]) -> tuple[list[Line], int]:
    """The hunk's new side. Added lines past the counted ones are read too (GNU patch may take them)."""
    old_left = int(match[2]) if match[2] is not None else 1
    new_left = int(match[4]) if match[4] is not None else 1
    number = int(match[3])
    hunk: list[Line] = []
    while i < len(lines):
        raw = lines[i].removesuffix("\r")
        if old_left <= 0 and new_left <= 0:
            if not raw.startswith("+") or raw.startswith("+++ "):
                break
        elif raw.startswith(("@@ ", "diff --git ")):
            break
        tag = raw[:1]
        if tag in ("+", " ", ""):
            added = tag == "+"
            if "\r" in raw:  # Python reads a lone carriage return as a line end: keep the parser's numbers ours
                hunk.extend(Line(number, part, added) for part in raw[1:].split("\r"))
            else:
                hunk.append(Line(number, raw[1:], added))
            number += 1
            new_left -= 1
            old_left -= 0 if added else 1
        elif tag == "-":
            old_left -= 1
        elif tag != "\\":
            break
        i += 1
    return hunk, i


def _read_binary(lines: list[str], i: int, change: Change) -> int:
    """A ``GIT binary patch``: a ``literal`` block is decoded (it is the new file), a ``delta`` is unreadable."""
    kind = lines[i].strip().split(" ")[0] if i < len(lines) else ""
    data: list[str] = []
    i += 1
    while i < len(lines) and lines[i].strip():
        data.append(lines[i].strip())
        i += 1
    if kind == "literal":
        change.binary = _inflate(_git_base85(data))
        change.binary_unreadable = change.binary is None
    elif kind == "delta":
        change.binary_unreadable = True
    return i


def _git_base85(data: list[str]) -> bytes | None:
    out = bytearray()
    for line in data:
        size = ord(line[0]) - (ord("A") - 1 if line[0] <= "Z" else ord("a") - 27)
        try:
            out += base64.b85decode(line[1:])[:size]
        except ValueError:
            return None
    return bytes(out)


def _inflate(data: bytes | None, wbits: int = zlib.MAX_WBITS) -> bytes | None:
    if data is None:
        return None
    try:
        inflater = zlib.decompressobj(wbits)
        out = inflater.decompress(data, _MAX_BINARY)
    except zlib.error:
        return None
    return None if inflater.unconsumed_tail else out
