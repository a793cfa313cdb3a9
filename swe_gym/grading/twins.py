"""Twin tests: graded tests with an expected value perturbed, to expose patches that forge test results.

The agent's patch changes code that the tests import, so it runs inside the test process and can force
results (no-op ``runtest``, rewrite reports, make a runner swallow failures), return objects that equal
anything (``__eq__`` always true), or read the running test's source. The grader therefore runs each
graded test once as written and once as its *twin*: the same definition at the same place with one
expected value of an equality assertion (``assert f(x) == "2025-W01"``, ``assertEqual(r, 3)``) changed to
another literal of the same type and shape (one character or digit, chosen at random per grading). Under
a correct fix a twin fails; under a forger that makes tests pass, or an object equal to everything, it
passes. The twin is an ordinary test of the task's kind: nothing in its source, name or place tells it
from a test whose expected value happens to be that literal. A test with no literal expected value gets
the older twin with its assertions inverted (`assert x` -> `assert not (x)`), which code that reads the
test's source can tell apart; `TestDef.perturbable` says which kind a test gets. This module is the
host-side part: it finds the definition behind each graded test id, rewrites chosen definitions
surgically (every byte outside them is kept), and writes the patch that installs the rewritten files.

Positions come from `ast`, whose columns count UTF-8 bytes, so all editing is done on UTF-8 bytes.
"""

from __future__ import annotations

import ast
import difflib
import io
import math
import random
import re
import tokenize
import warnings
from collections.abc import Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import NamedTuple

_FUNCS = (ast.FunctionDef, ast.AsyncFunctionDef)
_SCOPES = (*_FUNCS, ast.ClassDef, ast.Lambda)
_FuncDef = ast.FunctionDef | ast.AsyncFunctionDef

#: What a twin without an invertible assertion runs instead of finishing (a raise survives ``python -O``).
_RAISE = b'raise AssertionError("unexpected success"'
_BREAK = re.compile(rb"\r\n|\r|\n")
_BOM = "\ufeff"
#: ``name (module.Class)`` or, from Python 3.11 and Django 4, ``name (module.Class.name)``; subtests add a suffix.
_UNITTEST = re.compile(r"(?P<name>\w+) \((?P<where>\w+(?:\.\w+)+)\)(?: .*)?", re.DOTALL)
#: Context managers that swallow exceptions: an assertion inside may fail without failing the test.
_CATCHING_CONTEXTS = frozenset(
    {"raises", "assertRaises", "assertRaisesRegex", "assertRaisesRegexp", "assertRaisesMessage", "suppress"}
)
_ASSERTION_CATCHERS = frozenset({"AssertionError", "Exception", "BaseException"})


@dataclass(frozen=True)
class TestDef:
    """One test function definition in one file, and how strongly its twin is inverted."""

    __test__ = False

    key: str
    path: str
    qualname: str
    #: Assertions the inverted twin inverts; 0 means it only raises where the original would finish.
    inverted: int
    #: Equality assertions with a literal expected value, one of which a perturbed twin changes (0: none).
    perturbable: int = 0


@dataclass(frozen=True)
class Choice:
    """Which literal expected value a perturbed twin changes (its index among the candidates) and how (a seed)."""

    literal: int
    seed: int


@dataclass(frozen=True)
class TwinIndex:
    """Graded test ids resolved to definitions, and the ids that cannot have a twin with the reason."""

    defs: dict[str, TestDef]
    of_test: dict[str, str]
    missing: dict[str, str]


@dataclass(frozen=True)
class _Swap:
    """The negation of a unittest assertion method, and when a call keeps its meaning under it."""

    to: str
    #: Positional arguments the negation reads the same way (None: all of them).
    max_args: int | None = None
    #: Keywords the negation does not take.
    foreign: frozenset[str] = frozenset()


def _both_ways(*pairs: tuple[str, str]) -> dict[str, _Swap]:
    return {name: _Swap(other) for a, b in pairs for name, other in ((a, b), (b, a))}


_SWAPS: dict[str, _Swap] = {
    **_both_ways(
        ("assertEqual", "assertNotEqual"),
        ("assertEquals", "assertNotEquals"),
        ("assertTrue", "assertFalse"),
        ("assertIs", "assertIsNot"),
        ("assertIsNone", "assertIsNotNone"),
        ("assertIn", "assertNotIn"),
        ("assertIsInstance", "assertNotIsInstance"),
        ("assertAlmostEqual", "assertNotAlmostEqual"),
        ("assertGreater", "assertLessEqual"),
        ("assertLess", "assertGreaterEqual"),
        ("assertHTMLEqual", "assertHTMLNotEqual"),
        ("assertJSONEqual", "assertJSONNotEqual"),
        ("assertXMLEqual", "assertXMLNotEqual"),
    ),
    # The pattern's keyword is named for what each expects.
    "assertRegex": _Swap("assertNotRegex", foreign=frozenset({"expected_regex"})),
    "assertNotRegex": _Swap("assertRegex", foreign=frozenset({"unexpected_regex"})),
    # Django's assertContains(response, text, count, status_code, ...) has a count; assertNotContains has none:
    # assertNotContains(response, text, status_code, ...).
    "assertContains": _Swap("assertNotContains", max_args=2, foreign=frozenset({"count"})),
    "assertNotContains": _Swap("assertContains", max_args=2),
}


class _Found(NamedTuple):
    path: str
    qualname: str
    node: ast.stmt

    @property
    def key(self) -> str:
        return f"{self.path}::{self.qualname}"


