"""Command-line flags derived from the pydantic models that hold the options, so a CLI can never drift
from the library: one name, one type, one default, one description per option.

A field ``max_steps: int = Field(50, description="...")`` becomes ``--max-steps N`` (``--PREFIX-max-steps``
with a prefix; a field may name its flag with ``json_schema_extra={"flag": "..."}``); booleans become
``--x/--no-x``, ``Literal`` choices, lists repeatable flags. A flag left out stays out of `model_values`,
so the model's own default applies: the help text shows it, but never duplicates it.
"""

from __future__ import annotations

import argparse
import types
import typing
from collections.abc import Iterable
from pathlib import Path
from typing import Any, Literal, Union

from pydantic import BaseModel
from pydantic.fields import FieldInfo

_SCALARS: dict[Any, Any] = {int: int, float: float, str: str, Path: Path}


def _flag(name: str, field: FieldInfo, prefix: str) -> str:
    extra = field.json_schema_extra if isinstance(field.json_schema_extra, dict) else {}
    own = extra.get("flag")
    return f"--{prefix}{own if isinstance(own, str) else name.replace('_', '-')}"


def _default_text(field: FieldInfo) -> str:
    if field.default_factory is not None:
        return ""
    return f" (default: {field.default})" if field.default not in (None, "") else ""


def _bool_or_choice(text: str, choices: tuple[str, ...]) -> bool | str:
    lowered = text.lower()
    if lowered in ("true", "yes", "1"):
        return True
    if lowered in ("false", "no", "0"):
        return False
    if text in choices:
        return text
    raise argparse.ArgumentTypeError(f"expected true, false or one of {', '.join(choices)}; got {text!r}")


def _argument(annotation: Any) -> dict[str, Any] | None:
    """argparse keywords for a field type, or None when no flag can express it (a nested model)."""
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin in (Union, types.UnionType):
        members = [a for a in args if a is not type(None)]
        literals = [a for a in members if typing.get_origin(a) is Literal]
        if bool in members and literals:  # e.g. bool | Literal["gc"]
            choices = tuple(str(c) for lit in literals for c in typing.get_args(lit))
            return {"type": lambda t: _bool_or_choice(t, choices), "metavar": f"{{true,false,{','.join(choices)}}}"}
        scalars = [a for a in members if a in _SCALARS or typing.get_origin(a) in (Literal, list)]
        return _argument(scalars[0]) if len(members) >= 1 and scalars else None
    if annotation is bool:
        return {"action": argparse.BooleanOptionalAction}
    if origin is Literal:
        return {"choices": list(args), "type": type(args[0])}
    if origin is list and args and args[0] in _SCALARS:
        return {"nargs": "+", "action": "extend", "type": _SCALARS[args[0]]}
    if origin is list and args and typing.get_origin(args[0]) is Literal:  # e.g. --tools bash submit
        return {"nargs": "+", "action": "extend", "choices": list(typing.get_args(args[0]))}
    if annotation in _SCALARS:
        return {"type": _SCALARS[annotation]}
    return None


def add_model_flags(
    parser: argparse.ArgumentParser | argparse._ArgumentGroup,
    model: type[BaseModel],
    *,
    prefix: str = "",
    exclude: Iterable[str] = (),
) -> None:
    """A flag per field of ``model`` (not ``exclude``, nor fields no flag can express), into ``args.<prefix><name>``."""
    skipped = set(exclude)
    for name, field in model.model_fields.items():
        keywords = None if name in skipped else _argument(field.annotation)
        if keywords is None:
            continue
        description = (field.description or "").rstrip(".")
        flag = _flag(name, field, prefix)
        if "action" not in keywords and "choices" not in keywords:
            keywords.setdefault("metavar", flag.rsplit("-", 1)[-1].upper())
        parser.add_argument(
            flag,
            dest=f"{prefix.replace('-', '_')}{name}",
            default=None,
            help=f"{description}{_default_text(field)}".strip() or None,
            **keywords,
        )


def model_values(args: argparse.Namespace, model: type[BaseModel], *, prefix: str = "") -> dict[str, Any]:
    """The fields of ``model`` given on the command line (the rest keep the model's defaults)."""
    dest = prefix.replace("-", "_")
    return {
        name: getattr(args, f"{dest}{name}")
        for name in model.model_fields
        if getattr(args, f"{dest}{name}", None) is not None
    }
