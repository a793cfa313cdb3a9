"""Public entry points."""
from typing import Any, Dict, Optional

from .context import Context
from .lexer import tokenize
from .nodes import render_nodes
from .parser import Parser


class Template:
    def __init__(self, source: str):
        self.source = source
        self.nodes = Parser(tokenize(source)).parse()

    def render(self, data: Optional[Dict[str, Any]] = None, **kwargs: Any) -> str:
        values = dict(data or {})
        values.update(kwargs)
        return render_nodes(self.nodes, Context(values))


def render(source: str, data: Optional[Dict[str, Any]] = None, **kwargs: Any) -> str:
    return Template(source).render(data, **kwargs)
