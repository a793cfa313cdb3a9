"""What one file's names and literal expressions stand for, read from every parsed piece of its new side: import
aliases (``from os import _exit as leave``), names bound once (``run = exec``), dotted names reached through
``getattr``, ``sys.modules`` or ``importlib``, and the strings its literals fold to. A forger renames and builds
what a rule looks for; each rule asks `Names` instead of reading the bare syntax."""

from __future__ import annotations

import ast
import operator
from collections.abc import Iterable, Iterator, Sequence

from swe_gym.grading.patch_scan.folding import DECODERS, MAX_FOLD, METHODS, WIDE, Folded

_MAX_FOLD_STEPS = 200_000  # expressions one file may fold

_KNOWN_MODULES = frozenset(
    "sys os inspect gc atexit signal threading traceback importlib builtins operator unittest pytest _pytest shutil "
    "base64 codecs zlib bz2 lzma gzip binascii marshal pickle linecache runpy ctypes io pathlib tokenize doctest "
    "faulthandler types".split()
)
#: Builtins a name may stand for (``run = exec``), as a module may.
_ALIASED_BUILTINS = frozenset({"exec", "eval", "compile", "__import__", "getattr", "setattr", "open", "vars"})
#: Calls that import a module by name: ``importlib.import_module("m")`` stands for ``m``.
IMPORTERS = frozenset({"importlib.import_module", "__import__", "builtins.__import__", "importlib.__import__"})


def pairs(targets: Sequence[ast.AST], value: ast.AST | None) -> Iterator[tuple[ast.AST, ast.AST | None]]:
    """Each assigned target with its own value: ``__eq__, __ne__ = f, g`` pairs ``__eq__`` with ``f``."""
    for target in targets:
        if (
            isinstance(target, ast.Tuple | ast.List)
            and isinstance(value, ast.Tuple | ast.List)
            and len(target.elts) == len(value.elts)
            and not any(isinstance(element, ast.Starred) for element in target.elts)
        ):
            yield from zip(target.elts, value.elts, strict=True)
        else:
            yield target, value


def under(name: str, prefixes: Iterable[str]) -> bool:
    """Whether the dotted ``name`` is one of ``prefixes`` or inside one."""
    return any(name == p or name.startswith(p + ".") for p in prefixes)