class _Class(NamedTuple):
    """A class statement, its qualified name, the body it stands in and its module's body (for its bases)."""

    node: ast.ClassDef
    qual: str
    outer: list[ast.stmt]
    module: list[ast.stmt]


class _Source:
    """A file's text as UTF-8 bytes, addressed by the parser's (line, byte column) positions.

    A file that is not UTF-8 arrives decoded with ``surrogateescape`` (as the grader reads files); it is
    decoded with the encoding its coding cookie declares instead, and `restore` gives it back that way.
    """

    def __init__(self, text: str) -> None:
        try:
            self.data, self.encoding = text.encode(), "utf-8"
        except UnicodeEncodeError:
            raw = text.encode("utf-8", "surrogateescape")
            self.encoding = tokenize.detect_encoding(io.BytesIO(raw).readline)[0]
            self.data = raw.decode(self.encoding).encode()
        # The parser is given the text without its byte order mark, so line 1 starts after it.
        self.starts = [len(_BOM.encode()) if text.startswith(_BOM) else 0]
        self.starts += [m.end() for m in _BREAK.finditer(self.data)]

    def tree(self) -> ast.Module:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # invalid escapes and the like: the test runner's business
            return ast.parse(self.data.decode().removeprefix(_BOM))

    def restore(self, data: bytes) -> str:
        """Edited bytes as text in the form the file came in."""
        if self.encoding == "utf-8":
            return data.decode()
        return data.decode().encode(self.encoding).decode("utf-8", "surrogateescape")

    def offset(self, line: int, col: int) -> int:
        return self.starts[line - 1] + col

    def span(self, node: ast.AST) -> tuple[int, int]:
        return self.offset(node.lineno, node.col_offset), self.offset(node.end_lineno, node.end_col_offset)

    def line_break(self, line: int) -> bytes:
        """The bytes ending `line`; empty for a last line without one."""
        if line >= len(self.starts):
            return b""
        end = self.starts[line]
        return b"\r\n" if self.data[end - 2 : end] == b"\r\n" else self.data[end - 1 : end]

    @cached_property
    def eol(self) -> bytes:
        found = _BREAK.search(self.data)
        return found.group() if found else b"\n"


_Edit = tuple[int, int, bytes]


def _load(text: str) -> tuple[_Source, ast.Module] | str:
    try:
        source = _Source(text)
        return source, source.tree()
    except UnicodeError:
        return "its file is neither UTF-8 nor in the encoding it declares"
    except SyntaxError as exc:  # a syntax error, or an unknown declared encoding
        return f"its file does not parse: {exc.msg} (line {exc.lineno})"
    except (ValueError, RecursionError) as exc:
        return f"its file does not parse: {exc}"


def _children(node: ast.AST, guarded: bool) -> list[ast.AST]:
    """The nodes under `node` that run in its frame; with `guarded`, not those whose failures may be swallowed."""
    if isinstance(node, _SCOPES):
        return []
    if guarded and isinstance(node, ast.With | ast.AsyncWith) and any(_catching(i.context_expr) for i in node.items):
        return list(node.items)
    if guarded and isinstance(node, ast.Try | ast.TryStar) and any(_catches_assertion(h.type) for h in node.handlers):
        return [*node.handlers, *node.orelse, *node.finalbody]
    return list(ast.iter_child_nodes(node))


def _frame(nodes: Iterable[ast.AST], *, guarded: bool = False) -> Iterator[ast.AST]:
    """Nodes run in the frame of `nodes`, in source order; nested functions, lambdas and classes are not entered."""
    stack = list(nodes)[::-1]
    while stack:
        node = stack.pop()
        yield node
        stack.extend(reversed(_children(node, guarded)))


def _called_name(expr: ast.expr) -> str | None:
    if not isinstance(expr, ast.Call):
        return None
    func = expr.func
    return func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else None


def _catching(expr: ast.expr) -> bool:
    return _called_name(expr) in _CATCHING_CONTEXTS


def _catches_assertion(kind: ast.expr | None) -> bool:
    if kind is None:
        return True
    if isinstance(kind, ast.Tuple):
        return any(_catches_assertion(k) for k in kind.elts)
    name = kind.id if isinstance(kind, ast.Name) else kind.attr if isinstance(kind, ast.Attribute) else None
    return name in _ASSERTION_CATCHERS


def _bound_name(node: ast.AST) -> str | None:
    """The name `node` binds in the scope it runs in, if any."""
    match node:
        case ast.FunctionDef() | ast.AsyncFunctionDef() | ast.ClassDef():
            return node.name
        case ast.Name(ctx=ast.Store() | ast.Del()):
            return node.id
        case ast.alias():
            return node.asname or node.name.partition(".")[0]
        case ast.ExceptHandler():
            return node.name
    return None


def _is(stmt: ast.stmt | None, name: str, kinds: type | tuple[type, ...]) -> bool:
    return isinstance(stmt, kinds) and stmt.name == name


def _kind_problem(stmt: ast.stmt, name: str, want: type | tuple[type, ...]) -> str | None:
    """Why `stmt`, the last binding of `name`, is not the plain definition of kind `want` wanted; None if it is."""
    if _is(stmt, name, want):
        return None
    if _is(stmt, name, ast.ClassDef):
        return f"{name} is a class, not a test function"
    if _is(stmt, name, _FUNCS):
        return f"{name} is a function, not a class"
    if any(_is(node, name, (*_FUNCS, ast.ClassDef)) for node in _frame([stmt])):
        return f"{name} is defined inside a block (if/try/with/loop), so which definition runs is not fixed"
    return f"{name} is bound by an assignment or import, not by a def"


