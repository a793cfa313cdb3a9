"""What counts as a tool call, in every shape agents send one, and the one error that says a call is unusable.

Accepted: a dict ``{"name": ..., "arguments": {...} or "<json>"}``; an OpenAI ``tool_calls`` entry
``{"id": ..., "type": "function", "function": {"name": ..., "arguments": "<json>"}}`` (or the SDK's
object of that shape); the JSON text of either; Hermes-style text ``<tool_call>{json}</tool_call>``
(`hermes_calls`). A string that is none of these is a plain bash command (`as_tool_call`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, Field

from swe_gym.tools.schemas import BASH

_HERMES = re.compile(r"<tool_call>\s*(.*?)\s*</tool_call>", re.DOTALL)


class ToolCallError(ValueError):
    """A tool call that cannot run (bad JSON, no name, unknown tool, bad arguments); the message is for the agent."""


class ToolCall(BaseModel):
    """One call: the tool, its arguments, and the caller's id (echoed in the tool-role reply)."""

    name: str
    arguments: dict[str, Any] = Field(default_factory=dict)
    id: str | None = None


def _arguments(raw: Any) -> dict[str, Any]:
    if raw is None or raw == "":
        return {}
    if isinstance(raw, str):
        try:
            raw = json.loads(raw)
        except json.JSONDecodeError as exc:
            raise ToolCallError(
                f"the tool call's arguments are not valid JSON ({exc.msg} at column {exc.colno})"
            ) from None
    if not isinstance(raw, Mapping):
        raise ToolCallError(f"the tool call's arguments must be a JSON object, got {type(raw).__name__}")
    return dict(raw)


def _as_mapping(action: Any) -> Mapping[str, Any] | None:
    if isinstance(action, Mapping):
        return action
    dump = getattr(action, "model_dump", None)  # the openai SDK's ChatCompletionMessageToolCall
    if callable(dump):
        value = dump()
        return value if isinstance(value, Mapping) else None
    return None


def tool_call(action: Any) -> ToolCall:
    """The `ToolCall` in ``action`` (a dict, an OpenAI ``tool_calls`` entry, or the JSON text of either)."""
    if isinstance(action, ToolCall):
        return action
    if isinstance(action, str):
        try:
            action = json.loads(action)
        except json.JSONDecodeError as exc:
            raise ToolCallError(f"the tool call is not valid JSON ({exc.msg} at column {exc.colno})") from None
    mapping = _as_mapping(action)
    if mapping is None:
        raise ToolCallError(f"a tool call is a JSON object with a name and arguments, got {type(action).__name__}")
    function = mapping.get("function")
    if isinstance(function, Mapping):  # an OpenAI tool_calls entry
        name, arguments, call_id = function.get("name"), function.get("arguments"), mapping.get("id")
    else:
        name, arguments, call_id = (
            mapping.get("name"),
            mapping.get("arguments", mapping.get("parameters")),
            mapping.get("id"),
        )
    if not isinstance(name, str) or not name:
        raise ToolCallError('the tool call has no "name" (send {"name": TOOL, "arguments": {...}})')
    return ToolCall(name=name, arguments=_arguments(arguments), id=call_id if isinstance(call_id, str) else None)


def looks_like_call(text: str) -> bool:
    """Whether a string is meant as a JSON tool call rather than a bash command (``{ cmd; }`` is bash)."""
    return text.lstrip().startswith('{"')


def as_tool_call(action: Any) -> ToolCall:
    """Any action as a call: a tool call as above, else a plain string as ``bash`` with it as the command."""
    if isinstance(action, str) and not looks_like_call(action):
        return ToolCall(name=BASH, arguments={"command": action})
    return tool_call(action)


def hermes_calls(text: str) -> list[ToolCall]:
    """The ``<tool_call>{json}</tool_call>`` elements of a model's text (Hermes / Qwen format), in order."""
    return [tool_call(body) for body in _HERMES.findall(text)]
