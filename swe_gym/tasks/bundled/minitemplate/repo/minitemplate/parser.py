"""Build a node tree from tokens."""
import re
from typing import Any, List, Optional, Tuple

from .errors import TemplateSyntaxError
from .filters import FILTERS
from .lexer import Token
from .nodes import ForNode, IfNode, Node, TextNode, VarNode

_OPENERS = {"if": "endif", "for": "endfor"}
_CLOSERS = set(_OPENERS.values())
_NAME = r"[A-Za-z_][A-Za-z0-9_]*"
_EXPR_RE = re.compile(r"^%s(?:\.[A-Za-z0-9_]+)*$" % _NAME)
_FOR_RE = re.compile(r"^for\s+(%s)\s+in\s+(\S+)$" % _NAME)
_IF_RE = re.compile(r"^if\s+(not\s+)?(\S+)$")


def _keyword(token: Token) -> str:
    return token.value.split(None, 1)[0] if token.value else ""


def _literal(text: str, line: int) -> Any:
    text = text.strip()
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "\"'":
        return text[1:-1]
    if re.fullmatch(r"-?\d+", text):
        return int(text)
    raise TemplateSyntaxError("bad filter argument %r" % text, line)


class Parser:
    def __init__(self, tokens: List[Token]):
        self.tokens = tokens

    def parse(self) -> List[Node]:
        return self._parse_range(0, len(self.tokens))

    def _parse_range(self, start: int, end: int) -> List[Node]:
        nodes: List[Node] = []
        i = start
        while i < end:
            tok = self.tokens[i]
            if tok.kind == "text":
                nodes.append(TextNode(tok.value))
                i += 1
            elif tok.kind == "var":
                nodes.append(self._parse_var(tok))
                i += 1
            else:
                keyword = _keyword(tok)
                if keyword in _OPENERS:
                    close = self._find_close(i, end, keyword)
                    else_at = self._find_else(i, close)
                    body_end = close if else_at is None else else_at
                    body = self._parse_range(i + 1, body_end)
                    else_body = [] if else_at is None else self._parse_range(else_at + 1, close)
                    nodes.append(self._make_block(tok, keyword, body, else_body))
                    i = close + 1
                elif keyword == "else" or keyword in _CLOSERS:
                    raise TemplateSyntaxError("unexpected '%s'" % keyword, tok.line)
                else:
                    raise TemplateSyntaxError("unknown tag '%s'" % keyword, tok.line)
        return nodes

    def _find_close(self, start: int, end: int, keyword: str) -> int:
        """Index of the tag that closes the block opened at *start*."""
        depth = 0
        for j in range(start, end):
            tok = self.tokens[j]
            if tok.kind != "block":
                continue
            kw = _keyword(tok)
            if kw in _OPENERS:
                depth += 1
            elif kw in _CLOSERS:
                depth -= 1
                if depth == 0:
                    if kw != _OPENERS[keyword]:
                        raise TemplateSyntaxError(
                            "expected '%s', got '%s'" % (_OPENERS[keyword], kw), tok.line
                        )
                    return j
        raise TemplateSyntaxError("unclosed '%s' block" % keyword, self.tokens[start].line)

    def _find_else(self, start: int, close: int) -> Optional[int]:
        """Index of the ``else`` of the block spanning *start*..*close*, if any."""
        for j in range(start + 1, close):
            tok = self.tokens[j]
            if tok.kind == "block" and _keyword(tok) == "else":
                return j
        return None

    def _make_block(self, tok: Token, keyword: str, body: List[Node], else_body: List[Node]) -> Node:
        if keyword == "for":
            m = _FOR_RE.match(tok.value)
            if not m or not _EXPR_RE.match(m.group(2)):
                raise TemplateSyntaxError("bad for tag: %r" % tok.value, tok.line)
            return ForNode(m.group(1), m.group(2), body, else_body)
        m = _IF_RE.match(tok.value)
        if not m or not _EXPR_RE.match(m.group(2)):
            raise TemplateSyntaxError("bad if tag: %r" % tok.value, tok.line)
        return IfNode(m.group(2), bool(m.group(1)), body, else_body)

    def _parse_var(self, tok: Token) -> VarNode:
        expr, *filter_parts = [p.strip() for p in tok.value.split("|")]
        if not _EXPR_RE.match(expr):
            raise TemplateSyntaxError("bad expression %r" % expr, tok.line)
        filters: List[Tuple[str, List[Any]]] = []
        for part in filter_parts:
            name, _, arg = part.partition(":")
            name = name.strip()
            if name not in FILTERS:
                raise TemplateSyntaxError("unknown filter '%s'" % name, tok.line)
            filters.append((name, [_literal(arg, tok.line)] if arg else []))
        return VarNode(expr, filters)