def _is_generator(fn: ast.stmt) -> bool:
    return any(isinstance(node, ast.Yield | ast.YieldFrom) for node in _frame(fn.body))


def _summary(fn: ast.stmt) -> str | None:
    """The first line of the docstring, as unittest's shortDescription shows it in place of the name."""
    doc = ast.get_docstring(fn, clean=False)
    return doc.strip().split("\n")[0].strip() if doc else None


def _c3(lines: list[list[_Class]]) -> list[_Class] | None:
    """Python's method resolution order merge; None where no consistent order exists."""
    merged: list[_Class] = []
    lines = [line for line in lines if line]
    while lines:
        head = next(
            (line[0] for line in lines if not any(line[0].node is c.node for rest in lines for c in rest[1:])), None
        )
        if head is None:
            return None
        merged.append(head)
        lines = [rest for line in lines if (rest := line[1:] if line[0].node is head.node else line)]
    return merged


class _Tests:
    """The test sources, each parsed once, with the lookups that resolve test ids to definitions."""

    def __init__(self, sources: Mapping[str, str]) -> None:
        self.sources = sources
        self._files: dict[str, tuple[_Source, ast.Module] | str] = {}
        self._bindings: dict[int, dict[str, ast.stmt]] = {}

    def _file(self, path: str) -> tuple[_Source, ast.Module] | str:
        if path not in self._files:
            self._files[path] = _load(self.sources[path])
        return self._files[path]

    def tree(self, path: str) -> ast.Module | str:
        loaded = self._file(path)
        return loaded if isinstance(loaded, str) else loaded[1]

    def text(self, path: str) -> _Source:
        """The source of a file whose tree loaded."""
        loaded = self._file(path)
        if isinstance(loaded, str):
            raise ValueError(f"{path}: {loaded}")
        return loaded[0]

    def member(self, body: list[ast.stmt], name: str) -> ast.stmt | None:
        """The statement of `body` that binds `name` last: the binding Python keeps."""
        table = self._bindings.get(id(body))
        if table is None:
            table = self._bindings[id(body)] = {}
            for stmt in body:
                table.update((bound, stmt) for node in _frame([stmt]) if (bound := _bound_name(node)))
        return table.get(name)

    def matching(self, rel: str) -> list[str]:
        """Source paths that are `rel` or end with it: ids may be relative to a subdirectory."""
        rel = rel.removeprefix("./")
        return [rel] if rel in self.sources else sorted(p for p in self.sources if p.endswith("/" + rel))

    def resolve(self, test_id: str) -> _Found | str:
        if "::" in test_id:
            found = self._pytest(test_id)
        elif match := _UNITTEST.fullmatch(test_id):
            found = self._unittest(match["name"], match["where"].split("."))
        elif test_id.isidentifier():
            found = self._bare(test_id)
        else:
            found = "no test function has this docstring or name"
        if isinstance(found, str):
            # With verbosity 2, unittest and Django print a test's docstring line instead of its id.
            found = self._by_summary.get(test_id.strip()) or found
        return self._one(found)

    @staticmethod
    def _one(found: list[_Found] | str) -> _Found | str:
        if isinstance(found, str):
            return found
        unique = {f.key: f for f in found}
        if len(unique) > 1:
            return f"ambiguous: defined in {len(unique)} places"
        (only,) = unique.values()
        return f"{only.qualname} is a generator (yield) test" if _is_generator(only.node) else only

    def _pytest(self, test_id: str) -> list[_Found] | str:
        path, _, rest = test_id.partition("::")
        if "[" in rest:
            # parameters, which may hold anything; swebench's parser cuts an id at its first space, so the
            # closing bracket may be gone
            rest = rest[: rest.index("[")]
        names = [name for name in rest.split("::") if name != "()"]
        if not (paths := self.matching(path)):
            return f"no test file matches {path}"
        if not all(name.isidentifier() for name in names):
            return f"{rest} does not name a test function (a doctest?)"
        return self._in_files(paths, names)

    def _unittest(self, name: str, where: list[str]) -> list[_Found] | str:
        dotted = where[:-1] if where[-1] == name and len(where) > 2 else where
        for split in range(len(dotted) - 1, 0, -1):  # the longest module part first
            module, classes = dotted[:split], dotted[split:]
            rel = "/".join(module)
            if paths := self.matching(rel + ".py") + self.matching(rel + "/__init__.py"):
                return self._in_files(paths, [*classes, name])
        return f"no test file for module {'.'.join(dotted[:-1])}"

    def _in_files(self, paths: list[str], names: Sequence[str]) -> list[_Found] | str:
        """The definition `names` reaches in each of `paths` (not empty); the first reason why not where none does."""
        results = [self._locate(path, names) for path in paths]
        return [result for result in results if not isinstance(result, str)] or results[0]

    def _bare(self, name: str) -> list[_Found] | str:
        """A sympy-style id: a module-level function of that name anywhere, else a method of that name."""
        found: list[_Found] = []
        problems: list[str] = []
        for path, tree in self._parsed():
            if (stmt := self.member(tree.body, name)) is None:
                continue
            if problem := _kind_problem(stmt, name, _FUNCS):
                problems.append(problem)
            else:
                found.append(_Found(path, name, stmt))
        if not found:
            found = [f for f in self._all_defs if f.qualname.rpartition(".")[2] == name]
        return found or next(iter(problems), f"no test function named {name}")

    def _parsed(self) -> Iterator[tuple[str, ast.Module]]:
        for path in sorted(self.sources):
            if not isinstance(tree := self.tree(path), str):
                yield path, tree

    @cached_property
    def _all_defs(self) -> list[_Found]:
        return [f for path, tree in self._parsed() for f in self._defs(path, tree.body, "")]

    @cached_property
    def _by_summary(self) -> dict[str, list[_Found]]:
        table: dict[str, list[_Found]] = {}
        for found in self._all_defs:
            if found.qualname.rpartition(".")[2].startswith("test") and (summary := _summary(found.node)):
                table.setdefault(summary, []).append(found)
        return table

    def _defs(self, path: str, body: list[ast.stmt], prefix: str) -> Iterator[_Found]:
        """Every function definition that stays bound in `body` and in the classes it defines."""
        for stmt in body:
            if not isinstance(stmt, (*_FUNCS, ast.ClassDef)) or self.member(body, stmt.name) is not stmt:
                continue  # not a definition, or one a later binding replaces
            if isinstance(stmt, _FUNCS):
                yield _Found(path, prefix + stmt.name, stmt)
            elif isinstance(stmt, ast.ClassDef):
                yield from self._defs(path, stmt.body, f"{prefix}{stmt.name}.")

    def _locate(self, path: str, names: Sequence[str]) -> _Found | str:
        """The definition of `names` (classes, then a function) in `path`, following same-file base classes."""
        tree = self.tree(path)
        if isinstance(tree, str):
            return tree
        owner: _Class | None = None
        for depth, name in enumerate(names, 1):
            hit = self._attribute(owner, name) if owner else self._global(tree.body, name)
            if hit is None:
                return f"{path} has no {'.'.join(names[:depth])}"
            if isinstance(hit, str):
                return hit
            stmt, body, qual = hit
            if depth == len(names):
                return _kind_problem(stmt, name, _FUNCS) or _Found(path, qual, stmt)
            if problem := _kind_problem(stmt, name, ast.ClassDef):
                return problem
            owner = _Class(stmt, qual, body, tree.body)
        return f"the id names no test in {path}"

    def _global(self, module: list[ast.stmt], name: str) -> tuple[ast.stmt, list[ast.stmt], str] | None:
        stmt = self.member(module, name)
        return None if stmt is None else (stmt, module, name)

    def _attribute(self, owner: _Class, name: str) -> tuple[ast.stmt, list[ast.stmt], str] | str | None:
        """Where `owner` gets `name` from (its own body or its bases' in resolution order), and its qualname."""
        order = self._mro(owner)
        if order is None:
            return f"{owner.qual} has no consistent method resolution order"
        for cls in order:
            if (stmt := self.member(cls.node.body, name)) is not None:
                return stmt, cls.node.body, f"{cls.qual}.{name}"
        return None

    def _mro(self, cls: _Class, visiting: frozenset[int] = frozenset()) -> list[_Class] | None:
        """The linearisation over this file's classes; bases defined elsewhere are left out."""
        if id(cls.node) in visiting:
            return None
        bases = [base for expr in cls.node.bases if (base := self._base(cls, expr))]
        lines = [self._mro(base, visiting | {id(cls.node)}) for base in bases]
        if any(line is None for line in lines):
            return None
        return _c3([[cls], *lines, bases])

    def _base(self, cls: _Class, expr: ast.expr) -> _Class | None:
        """The class statement a base expression names: in the body the class stands in, then the module."""
        if not isinstance(expr, ast.Name):
            return None
        scopes = [(cls.outer, cls.qual.rpartition(".")[0])] if cls.outer is not cls.module else []
        for body, prefix in [*scopes, (cls.module, "")]:
            stmt = self.member(body, expr.id)
            if stmt is not None:
                qual = f"{prefix}.{expr.id}" if prefix else expr.id
                return _Class(stmt, qual, body, cls.module) if _is(stmt, expr.id, ast.ClassDef) else None
        return None

    def definition(self, path: str, qualname: str) -> _FuncDef:
        """The definition a key names, as `index_tests` found it."""
        tree = self.tree(path)
        stmt: ast.stmt | None = None
        body: list[ast.stmt] = [] if isinstance(tree, str) else tree.body
        for name in qualname.split("."):
            stmt = self.member(body, name)
            body = getattr(stmt, "body", [])
        if not isinstance(stmt, _FUNCS):
            raise ValueError(f"{path} no longer defines {qualname}")
        return stmt


