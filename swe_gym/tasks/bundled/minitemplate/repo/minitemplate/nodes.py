"""The template tree and how it renders."""
from typing import Any, List, Sequence, Tuple

from .context import Context
from .filters import FILTERS


class Node:
    def render(self, ctx: Context) -> str:
        raise NotImplementedError


def render_nodes(nodes: Sequence[Node], ctx: Context) -> str:
    return "".join(node.render(ctx) for node in nodes)


class TextNode(Node):
    def __init__(self, text: str):
        self.text = text

    def render(self, ctx: Context) -> str:
        return self.text


class VarNode(Node):
    def __init__(self, expr: str, filters: List[Tuple[str, List[Any]]]):
        self.expr = expr
        self.filters = filters

    def render(self, ctx: Context) -> str:
        value = ctx.resolve(self.expr)
        for name, args in self.filters:
            value = FILTERS[name](value, *args)
        return "" if value is None else str(value)


class IfNode(Node):
    def __init__(self, expr: str, negate: bool, body: List[Node], else_body: List[Node]):
        self.expr = expr
        self.negate = negate
        self.body = body
        self.else_body = else_body

    def render(self, ctx: Context) -> str:
        value = bool(ctx.resolve(self.expr))
        if self.negate:
            value = not value
        return render_nodes(self.body if value else self.else_body, ctx)


class LoopInfo:
    def __init__(self, index0: int, length: int):
        self.index0 = index0
        self.index = index0 + 1
        self.length = length
        self.first = index0 == 0
        self.last = index0 == length - 1


class ForNode(Node):
    def __init__(self, var: str, expr: str, body: List[Node], else_body: List[Node]):
        self.var = var
        self.expr = expr
        self.body = body
        self.else_body = else_body

    def render(self, ctx: Context) -> str:
        items = list(ctx.resolve(self.expr) or [])
        if not items:
            return render_nodes(self.else_body, ctx)
        out = []
        ctx.push()
        try:
            for i, item in enumerate(items):
                ctx[self.var] = item
                ctx["loop"] = LoopInfo(i, len(items))
                out.append(render_nodes(self.body, ctx))
        finally:
            ctx.pop()
        return "".join(out)
