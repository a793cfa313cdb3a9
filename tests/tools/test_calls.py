"""Tool calls in every shape agents send them, and the schemas an OpenAI-compatible client takes."""

from __future__ import annotations

import json
from typing import Any

import pytest

from swe_gym.errors import ConfigError
from swe_gym.tools import (
    TOOL_NAMES,
    TOOLS,
    ToolCall,
    ToolCallError,
    as_tool_call,
    hermes_calls,
    tool_call,
    tool_schemas,
)

LS = ToolCall(name="bash", arguments={"command": "ls"})


@pytest.mark.parametrize(
    "action",
    [
        {"name": "bash", "arguments": {"command": "ls"}},
        {"name": "bash", "arguments": '{"command": "ls"}'},
        '{"name": "bash", "arguments": {"command": "ls"}}',
        {"type": "function", "function": {"name": "bash", "arguments": '{"command": "ls"}'}},
        json.dumps({"type": "function", "function": {"name": "bash", "arguments": '{"command": "ls"}'}}),
    ],
)
def test_the_shapes_of_one_call(action: Any) -> None:
    assert tool_call(action) == LS


def test_an_openai_entry_keeps_its_id_and_a_plain_string_is_bash() -> None:
    entry = {"id": "call_7", "type": "function", "function": {"name": "submit", "arguments": ""}}
    assert tool_call(entry) == ToolCall(name="submit", id="call_7")
    assert as_tool_call("ls") == LS
    assert as_tool_call("{ echo a; }") == ToolCall(name="bash", arguments={"command": "{ echo a; }"})  # bash


def test_hermes_text() -> None:
    text = 'I will look.\n<tool_call>\n{"name": "bash", "arguments": {"command": "ls"}}\n</tool_call>'
    assert hermes_calls(text) == [LS] and hermes_calls("no call here") == []


@pytest.mark.parametrize(
    ("action", "message"),
    [
        ('{"name": "bash", "arguments": ', "not valid JSON"),
        ({"arguments": {}}, 'has no "name"'),
        ({"name": "bash", "arguments": "[1, 2]"}, "must be a JSON object, got list"),
        ({"name": "bash", "arguments": "{oops"}, "arguments are not valid JSON"),
        (42, "got int"),
    ],
)
def test_bad_calls_say_why(action: Any, message: str) -> None:
    with pytest.raises(ToolCallError, match=message):
        as_tool_call(action)


def test_schemas_are_openai_function_tools() -> None:
    assert TOOL_NAMES == ("bash", "str_replace_editor", "submit")
    for tool in TOOLS:
        assert tool["type"] == "function" and tool["function"]["parameters"]["type"] == "object"
        json.dumps(tool)  # serialisable as a request's tools=
    assert [t["function"]["name"] for t in tool_schemas(["submit"])] == ["submit"]
    with pytest.raises(ConfigError, match="unknown tools"):
        tool_schemas(["grep"])