def _swap_edit(src: _Source, node: ast.AST) -> _Edit | None:
    """The rename of a unittest assertion call to its negation, where the same arguments keep their meaning."""
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
        return None
    func = node.func
    swap = _SWAPS.get(func.attr)
    if swap is None or not isinstance(func.value, ast.Name) or not _keeps_meaning(node, swap):
        return None
    end = src.offset(func.end_lineno, func.end_col_offset)
    start = end - len(func.attr)
    return (start, end, swap.to.encode()) if src.data[start:end] == func.attr.encode() else None


def _keeps_meaning(call: ast.Call, swap: _Swap) -> bool:
    if swap.max_args is None and not swap.foreign:
        return True
    if any(isinstance(arg, ast.Starred) for arg in call.args) or any(kw.arg is None for kw in call.keywords):
        return False
    fits = swap.max_args is None or len(call.args) <= swap.max_args
    return fits and not any(kw.arg in swap.foreign for kw in call.keywords)


def _inversions(src: _Source, fn: _FuncDef) -> list[list[_Edit]]:
    """The edits inverting each assertion the test's own frame runs where a failure cannot be swallowed."""
    inversions: list[list[_Edit]] = []
    for node in _frame(fn.body, guarded=True):
        if isinstance(node, ast.Assert):
            start, end = src.span(node.test)
            inversions.append([(start, start, b"not ("), (end, end, b")")])
        elif swap := _swap_edit(src, node):
            inversions.append([swap])
    return inversions


