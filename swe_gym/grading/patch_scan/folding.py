"""Literal values worked out without running anything: the constant an expression always evaluates to, and the
decoders (base64, hex, zlib, bz2, lzma, codecs, ``chr``) and string methods folded on literals, each bounded so a
literal cannot inflate past `MAX_FOLD`."""

from __future__ import annotations

import ast
import base64
import binascii
import bz2
import codecs
import lzma
import operator
import re
import zlib
from collections.abc import Callable
from typing import Any

MAX_FOLD = 1 << 20  # characters a folded string may reach

NO = object()  # "not a constant"
Folded = tuple[Any, bool]  # (value, whether a decoding step made it)

_CMP: dict[type, Callable[[Any, Any], Any]] = {
    ast.Eq: operator.eq,
    ast.NotEq: operator.ne,
    ast.Lt: operator.lt,
    ast.LtE: operator.le,
    ast.Gt: operator.gt,
    ast.GtE: operator.ge,
    ast.Is: operator.is_,
    ast.IsNot: operator.is_not,
}


def const(node: ast.AST | None) -> Any:
    """The constant ``node`` always evaluates to (``True``, ``not 0``, ``1 == 1``, ``x if c else x``), else `NO`."""
    if isinstance(node, ast.Constant):
        return node.value
    try:
        if isinstance(node, ast.UnaryOp) and (value := const(node.operand)) is not NO:
            return {ast.Not: operator.not_, ast.USub: operator.neg, ast.UAdd: operator.pos}[type(node.op)](value)
        if isinstance(node, ast.BoolOp):
            values = [const(v) for v in node.values]
            if NO in values:
                return NO
            result = values[0]
            for value in values[1:]:
                result = (result and value) if isinstance(node.op, ast.And) else (result or value)
            return result
        if isinstance(node, ast.Compare) and len(node.ops) == 1:
            left, right = const(node.left), const(node.comparators[0])
            if NO not in (left, right) and type(node.ops[0]) in _CMP:
                return _CMP[type(node.ops[0])](left, right)
        if isinstance(node, ast.IfExp):
            body, orelse = const(node.body), const(node.orelse)
            return body if body is not NO and type(body) is type(orelse) and body == orelse else NO
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("bool", "int"):
            if len(node.args) == 1 and not node.keywords and (value := const(node.args[0])) is not NO:
                return bool(value) if node.func.id == "bool" else int(value)
    except (KeyError, TypeError, ValueError, ArithmeticError):
        return NO
    return NO


def _bounded_decompress(make: Callable[[], Any]) -> Callable[[bytes], bytes]:
    def run(data: bytes) -> bytes:
        out = make().decompress(data, MAX_FOLD)
        if len(out) >= MAX_FOLD:
            raise ValueError("too large")
        return out

    return run


def _codec(convert: Callable[..., Any], data: Any, encoding: str, *rest: str) -> Any:
    """``codecs.decode`` on a literal, its compressing codecs bounded like the decompressors."""
    name = codecs.lookup(encoding).name
    if name in ("zlib", "bz2"):
        if convert is codecs.encode:
            raise ValueError("not folded")
        return _bounded_decompress(lambda: zlib.decompressobj(47) if name == "zlib" else bz2.BZ2Decompressor())(data)
    return convert(data, encoding, *rest)


WIDE = re.compile(r"\d{5,}")  # a format width that would build a huge string
_B64_NAMES = "b64decode standard_b64decode urlsafe_b64decode b32decode b16decode a85decode b85decode decodebytes"
#: Decoders folded on literals (each makes the result "decoded": obfuscation no gold patch needs).
DECODERS: dict[str, Callable[..., Any]] = {
    **{f"base64.{name}": getattr(base64, name) for name in _B64_NAMES.split()},
    "binascii.unhexlify": binascii.unhexlify,
    "binascii.a2b_hex": binascii.a2b_hex,
    "binascii.a2b_base64": binascii.a2b_base64,
    "bytes.fromhex": bytes.fromhex,
    "bytearray.fromhex": lambda text: bytes(bytearray.fromhex(text)),
    "codecs.decode": lambda data, encoding="utf-8", *rest: _codec(codecs.decode, data, encoding, *rest),
    "codecs.encode": lambda data, encoding="utf-8", *rest: _codec(codecs.encode, data, encoding, *rest),
    "zlib.decompress": _bounded_decompress(lambda: zlib.decompressobj(47)),
    "gzip.decompress": _bounded_decompress(lambda: zlib.decompressobj(31)),
    "bz2.decompress": _bounded_decompress(bz2.BZ2Decompressor),
    "lzma.decompress": _bounded_decompress(lzma.LZMADecompressor),
    "chr": chr,
    "reversed": lambda value: list(reversed(value)),
}


def _method(name: str) -> Callable[..., Any]:
    return lambda value, *args: getattr(value, name)(*args)


METHODS = {name: _method(name) for name in "join decode encode replace lower upper strip rstrip format title".split()}
