"""Errors on the command line name the flag, not the Python API.

The library words an option the way Python sets it: as a keyword (``model=``, ``SWEEnv(image=...)``,
``tool_calling='text'``), as a model's field (``SandboxSpec.image``, ``LLMConfig.tools``), or as the field
of a pydantic validation error. `command_line_message` words each one the command has a flag for as
that flag (``--image``, ``--llm-model``, ``--llm-tool-calling text``), from the command's own parser, so a
new flag is covered the day it is added. An `ImageNotSetError` says what to pass outright (``--image``).
"""

from __future__ import annotations

import argparse
import re

from pydantic import ValidationError

from swe_gym.errors import ImageNotSetError
from swe_gym.policies.llm.config import LLMConfig

#: Models whose fields a command's flags carry under a prefix (``--llm-model`` sets ``LLMConfig.model``).
PREFIXES = {LLMConfig.__name__: "llm_"}
#: ``Model.name`` (``SandboxSpec.image``), ``name=value``, ``Model(name=...)``; a value is ``...``, a list,
#: quoted, or a word.
_OPTION = re.compile(
    r"(?:\b(?P<model>[A-Z]\w*)(?P<sep>[.(]))?(?<![-\w])(?P<name>[a-z_][a-z0-9_]*)"
    r"(?P<eq>=(?P<value>\.\.\.|\[[^\]]*\]|'[^']*'|\"[^\"]*\"|[\w.:/-]+)?)?(?P<close>\))?"
)


def subcommand(parser: argparse.ArgumentParser, name: str | None) -> argparse.ArgumentParser:
    """The parser of subcommand ``name`` (``parser`` itself when it has none by that name)."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction) and name in action.choices:
            return action.choices[name]
    return parser


def flags(parser: argparse.ArgumentParser) -> dict[str, str]:
    """dest -> the flag that sets it (its long spelling), for every optional argument of ``parser``."""
    found = {}
    for action in parser._actions:
        spellings = [s for s in action.option_strings if s.startswith("--")]
        if spellings and action.dest not in found:
            found[action.dest] = max(spellings, key=len) if action.dest != "help" else spellings[0]
    return found


def command_line_message(exc: BaseException, parser: argparse.ArgumentParser) -> str:
    """``exc``'s message, with the Python spelling of each option ``parser`` has a flag for replaced by the flag."""
    known = flags(parser)
    if isinstance(exc, ImageNotSetError) and "image" in known:
        needs = re.split(r": | \(", str(exc), maxsplit=1)[0]
        return f"{needs}: pass {known['image']} IMAGE (or use tasks that name their image)"
    invalid = exc if isinstance(exc, ValidationError) else exc.__cause__ or exc.__context__
    if isinstance(invalid, ValidationError):
        prefix = PREFIXES.get(invalid.title, "")
        problems: dict[str, str] = {}
        for error in invalid.errors():
            loc = tuple(str(part) for part in error["loc"])
            where = known.get(prefix + loc[0]) if len(loc) == 1 else None
            problems.setdefault(where or ".".join(loc) or invalid.title, error["msg"])
        return "invalid options (" + "; ".join(f"{where}: {message}" for where, message in problems.items()) + ")"
    return _OPTION.sub(lambda match: _as_flag(match, known), str(exc))


def _as_flag(match: re.Match[str], known: dict[str, str]) -> str:
    """The flag ``match`` spells (with its value, if one was given), or ``match`` as it is."""
    model, sep, name, eq, close = match["model"], match["sep"], match["name"], match["eq"], match["close"] or ""
    if not (sep == "." or eq):  # a plain word (or a call): no option spelled
        return match[0]
    prefixes = [PREFIXES.get(model, "")] if model else ["", *PREFIXES.values()]
    flag = next((known[p + name] for p in prefixes if p + name in known), None)
    if flag is None:
        return match[0]
    value = (match["value"] or "").strip("'\"")
    if value.startswith("["):  # a list: the flag takes its items
        value = " ".join(item.strip(" '\"") for item in value.strip("[]").split(","))
    shown = flag if value in ("", "...") else f"{flag} {value}"
    return shown + ("" if sep == "(" else close)