def _raise_instead(src: _Source, ret: ast.Return) -> _Edit:
    """The return replaced by the raise; its line breaks go inside the call so the line count stays."""
    start, end = src.span(ret)
    breaks = src.line_break(ret.lineno) * (ret.end_lineno - ret.lineno)
    return start, end, _RAISE + breaks + b")"


def _raise_at_end(src: _Source, fn: _FuncDef) -> _Edit:
    """The raise as the body's last statement: on a line of its own, or after a ``;`` for a one-line body."""
    first, last = fn.body[0], fn.body[-1]
    start = src.offset(first.lineno, first.col_offset)
    indent = src.data[src.starts[first.lineno - 1] : start]
    if indent.strip():  # the body follows the colon on the def's line
        end = src.offset(last.end_lineno, last.end_col_offset)
        return end, end, b"; " + _RAISE + b")"
    if line_break := src.line_break(last.end_lineno):
        at = src.starts[last.end_lineno]
        return at, at, indent + _RAISE + b")" + line_break
    return len(src.data), len(src.data), src.eol + indent + _RAISE + b")"


def _twin_edits(src: _Source, fn: _FuncDef) -> tuple[list[_Edit], int]:
    """The edits that make `fn` its twin, and how many assertions they invert."""
    if inversions := _inversions(src, fn):
        return [edit for edits in inversions for edit in edits], len(inversions)
    # Nothing to invert: the twin must not finish normally.
    edits = [_raise_instead(src, node) for node in _frame(fn.body) if isinstance(node, ast.Return)]
    if not isinstance(fn.body[-1], ast.Return):
        edits.append(_raise_at_end(src, fn))
    return edits, 0


#: unittest's equality assertions: ``(first, second)``, either of which may be the expected value.
_EQUALITY_METHODS = frozenset(
    {
        "assertEqual",
        "assertEquals",
        "failUnlessEqual",
        "assertListEqual",
        "assertTupleEqual",
        "assertDictEqual",
        "assertSetEqual",
        "assertSequenceEqual",
        "assertMultiLineEqual",
        "assertCountEqual",
        "assertAlmostEqual",
        "assertAlmostEquals",
    }
)
_CONTAINERS = (ast.Tuple, ast.List, ast.Set, ast.Dict)


def _leaves(node: ast.expr) -> list[ast.Constant]:
    """The constants of a literal expected value that a perturbation may change (none: not a literal)."""
    if isinstance(node, ast.Constant):
        value = node.value
        if isinstance(value, bool | str | bytes) or (isinstance(value, int | float) and math.isfinite(value)):
            return [node]
        return []
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd):
        return _leaves(node.operand) if isinstance(node.operand, ast.Constant) else []
    parts = _parts(node)
    if parts is None or not all(_is_literal(part) for part in parts):
        return []
    return [leaf for part in parts for leaf in _leaves(part)]


def _parts(node: ast.expr) -> list[ast.expr] | None:
    """What a container display or a constructor call of literals (``date(2024, 2, 29)``) is made of."""
    if isinstance(node, ast.Dict):
        return [*(key for key in node.keys if key is not None), *node.values] if None not in node.keys else None
    if isinstance(node, _CONTAINERS):
        return list(node.elts)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name | ast.Attribute):
        if any(isinstance(arg, ast.Starred) for arg in node.args) or any(kw.arg is None for kw in node.keywords):
            return None
        return [*node.args, *(kw.value for kw in node.keywords)]
    return None


def _is_literal(node: ast.expr) -> bool:
    if isinstance(node, ast.Constant):
        return True
    if isinstance(node, ast.UnaryOp):
        return isinstance(node.operand, ast.Constant)
    parts = _parts(node)
    return parts is not None and all(_is_literal(part) for part in parts)


def _sides(node: ast.AST) -> tuple[list[ast.expr], bool] | None:
    """The operands of an equality assertion (expected side first, as tests usually write it) and whether it is
    an ``is``; None for any other node."""
    if isinstance(node, ast.Assert) and isinstance(node.test, ast.Compare) and len(node.test.ops) == 1:
        if isinstance(node.test.ops[0], ast.Eq | ast.Is):
            return [node.test.comparators[0], node.test.left], isinstance(node.test.ops[0], ast.Is)
        return None
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
        return None
    if node.func.attr not in _EQUALITY_METHODS or not isinstance(node.func.value, ast.Name) or len(node.args) < 2:
        return None
    if any(isinstance(arg, ast.Starred) for arg in node.args):
        return None
    return [node.args[1], node.args[0]], False


def _expected(node: ast.AST) -> ast.expr | None:
    """The literal expected value of an equality assertion run in a test's frame, if it has one."""
    found = _sides(node)
    if found is None or found[1]:
        return None
    # A literal of constants on either side; a constructor of literals (``date(2024, 2, 29)``) only in the
    # expected place, since a call with literal arguments elsewhere is more likely the code under test.
    plain = next((side for side in found[0] if _leaves(side) and not _calls(side)), None)
    return plain or (found[0][0] if _leaves(found[0][0]) else None)


def _calls(node: ast.expr) -> bool:
    return any(isinstance(inner, ast.Call) for inner in ast.walk(node))


