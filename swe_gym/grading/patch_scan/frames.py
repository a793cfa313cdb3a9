"""The ``frame-reading`` rule: a caller's frame (``sys._getframe``, ``inspect.stack``, ``f_back``) *paired*, in one
function, with reading that frame: a local by a literal name or a scan of ``f_locals``, its source, its name or
file compared with a ``"test"`` literal. A forger reads the calling test to answer what it expects; the
stack-level walks of libraries (``f_globals``, path prefixes, locals handed on as a namespace) are no such read."""

from __future__ import annotations

import ast
from collections.abc import Iterator

from swe_gym.grading.patch_scan.dynamic import EXEC
from swe_gym.grading.patch_scan.names import Names
from swe_gym.grading.patch_scan.writes import FILE_OPENERS

_FRAME_SOURCES = frozenset(
    "sys._getframe sys._current_frames inspect.currentframe inspect.stack inspect.getouterframes inspect.trace "
    "traceback.extract_stack traceback.walk_stack traceback.format_stack traceback.print_stack "
    "traceback.StackSummary.extract".split()
)
_FRAME_WORDS = frozenset({q.rsplit(".", 1)[-1] for q in _FRAME_SOURCES} | {"f_back"})
_FRAME_ATTRS = _FRAME_WORDS | {"__dict__", "import_module"}
_SOURCE_READERS = frozenset(
    "inspect.getsource inspect.getsourcelines inspect.findsource inspect.getblock linecache.getline "
    "linecache.getlines linecache.updatecache".split()
)
_FRAME_FILES = frozenset({"co_filename", "filename", "f_code"})
_FRAME_NAMES = frozenset({"co_name", "co_filename", "function", "filename"})


