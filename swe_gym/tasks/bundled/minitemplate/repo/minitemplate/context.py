"""Variable scopes and dotted-name resolution."""
from typing import Any, Dict, List, Optional


class Context:
    def __init__(self, data: Optional[Dict[str, Any]] = None):
        self._scopes: List[Dict[str, Any]] = [dict(data or {})]

    def push(self, scope: Optional[Dict[str, Any]] = None) -> None:
        self._scopes.append(dict(scope or {}))

    def pop(self) -> None:
        if len(self._scopes) == 1:
            raise RuntimeError("cannot pop the global scope")
        self._scopes.pop()

    def __setitem__(self, name: str, value: Any) -> None:
        self._scopes[-1][name] = value

    def lookup(self, name: str) -> Any:
        for scope in reversed(self._scopes):
            if name in scope:
                return scope[name]
        return None

    def resolve(self, expr: str) -> Any:
        """Resolve ``a.b.0.c``: dict keys, then attributes, then list indexes.

        Anything missing resolves to None.
        """
        head, *rest = expr.split(".")
        value = self.lookup(head)
        for part in rest:
            if value is None:
                return None
            if isinstance(value, dict):
                value = value.get(part)
            elif hasattr(value, part):
                value = getattr(value, part)
            elif part.isdigit() and isinstance(value, (list, tuple)):
                index = int(part)
                value = value[index] if index < len(value) else None
            else:
                return None
        return value