class _Literal(NamedTuple):
    """A literal expected value in the test's body: one of its constants changes."""

    node: ast.expr

    def perturb(self, src: _Source, rng: random.Random) -> tuple[list[_Edit], dict[str, str]] | None:
        edit = _leaf_edit(src, self.node, rng)
        return None if edit is None else ([edit], {})


class _Row(NamedTuple):
    values: list[ast.expr]
    explicit_id: bool


class _Parameter(NamedTuple):
    """The expected column of a ``pytest.mark.parametrize``: the value of every row there changes, and with it
    the id pytest makes from it (`perturb` says how ids are renamed, so a twin's status is found)."""

    names: list[str]
    column: int
    rows: list[_Row]
    explicit_ids: bool

    def perturb(self, src: _Source, rng: random.Random) -> tuple[list[_Edit], dict[str, str]] | None:
        edits: list[_Edit] = []
        renames: dict[str, str] = {}
        for number, row in enumerate(self.rows):
            node = row.values[self.column]
            edit = _leaf_edit(src, node, rng)
            if edit is None:
                return None
            edits.append(edit)
            if self.explicit_ids or row.explicit_id:
                continue
            start, end = src.span(node)
            new_text = (src.data[start : edit[0]] + edit[2] + src.data[edit[1] : end]).decode()
            old = _param_id(self.names, row.values, number)
            new = _param_id(self.names, row.values, number, (self.column, new_text))
            if old is None or new is None:
                return None
            renames[old] = new
        if len(set(renames.values())) != len(renames):
            return None
        return edits, renames


_Candidate = _Literal | _Parameter


def _leaf_edit(src: _Source, node: ast.expr, rng: random.Random) -> _Edit | None:
    """The edit changing one constant of a literal (`_leaves`) to another of its type; None where none can."""
    leaves = _leaves(node)
    rng.shuffle(leaves)
    for leaf in leaves:
        start, end = src.span(leaf)
        new = _perturbed_text(src.data[start:end].decode(), leaf.value, rng)
        if new is not None:
            return start, end, new.encode()
    return None


def _param_id(
    names: list[str], values: list[ast.expr], number: int, changed: tuple[int, str] | None = None
) -> str | None:
    """The id pytest gives a parameter set (``1900-False``, ``d0-expected0``), with the source of one column
    replaced where `changed` says (its index, its text); None where it could hold what an id escapes or a log cuts."""
    parts = []
    for column, (name, node) in enumerate(zip(names, values, strict=True)):
        try:
            value = ast.literal_eval(changed[1] if changed and changed[0] == column else node)
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            parts.append(f"{name}{number}")
            continue
        if isinstance(value, str):
            if not value or not (value.isascii() and value.isprintable()) or any(c.isspace() for c in value):
                return None
            parts.append(value)
        elif value is None or isinstance(value, int | float | complex):
            parts.append(str(value))
        elif isinstance(value, bytes):
            return None
        else:
            parts.append(f"{name}{number}")
    return "-".join(parts)


def _parametrize(fn: _FuncDef) -> tuple[list[str], list[_Row], bool] | None:
    """(argument names, rows, explicit ids) of the test's only ``parametrize`` decorator, if it is a literal one."""
    found = [d for d in fn.decorator_list if isinstance(d, ast.Call) and _called_name(d) == "parametrize"]
    if len(found) != 1 or not found[0].args:
        return None
    call = found[0]
    keywords = {kw.arg: kw.value for kw in call.keywords}
    if "indirect" in keywords or None in keywords:
        return None
    ids = keywords.get("ids")
    if ids is not None and not isinstance(ids, ast.List | ast.Tuple):
        return None  # ids made by a function: not known here
    head = call.args[0]
    if isinstance(head, ast.Constant) and isinstance(head.value, str):
        names = [name.strip() for name in head.value.split(",") if name.strip()]
    elif isinstance(head, ast.List | ast.Tuple) and all(isinstance(e, ast.Constant) for e in head.elts):
        names = [e.value for e in head.elts if isinstance(e.value, str)]
    else:
        return None
    table = call.args[1] if len(call.args) > 1 else keywords.get("argvalues")
    if not isinstance(table, ast.List | ast.Tuple) or not table.elts or not names:
        return None
    rows = [_row(element, len(names)) for element in table.elts]
    if any(row is None for row in rows):
        return None
    return names, rows, ids is not None  # type: ignore[return-value]


def _row(element: ast.expr, width: int) -> _Row | None:
    explicit = False
    if isinstance(element, ast.Call) and _called_name(element) == "param":
        explicit = any(kw.arg == "id" for kw in element.keywords)
        values = list(element.args)
    elif width == 1:
        values = [element]
    elif isinstance(element, ast.Tuple | ast.List):
        values = list(element.elts)
    else:
        return None
    if len(values) != width or any(isinstance(v, ast.Starred) for v in values):
        return None
    return _Row(values, explicit)


def _expected_names(fn: _FuncDef) -> list[tuple[str, bool]]:
    """Names compared as the expected side of an equality (or an ``is``) in the test's own frame."""
    found: list[tuple[str, bool]] = []
    for node in _frame(fn.body, guarded=True):
        if (sides := _sides(node)) is not None:
            found += [(side.id, sides[1]) for side in sides[0] if isinstance(side, ast.Name)][:1]
    return found


