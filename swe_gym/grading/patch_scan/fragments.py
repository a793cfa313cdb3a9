"""A hunk's new side turned into pieces `ast` can parse: a hunk starts and ends anywhere (deep in a block, inside
brackets or a docstring), so it is dedented under synthetic block headers and closers, and split at each syntax
error until the pieces parse; each piece maps its tree's lines back to the hunk's."""

from __future__ import annotations

import ast
import itertools
import re
import textwrap
from collections.abc import Iterator
from dataclasses import dataclass

from swe_gym.grading.patch_scan.diff import Line

_PARSE_BUDGET = 48  # parses per hunk while splitting it at syntax errors
_PARSE_CHARS = 4 << 20  # characters those parses may read together (at least two parses)


@dataclass
class Fragment:
    """A parsed piece of a hunk's new side: ``lines[k]`` is the hunk line of the tree's line ``k + 1``."""

    tree: ast.Module
    lines: list[Line | None]

    def span(self, node: ast.AST) -> Iterator[Line]:
        start = getattr(node, "lineno", 1)
        end = getattr(node, "end_lineno", None) or start
        for index in range(max(start - 1, 0), min(end, len(self.lines))):
            line = self.lines[index]
            if line is not None:
                yield line

    def added(self, node: ast.AST) -> bool:
        return any(line.added for line in self.span(node))

    def number(self, node: ast.AST) -> int:
        lines = list(self.span(node))
        added = [line.number for line in lines if line.added]
        return added[0] if added else (lines[0].number if lines else 0)


def _indent(text: str) -> int:
    return len(text) - len(text.lstrip(" \t"))


def _code_line(text: str) -> bool:
    stripped = text.strip()
    return bool(stripped) and not stripped.startswith("#")


_CLAUSE = re.compile(r"(?:except|finally|else|elif)\b")


def _header(text: str) -> str:
    """The block a line at this level needs before it: ``try:`` for ``except``/``finally``, else ``if 1:``."""
    return "try:" if re.match(r"(?:except|finally)\b", text.lstrip()) else "if 1:"


def _with_headers(texts: list[str]) -> tuple[list[str], list[str]]:
    """The lines dedented, and the headers that open the blocks a hunk starting deep (or at an ``except``)
    sits in."""
    body = textwrap.dedent("\n".join(texts)).split("\n")
    first = next((text for text in body if _code_line(text)), None)
    if first is None:
        return body, []
    top = _indent(first)
    levels: dict[int, str] = {}
    for text in body:
        if _code_line(text) and _indent(text) < top:
            levels.setdefault(_indent(text), text)
    if top and 0 not in levels:
        levels[0] = ""  # the least indented code line is deeper than a comment line
    headers = [text[: _indent(text)] + _header(text) for _, text in sorted(levels.items())]
    if _CLAUSE.match(first.lstrip()):
        headers += [first[:top] + _header(first), first[:top] + "    pass"]
    return body, headers


_PAIRS = {")": "(", "]": "[", "}": "{"}
_CONTINUES = re.compile(r"\s*(?:(?:and|or|if|else|for|in|not|is)\b|[-+*/%@|&^<>=!.])")


def _brackets(texts: list[str]) -> tuple[str, str, int]:
    """The brackets a piece closes without opening (outermost first), those it leaves open, and the line of the
    last unopened one; strings and comments skipped."""
    stack: list[str] = []
    missing: list[str] = []
    last, quote = -1, ""
    for index, text in enumerate(texts):
        i = 0
        while i < len(text):
            char = text[i]
            if quote:
                if char == "\\":
                    i += 2
                    continue
                if text.startswith(quote, i):
                    i, quote = i + len(quote), ""
                    continue
            elif char == "#":
                break
            elif char in "\"'":
                quote = text[i : i + 3] if text[i : i + 3] in ('"""', "'''") else char
                i += len(quote)
                continue
            elif char in "([{":
                stack.append(char)
            elif char in _PAIRS:
                if stack:
                    stack.pop()
                else:
                    missing.append(_PAIRS[char])
                    last = index
            i += 1
        quote = quote if len(quote) == 3 else ""
    closers = "".join({"(": ")", "[": "]", "{": "}"}[char] for char in reversed(stack))
    return "".join(reversed(missing)), closers, last


def _variants(texts: list[str]) -> Iterator[tuple[list[str], list[str]]]:
    """Lines to put around a piece that does not parse as it is: the docstring or the brackets it starts in."""
    first = next((text for text in texts if _code_line(text)), "")
    joined = "\n".join(texts)
    for quote in ('"""', "'''"):
        if joined.count(quote) % 2:
            yield [first[: _indent(first)] + quote], []
    tries = [text for text in texts if re.match(r"\s*try\s*:", text)]
    if tries:  # a piece that ends inside a try block
        yield [], [tries[-1][: _indent(tries[-1])] + "finally:", tries[-1][: _indent(tries[-1])] + "    pass"]
    openers, closers, last = _brackets(texts)
    if openers or closers:
        closing = texts[last] if last >= 0 else ""
        # What the brackets belong to: a compound statement's header when the closing line ends with a colon.
        head = "if " if closing.split("#", 1)[0].rstrip().endswith(":") else "_ = "
        filler = "_x" if openers and _CONTINUES.match(first) else ""
        yield (
            ([f"{closing[: _indent(closing)]}{head}{openers}{filler}"] if openers else []),
            ([closers] if closers else []),
        )


def _try_parse(part: list[Line]) -> tuple[Fragment | None, int | None]:
    """The piece parsed (as it is, else inside the docstring or brackets it starts in), or the index of the line
    its syntax error names."""
    texts = [line.text for line in part]
    if part and part[0].number == 1:
        texts[0] = texts[0].removeprefix("\ufeff")
    error: tuple[SyntaxError, int] | None = None
    for prefix, suffix in itertools.chain([([], [])], _variants(texts)):
        last = next((text for text in reversed([*texts, *suffix]) if _code_line(text)), "")
        if last.split("#", 1)[0].rstrip().endswith(":"):  # a block the piece ends before: give it a body
            suffix = [*suffix, last[: _indent(last)] + "    pass"]
        body, headers = _with_headers([*prefix, *texts, *suffix])
        try:
            tree = ast.parse("\n".join([*headers, *body]) + "\n")
        except SyntaxError as exc:
            error = error or (exc, len(headers) + len(prefix))
            continue
        except (ValueError, RecursionError, MemoryError, OverflowError, UnicodeError):
            return None, None
        lead: list[Line | None] = [None] * (len(headers) + len(prefix))
        return Fragment(tree, [*lead, *part, *[None] * len(suffix)]), None
    if error is None or not error[0].lineno:
        return None, None
    return None, min(max(error[0].lineno - 1 - error[1], 0), len(part) - 1)


def fragments(hunk: list[Line]) -> list[Fragment]:
    """The hunk's new side as parsed pieces: the whole, else split at each syntax error until the pieces parse."""
    out: list[Fragment] = []
    pending = [(0, len(hunk))]
    size = sum(len(line.text) + 1 for line in hunk)
    budget = min(_PARSE_BUDGET, max(2, _PARSE_CHARS // max(size, 1)))
    while pending and budget > 0:
        lo, hi = pending.pop()
        if not any(line.added for line in hunk[lo:hi]):
            continue
        budget -= 1
        fragment, error = _try_parse(hunk[lo:hi])
        if fragment is not None:
            out.append(fragment)
        elif error is not None and hi - lo > 1:
            pending += [(lo + error + 1, hi), (lo, lo + error)]
    return out
