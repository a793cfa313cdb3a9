"""What makes code run from data, for the ``dynamic-code`` rule: the calls that run or load code, a pickle's
imports read with pickletools (nothing of it runs), a decoder somewhere in an argument, and a non-Python file of
the same patch named by a literal (code smuggled as data)."""

from __future__ import annotations

import ast
import pickletools

from swe_gym.grading.patch_scan.folding import DECODERS
from swe_gym.grading.patch_scan.names import Names

EXEC = frozenset({"exec", "eval", "compile", "builtins.exec", "builtins.eval", "builtins.compile"})
LOADERS = frozenset({"marshal.loads", "pickle.loads", "_pickle.loads", "dill.loads", "cloudpickle.loads"})
FILE_RUNNERS = frozenset(
    {"runpy.run_path", "importlib.util.spec_from_file_location", "importlib.machinery.SourceFileLoader"}
)

_SAFE_PICKLE_MODULES = frozenset({"copyreg", "copy_reg", "collections", "datetime", "decimal", "fractions", "_codecs"})
_SAFE_PICKLE_BUILTINS = frozenset(
    "set frozenset bytearray complex slice range object list dict tuple int float str bytes bool".split()
)


def _pickle_globals(data: bytes) -> set[str]:
    """The ``module.name`` callables a pickle imports, read with pickletools (nothing of it runs)."""
    found: set[str] = set()
    strings: list[str] = []
    try:
        for opcode, arg, _ in pickletools.genops(data):
            if opcode.name in ("GLOBAL", "INST"):
                found.add(str(arg).replace(" ", "."))
            elif opcode.name == "STACK_GLOBAL" and len(strings) >= 2:
                found.add(f"{strings[-2]}.{strings[-1]}")
            elif isinstance(arg, str):
                strings.append(arg)
    except Exception:  # a pickle that does not parse raises where it is loaded, running nothing
        return found
    return found


def _safe_global(name: str, own: set[str]) -> bool:
    module, _, attr = name.rpartition(".")
    root = module.split(".")[0]
    if root in ("builtins", "__builtin__"):
        return attr in _SAFE_PICKLE_BUILTINS
    return root in _SAFE_PICKLE_MODULES or root in own - {""} or (root == "numpy" and "reconstruct" in attr)


class Dynamic:
    """Reads, for one file, where code is loaded from: ``repo`` owns the pickles of its own package, ``others``
    are the patch's non-Python files."""

    def __init__(self, names: Names, repo: str, others: set[str]) -> None:
        self.names, self.repo, self.others = names, repo, others

    def loaded(self, func: str, arg: ast.AST) -> str | None:
        """Why loading the literal ``arg`` runs code: a code object (marshal), or a pickle that calls more than
        data types and the repository's own package."""
        folded = self.names.fold(arg)
        if folded is None or not isinstance(folded[0], bytes | str):
            return None
        if func.startswith("marshal"):
            return "(a code object)"
        data = folded[0].encode("latin-1", "replace") if isinstance(folded[0], str) else folded[0]
        own = {self.repo.rsplit("/", 1)[-1].replace("-", "_"), "sklearn" if "scikit-learn" in self.repo else ""}
        called = {name for name in _pickle_globals(data) if not _safe_global(name, own)}
        return f"whose pickle calls {', '.join(sorted(called))}" if called else None

    def decoder_in(self, node: ast.AST, depth: int = 0) -> str | None:
        """A decoder called in ``node``, or in the one value a name in it is bound to (``exec(zlib.decompress(x))``)."""
        for child in ast.walk(node):
            if isinstance(child, ast.Call) and (func := self.names.qualname(child.func)) in DECODERS.keys() - {
                "chr",
                "reversed",
            }:
                return func
            if isinstance(child, ast.Name) and depth < 2 and len(values := self.names.bindings.get(child.id, [])) == 1:
                if found := self.decoder_in(values[0], depth + 1):
                    return found
        return None

    def patch_file(self, node: ast.AST) -> str | None:
        """A non-Python file of this patch whose name a literal in ``node`` gives (code smuggled as data)."""
        for child in ast.walk(node):
            text = self.names.fold_str(child) if isinstance(child, ast.Constant | ast.JoinedStr | ast.BinOp) else None
            if not text or "\n" in text:
                continue
            name = text.replace("\\", "/").lstrip("./")
            for path in self.others:
                if name and (path == name or path.endswith("/" + name)):
                    return path
        return None