def _parameters(fn: _FuncDef) -> list[_Parameter]:
    table = _parametrize(fn)
    if table is None:
        return []
    names, rows, explicit = table
    loads = _loads(fn)
    found: list[_Parameter] = []
    for name, identity in dict.fromkeys(_expected_names(fn)):
        if name not in names or loads.get(name) != 1:
            continue  # a parameter read elsewhere too is an input as well: changing it may change the result
        column = names.index(name)
        values = [row.values[column] for row in rows]
        if identity and not all(isinstance(v, ast.Constant) and isinstance(v.value, bool) for v in values):
            continue  # ``is`` keeps its meaning under a perturbation only for True/False
        if all(_leaves(v) for v in values) and column not in {p.column for p in found}:
            found.append(_Parameter(names, column, rows, explicit))
    return found


def _candidates(fn: _FuncDef) -> list[_Candidate]:
    """The literal expected values of the test: in its own frame, where a failure cannot be swallowed, in order,
    then the expected columns of its parametrize table."""
    body: list[_Candidate] = [
        _Literal(found) for node in _frame(fn.body, guarded=True) if (found := _expected(node)) is not None
    ]
    return body + _named(fn) + list(_parameters(fn))


def _loads(fn: _FuncDef) -> dict[str, int]:
    """How often each name is read in the test (nested scopes included)."""
    loads: dict[str, int] = {}
    for node in ast.walk(fn):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
            loads[node.id] = loads.get(node.id, 0) + 1
    return loads


def _named(fn: _FuncDef) -> list[_Candidate]:
    """Literals bound to a name once (``expected = [...]``) and read once: as the expected side of an equality."""
    loads = _loads(fn)
    stores: dict[str, int] = {arg.arg: 1 for arg in ast.walk(fn.args) if isinstance(arg, ast.arg)}
    for node in ast.walk(fn):
        if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
            stores[node.id] = stores.get(node.id, 0) + 1
    assigned = {
        node.targets[0].id: node.value
        for node in _frame(fn.body, guarded=True)
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)
    }
    found: list[_Candidate] = []
    for name, is_identity in _expected_names(fn):
        value = assigned.get(name)
        if value is None or is_identity or loads.get(name) != 1 or stores.get(name) != 1:
            continue
        if _leaves(value) and not _calls(value):
            found.append(_Literal(value))
    return found


def _perturbed_text(text: str, value: object, rng: random.Random) -> str | None:
    """`text` (one constant's source) with one character changed so that it reads as another value of its type;
    a string whose every character is part of an escape (or none is there) gets one more before its closing quote."""
    if isinstance(value, bool):
        return "False" if value else "True"
    positions = [i for i in range(len(text)) if "\\" not in text[max(0, i - 9) : i + 1]]
    if isinstance(value, int | float):
        digits = [i for i in positions if text[i].isdigit()]
        # The most significant digit: a change there also fails an almost-equal comparison.
        positions = digits[:1] if isinstance(value, float) else digits
    rng.shuffle(positions)
    edits = [(at, 1) for at in positions]
    if isinstance(value, str | bytes):
        edits.append((len(text) - (3 if text.endswith(('"""', "'''")) else 1), 0))
    for at, width in edits:
        for char in _replacements(text[at] if width else "", rng):
            new = text[:at] + char + text[at + width :]
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    parsed = ast.literal_eval(new)
            except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
                continue
            if type(parsed) is type(value) and parsed != value:
                return new
    return None


def _replacements(char: str, rng: random.Random) -> list[str]:
    """Characters of the same kind as `char` (another digit for a digit, ...), in random order."""
    if char.isdigit():
        pool = "0123456789"
    elif char.isascii() and char.isupper():
        pool = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
    else:
        pool = "abcdefghijklmnopqrstuvwxyz"
    chars = [c for c in pool if c != char]
    rng.shuffle(chars)
    return chars


def _perturbation(src: _Source, fn: _FuncDef, choice: Choice) -> tuple[list[_Edit], dict[str, str]] | None:
    """The edits of the chosen perturbation and the parameter ids they rename; None where it cannot be made."""
    candidates = _candidates(fn)
    if not candidates:
        return None
    return candidates[choice.literal % len(candidates)].perturb(src, random.Random(choice.seed))


def _apply(data: bytes, edits: Iterable[_Edit]) -> bytes:
    parts, pos = [], 0
    for start, end, text in sorted(edits, key=lambda edit: edit[:2]):
        parts += [data[pos:start], text]
        pos = end
    return b"".join([*parts, data[pos:]])


def files_of(test_ids: Iterable[str], paths: Collection[str]) -> set[str]:
    """The files among `paths` (a tree's Python files) that graded test ids can name: a pytest id's file, a
    unittest/Django id's module (any of its splits into module and classes). Bare names name no file."""
    tests = _Tests(dict.fromkeys(paths, ""))
    found: set[str] = set()
    for test_id in test_ids:
        if "::" in test_id:
            found.update(tests.matching(test_id.partition("::")[0]))
        elif match := _UNITTEST.fullmatch(test_id):
            dotted = match["where"].split(".")
            for split in range(len(dotted) - 1, 0, -1):
                rel = "/".join(dotted[:split])
                found.update(tests.matching(rel + ".py") + tests.matching(rel + "/__init__.py"))
    return found


def index_tests(test_ids: Iterable[str], sources: Mapping[str, str]) -> TwinIndex:
    """Resolve graded test ids (pytest, unittest/Django, docstring lines, bare names) to their definitions."""
    tests = _Tests(sources)
    defs: dict[str, TestDef] = {}
    of_test: dict[str, str] = {}
    missing: dict[str, str] = {}
    for test_id in test_ids:
        found = tests.resolve(test_id)
        if isinstance(found, str):
            missing[test_id] = found
            continue
        if found.key not in defs:
            _, inverted = _twin_edits(tests.text(found.path), found.node)
            perturbable = len(_candidates(found.node))
            defs[found.key] = TestDef(found.key, found.path, found.qualname, inverted, perturbable)
        of_test[test_id] = found.key
    return TwinIndex(defs, of_test, missing)