class Names:
    """The bindings of one Python file and what its names, dotted names and literals resolve to."""

    def __init__(self) -> None:
        self.aliases: dict[str, str] = {}
        self.bindings: dict[str, list[ast.expr]] = {}
        self.locals: set[str] = set()
        self.funcs: dict[str, list[ast.FunctionDef | ast.AsyncFunctionDef]] = {}
        self.parents: dict[int, ast.AST] = {}
        self.folded: dict[str, Folded | None] = {}
        self.fold_steps = 0

    # -- what the file binds --

    def collect(self, tree: ast.AST) -> None:
        """Read the bindings of one parsed piece (every piece is collected before any rule asks)."""
        for node in ast.walk(tree):
            for child in ast.iter_child_nodes(node):
                self.parents[id(child)] = node
            if isinstance(node, ast.Import):
                for alias in node.names:
                    root = alias.name.split(".")[0]
                    self.aliases[alias.asname or root] = alias.name if alias.asname else root
            elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
                for alias in node.names:
                    if alias.name != "*":
                        self.aliases[alias.asname or alias.name] = f"{node.module}.{alias.name}"
            elif isinstance(node, ast.Assign | ast.AnnAssign) and node.value is not None:
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                for target in targets:
                    if isinstance(target, ast.Name):
                        self.bindings.setdefault(target.id, []).append(node.value)
            elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                self.funcs.setdefault(node.name, []).append(node)
                args = node.args
                every = [*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg]
                self.locals.update(a.arg for a in every if a is not None)
            elif isinstance(node, ast.For | ast.comprehension) and isinstance(node.target, ast.Name):
                self.locals.add(node.target.id)

    def resolve_aliases(self) -> None:
        """A name bound once to a module's attribute (``run = exec``, ``frame = sys._getframe``) stands for it;
        any other bound name is a local, never a module (``operator = ...`` is not the ``operator`` module)."""
        for name, values in self.bindings.items():
            if name in self.aliases:
                continue
            resolved = self.qualname(values[0]) if len(values) == 1 else None
            roots = _KNOWN_MODULES | _ALIASED_BUILTINS | {value.split(".")[0] for value in self.aliases.values()}
            if resolved and resolved.split(".")[0] in roots:
                self.aliases[name] = resolved
            else:
                self.locals.add(name)

    def function(self, value: ast.AST) -> ast.AST | None:
        """The function ``value`` binds: a lambda, or the name of a function the file defines once."""
        if isinstance(value, ast.Lambda):
            return value
        if isinstance(value, ast.Name) and len(self.funcs.get(value.id, [])) == 1:
            return self.funcs[value.id][0]
        return None

    # -- names --

    def _name(self, name: str) -> str:
        if name in self.aliases:
            return self.aliases[name]
        if name in ("__builtins__", "__builtin__"):
            return "builtins"
        return f"~{name}" if name in self.locals else name

    def qualname(self, node: ast.AST, depth: int = 0) -> str | None:
        """The dotted name ``node`` stands for, through import aliases, ``getattr`` with a literal name,
        ``sys.modules[...]``, ``importlib.import_module(...)`` and ``X.__dict__[...]``."""
        parts: list[str] = []
        while isinstance(node, ast.Attribute):
            parts.append(node.attr)
            node = node.value
        if isinstance(node, ast.Name):
            base: str | None = self._name(node.id)
        elif isinstance(node, ast.Call) and depth < 4:
            base = self._call_qualname(node, depth + 1)
        elif isinstance(node, ast.Subscript) and depth < 4:
            base = self._subscript_qualname(node, depth + 1)
        else:
            return None
        return ".".join([base, *reversed(parts)]) if base else None

    def _call_qualname(self, node: ast.Call, depth: int) -> str | None:
        func = self.qualname(node.func, depth)
        args = node.args
        if func in ("getattr", "builtins.getattr") and len(args) >= 2 and (attr := self.fold_str(args[1])):
            base = self.qualname(args[0], depth)
            return f"{base}.{attr}" if base else None
        if func in IMPORTERS | {"sys.modules.get"} and args and (module := self.fold_str(args[0])):
            fromlist = len(args) > 3 or any(k.arg == "fromlist" for k in node.keywords)
            return module.split(".")[0] if func.endswith("__import__") and not fromlist else module
        if func in ("vars", "builtins.vars") and len(args) == 1:
            base = self.qualname(args[0], depth)
            return f"{base}.__dict__" if base else None
        return None

    def _subscript_qualname(self, node: ast.Subscript, depth: int) -> str | None:
        key = self.fold_str(node.slice)
        base = self.qualname(node.value, depth)
        if not key or not base:
            return None
        if base == "sys.modules":
            return key
        if base.endswith(".__dict__"):
            return f"{base.removesuffix('.__dict__')}.{key}"
        return f"builtins.{key}" if base == "builtins" else None

    # -- folding literals --

    def fold_str(self, node: ast.AST) -> str | None:
        folded = self.fold(node)
        return folded[0] if folded and isinstance(folded[0], str) else None

    def fold(self, node: ast.AST, env: dict[str, Folded] | None = None, depth: int = 0) -> Folded | None:
        """The literal value ``node`` always builds (concatenations, joins, f-strings, decoders), or None."""
        self.fold_steps += 1
        if depth > 24 or self.fold_steps > _MAX_FOLD_STEPS:
            return None
        try:
            folded = self._fold_node(node, env or {}, depth + 1)
        except Exception:  # a literal that does not fold is simply not folded
            return None
        if folded is not None and isinstance(folded[0], str | bytes | list) and len(folded[0]) > MAX_FOLD:
            return None
        return folded

    def _fold_node(self, node: ast.AST, env: dict[str, Folded], depth: int) -> Folded | None:
        if isinstance(node, ast.Constant):
            ok = isinstance(node.value, str | bytes | int) and not isinstance(node.value, bool)
            return (node.value, False) if ok else None
        if isinstance(node, ast.Name):
            if node.id in env:
                return env[node.id]
            if node.id not in self.folded:  # each name folds once: chains of doubling names stay linear
                values = self.bindings.get(node.id, [])
                self.folded[node.id] = None  # a name whose value uses itself does not fold
                self.folded[node.id] = self.fold(values[0], {}, depth) if len(values) == 1 else None
            return self.folded[node.id]
        if isinstance(node, ast.JoinedStr):
            return self._fold_fstring(node, env, depth)
        if isinstance(node, ast.BinOp):
            return self._fold_binop(node, env, depth)
        if isinstance(node, ast.Subscript):
            return self._fold_subscript(node, env, depth)
        if isinstance(node, ast.List | ast.Tuple):
            items = [self.fold(item, env, depth) for item in node.elts]
            return None if None in items else ([i[0] for i in items], any(i[1] for i in items))  # type: ignore[index]
        if isinstance(node, ast.GeneratorExp | ast.ListComp):
            return self._fold_comprehension(node, env, depth)
        if isinstance(node, ast.Call):
            return self._fold_call(node, env, depth)
        return None

    def _fold_fstring(self, node: ast.JoinedStr, env: dict[str, Folded], depth: int) -> Folded | None:
        out, decoded = [], False
        for value in node.values:
            inner = value.value if isinstance(value, ast.FormattedValue) else value
            if isinstance(value, ast.FormattedValue) and value.format_spec is not None:
                return None
            folded = self.fold(inner, env, depth)
            if folded is None or not isinstance(folded[0], str | int):
                return None
            out.append(str(folded[0]))
            decoded |= folded[1]
        return "".join(out), decoded

    def _fold_binop(self, node: ast.BinOp, env: dict[str, Folded], depth: int) -> Folded | None:
        left = self.fold(node.left, env, depth)
        right = self.fold(node.right, env, depth) if left is not None else None
        if left is None or right is None:
            return None
        a, b = left[0], right[0]
        if isinstance(node.op, ast.Mult) and isinstance(b, int) and len(a) * b > MAX_FOLD:
            return None
        op = {ast.Add: operator.add, ast.Mod: operator.mod, ast.Mult: operator.mul}.get(type(node.op))
        if op is None or (isinstance(node.op, ast.Mod) and not (isinstance(a, str) and not WIDE.search(a))):
            return None
        return op(a, tuple(b) if isinstance(b, list) else b), left[1] or right[1]

    def _fold_subscript(self, node: ast.Subscript, env: dict[str, Folded], depth: int) -> Folded | None:
        value = self.fold(node.value, env, depth)
        if value is None:
            return None
        index = node.slice
        if isinstance(index, ast.Slice):
            bounds = [
                self.fold(b, env, depth) if b is not None else (None, False)
                for b in (index.lower, index.upper, index.step)
            ]
            if None in bounds:
                return None
            lower, upper, step = (b[0] for b in bounds)  # type: ignore[index]
            return value[0][slice(lower, upper, step)], value[1] or (step is not None and step < 0)
        key = self.fold(index, env, depth)
        return (value[0][key[0]], value[1]) if key is not None else None

    def _fold_comprehension(
        self, node: ast.GeneratorExp | ast.ListComp, env: dict[str, Folded], depth: int
    ) -> Folded | None:
        if len(node.generators) != 1 or node.generators[0].ifs or not isinstance(node.generators[0].target, ast.Name):
            return None
        source = self.fold(node.generators[0].iter, env, depth)
        if source is None or len(source[0]) > 100_000:
            return None
        name = node.generators[0].target.id
        out, decoded = [], source[1]
        for item in source[0]:
            folded = self.fold(node.elt, {**env, name: (item, source[1])}, depth)
            if folded is None:
                return None
            out.append(folded[0])
            decoded |= folded[1]
        return out, decoded

    def _fold_call(self, node: ast.Call, env: dict[str, Folded], depth: int) -> Folded | None:
        args = [self.fold(arg, env, depth) for arg in node.args]
        if None in args or node.keywords:
            return None
        values = [a[0] for a in args]  # type: ignore[index]
        decoded = any(a[1] for a in args)  # type: ignore[index]
        if isinstance(node.func, ast.Attribute) and node.func.attr in METHODS:
            receiver = self.fold(node.func.value, env, depth)
            if receiver is not None and not (node.func.attr == "format" and WIDE.search(str(receiver[0]))):
                return METHODS[node.func.attr](receiver[0], *values), decoded or receiver[1]
        func = self.qualname(node.func)
        if func in DECODERS:
            return DECODERS[func](*values), True
        if func == "map" and len(node.args) == 2 and self.qualname(node.args[0]) == "chr":
            return [chr(v) for v in values[1]], True
        if func in ("bytes", "bytearray") and len(values) == 1 and isinstance(values[0], list):
            return bytes(values[0]), True
        if func in ("str", "bytes") and values and isinstance(values[0], str | bytes):
            return (str(values[0]) if func == "str" else bytes(*values)), decoded
        return None
