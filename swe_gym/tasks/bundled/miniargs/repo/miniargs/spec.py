"""Declarations of options and positionals."""
from dataclasses import dataclass, field
from typing import Any, Callable, Optional, Tuple

ACTIONS = ("store", "store_true", "count", "append")


@dataclass
class Option:
    flags: Tuple[str, ...]
    dest: str
    action: str = "store"
    type: Callable[[str], Any] = str
    default: Any = None
    required: bool = False
    help: str = ""
    metavar: Optional[str] = None

    @property
    def takes_value(self) -> bool:
        return self.action in ("store", "append")

    @property
    def display_name(self) -> str:
        return "/".join(self.flags)


@dataclass
class Positional:
    dest: str
    type: Callable[[str], Any] = str
    nargs: Optional[str] = None  # None (exactly one), "?" or "*"
    default: Any = None
    help: str = ""
    extra: dict = field(default_factory=dict)