def choose(index: TwinIndex, rng: random.Random) -> dict[str, Choice]:
    """A random perturbation for each definition that has a literal expected value."""
    return {
        key: Choice(rng.randrange(d.perturbable), rng.getrandbits(64)) for key, d in index.defs.items() if d.perturbable
    }


def render(
    sources: Mapping[str, str], index: TwinIndex, keys: Collection[str], choices: Mapping[str, Choice] | None = None
) -> dict[str, str]:
    """Every source, with the definitions of `keys` replaced by their twins and all other bytes kept: perturbed
    as `choices` says for those it names, inverted for the others."""
    tests = _Tests(sources)
    chosen: dict[str, list[str]] = {}
    for key in dict.fromkeys(keys):
        chosen.setdefault(index.defs[key].path, []).append(key)
    rendered = dict(sources)
    for path, def_keys in chosen.items():
        src = tests.text(path)
        edits: list[_Edit] = []
        for key in def_keys:
            fn = tests.definition(path, index.defs[key].qualname)
            choice = (choices or {}).get(key)
            perturbed = _perturbation(src, fn, choice) if choice is not None else None
            edits += perturbed[0] if perturbed is not None else _twin_edits(src, fn)[0]
        rendered[path] = src.restore(_apply(src.data, edits))
    return rendered


def renamed(
    sources: Mapping[str, str], index: TwinIndex, keys: Collection[str], choices: Mapping[str, Choice]
) -> dict[str, str]:
    """Graded test ids of `keys` whose twin runs under another id (a parameter in it changed): id -> twin's id."""
    tests = _Tests(sources)
    found: dict[str, str] = {}
    wanted = set(keys)
    for test_id, key in index.of_test.items():
        if key not in wanted or key not in choices or "[" not in test_id:
            continue
        test_def = index.defs[key]
        perturbed = _perturbation(
            tests.text(test_def.path), tests.definition(test_def.path, test_def.qualname), choices[key]
        )
        head, _, params = test_id.partition("[")
        if perturbed is not None and params.endswith("]") and params[:-1] in perturbed[1]:
            found[test_id] = f"{head}[{perturbed[1][params[:-1]]}]"
    return found


#: git's C-style escapes; other control characters are written in octal.
_QUOTED = {
    '"': '\\"',
    "\\": "\\\\",
    "\a": "\\a",
    "\b": "\\b",
    "\t": "\\t",
    "\n": "\\n",
    "\v": "\\v",
    "\f": "\\f",
    "\r": "\\r",
}


def _quote(name: str) -> str:
    """A path as git writes it with core.quotepath off: C-quoted only if it holds quotes or control characters."""

    def escape(char: str) -> str:
        return _QUOTED.get(char) or (f"\\{ord(char):03o}" if ord(char) < 0x20 or char == "\x7f" else char)

    quoted = "".join(map(escape, name))
    return name if quoted == name else f'"{quoted}"'


def _lines(text: str) -> list[str]:
    """Lines as git counts them: split at ``\\n`` only, each keeping it (the last may lack it)."""
    *lines, tail = text.split("\n")
    return [line + "\n" for line in lines] + ([tail] if tail else [])


def _range(start: int, stop: int) -> str:
    # An empty range is written as the line before it.
    return f"{start + 1 if stop > start else start},{stop - start}"


def _diff_line(mark: str, line: str) -> str:
    return mark + line if line.endswith("\n") else f"{mark}{line}\n\\ No newline at end of file\n"


def _hunks(old: list[str], new: list[str]) -> Iterator[str]:
    matcher = difflib.SequenceMatcher(None, old, new)
    for group in matcher.get_grouped_opcodes(3):
        yield f"@@ -{_range(group[0][1], group[-1][2])} +{_range(group[0][3], group[-1][4])} @@\n"
        for tag, i1, i2, j1, j2 in group:
            if tag == "equal":
                yield from (_diff_line(" ", line) for line in old[i1:i2])
                continue
            yield from (_diff_line("-", line) for line in old[i1:i2])
            yield from (_diff_line("+", line) for line in new[j1:j2])


def _file_diff(path: str, old: str | None, new: str) -> str:
    a, b = _quote(f"a/{path}"), _quote(f"b/{path}")
    head = [f"diff --git {a} {b}\n"] + (["new file mode 100644\n"] if old is None else [])
    old_lines, new_lines = _lines(old or ""), _lines(new)
    if old_lines == new_lines:  # a new empty file: git writes no hunk
        return "".join(head)
    tab = "\t" if " " in path else ""  # as git, so that patch(1) knows where a name with spaces ends
    head += [f"--- {a}{tab}\n" if old is not None else "--- /dev/null\n", f"+++ {b}{tab}\n"]
    return "".join(head + list(_hunks(old_lines, new_lines)))


def make_patch(base: Mapping[str, str | None], new: Mapping[str, str]) -> str:
    """A patch `git apply` takes from a tree holding `base` (None: file absent) to one holding `new`.

    Files come in sorted path order, each changed one with a section and unchanged ones with none, so
    the patches of two passes differ only where their twinned definitions differ.
    """
    return "".join(_file_diff(path, base.get(path), new[path]) for path in sorted(new) if base.get(path) != new[path])