class Frames:
    """The rule over one file's parsed pieces, each read scope by scope (the module level, then each function)."""

    def __init__(self, names: Names) -> None:
        self.names = names

    def of_tree(self, tree: ast.Module) -> Iterator[tuple[list[ast.AST], str]]:
        """Each scope of ``tree`` that reads a caller's frame: its sinks and sources, and why."""
        if not self._may_frame(tree):
            return
        scopes: list[list[ast.AST]] = [list(self._module_level(tree))]
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
                scopes.append(list(ast.walk(node)))
        for nodes in scopes:
            if read := self._scope(nodes):
                yield read

    def _may_frame(self, tree: ast.Module) -> bool:
        """Whether a frame can be had here at all (the pairing walks every function again)."""
        words = _FRAME_WORDS
        names = {name for name, target in self.names.aliases.items() if target in _FRAME_SOURCES}
        names |= {"getattr", "vars", "__import__"}  # a frame source found by a built name
        return any(
            (isinstance(node, ast.Attribute) and node.attr in _FRAME_ATTRS)
            or (isinstance(node, ast.Name) and node.id in names)
            or (isinstance(node, ast.Constant) and node.value in words)
            for node in ast.walk(tree)
        )

    def _module_level(self, tree: ast.Module) -> Iterator[ast.AST]:
        pending: list[ast.AST] = list(tree.body)
        while pending:
            node = pending.pop()
            yield node
            if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
                pending.extend(ast.iter_child_nodes(node))

    def _scope(self, nodes: list[ast.AST]) -> tuple[list[ast.AST], str] | None:
        """The frame read in one scope's ``nodes``: the sinks and sources to flag, and why; or None."""
        sources = [(n, s) for n in nodes if (s := self._frame_source(n))]
        if not sources:
            return None
        summaries = any(s.startswith("traceback.") for _, s in sources)
        bindings = {
            t.id: n.value for n in nodes if isinstance(n, ast.Assign) for t in n.targets if isinstance(t, ast.Name)
        }
        sinks = [(n, s) for n in nodes if (s := self._frame_sink(n, bindings, summaries, nodes))]
        if sinks:
            reason = f"reads the caller's {sinks[0][1]} through {sources[0][1]}"
            return [n for n, _ in sinks] + [n for n, _ in sources], reason
        return None

    def _frame_source(self, node: ast.AST) -> str | None:
        if isinstance(node, ast.Attribute) and node.attr == "f_back":
            return "f_back"
        if isinstance(node, ast.Call) and (func := self.names.qualname(node.func)) in _FRAME_SOURCES:
            return func
        return None

    def _frame_sink(
        self, node: ast.AST, bindings: dict[str, ast.expr], summaries: bool, nodes: list[ast.AST]
    ) -> str | None:
        if isinstance(node, ast.Attribute) and node.attr == "f_locals":
            return self._locals_read(node, nodes)
        if isinstance(node, ast.Attribute) and (node.attr == "code_context" or (summaries and node.attr == "line")):
            return f"source ({node.attr})"
        if isinstance(node, ast.Call):
            func = self.names.qualname(node.func) or ""
            if func in _SOURCE_READERS:
                return f"source ({func})"
            reads = func in FILE_OPENERS or (
                isinstance(node.func, ast.Attribute) and node.func.attr in ("read_text", "read_bytes")
            )
            if reads and self._frame_file(node, bindings):
                return "source file"
            if isinstance(node.func, ast.Attribute) and node.func.attr in ("startswith", "endswith", "match", "search"):
                if self._names_test(node, bindings):
                    return "name, matched against 'test'"
        if isinstance(node, ast.Compare) and self._names_test(node, bindings):
            return "name, compared with 'test'"
        return None

    def _locals_read(self, node: ast.AST, nodes: list[ast.AST], depth: int = 0) -> str | None:
        """How ``node`` (a frame's ``f_locals``) is read: a local named by a literal, or a scan of them all. A
        namespace handed on (six's ``exec_``, numpy's ``bmat``, pandas' scope) or a lookup by a computed name
        (multipledispatch's ``f_locals.get(func.__name__)``) is not read here."""
        parent = self.names.parents.get(id(node))
        if isinstance(parent, ast.Subscript) and parent.value is node:
            return f"local {key!r}" if (key := self.names.fold_str(parent.slice)) else None
        if isinstance(parent, ast.Attribute) and isinstance(call := self.names.parents.get(id(parent)), ast.Call):
            if parent.attr in ("values", "items", "keys"):
                return "locals (a scan of them)"
            if parent.attr in ("get", "pop", "setdefault", "__getitem__") and call.args:
                return f"local {key!r}" if (key := self.names.fold_str(call.args[0])) else None
            return self._locals_read(call, nodes, depth + 1) if parent.attr == "copy" and depth < 3 else None
        if isinstance(parent, ast.Call) and node in parent.args:
            func = self.names.qualname(parent.func) or ""
            if func in ("iter", "list", "tuple", "set", "sorted", "reversed", "enumerate", "zip", "filter", "map"):
                return "locals (a scan of them)"
            if func in EXEC and parent.args[0] is not node and self.names.fold(parent.args[0]) is not None:
                return "locals, in a literal it evaluates"
            return self._locals_read(parent, nodes, depth + 1) if func == "dict" and depth < 3 else None
        if isinstance(parent, ast.For | ast.comprehension) and parent.iter is node:
            return "locals (a scan of them)"
        if isinstance(parent, ast.Compare) and node in parent.comparators and self.names.fold_str(parent.left):
            return f"local {self.names.fold_str(parent.left)!r}"
        if isinstance(parent, ast.Assign) and parent.value is node and depth < 3:
            names = {t.id for t in parent.targets if isinstance(t, ast.Name)}
            uses = (n for n in nodes if isinstance(n, ast.Name) and n.id in names and isinstance(n.ctx, ast.Load))
            return next((found for use in uses if (found := self._locals_read(use, nodes, depth + 1))), None)
        return None

    def _frame_file(self, node: ast.AST, bindings: dict[str, ast.expr], depth: int = 0) -> bool:
        for child in ast.walk(node):
            if isinstance(child, ast.Attribute) and child.attr in _FRAME_FILES:
                return True
            if isinstance(child, ast.Call) and self.names.qualname(child.func) in (
                "inspect.getfile",
                "inspect.getsourcefile",
            ):
                return True
            if isinstance(child, ast.Name) and child.id in bindings and depth < 3 and child is not node:
                if self._frame_file(bindings[child.id], bindings, depth + 1):
                    return True
        return False

    def _names_test(self, node: ast.AST, bindings: dict[str, ast.expr]) -> bool:
        names = literals = False
        for child in ast.walk(node):
            if isinstance(child, ast.Attribute) and child.attr in _FRAME_NAMES:
                names = True
            elif isinstance(child, ast.Constant) and isinstance(child.value, str) and "test" in child.value.lower():
                literals = True
        return names and literals
