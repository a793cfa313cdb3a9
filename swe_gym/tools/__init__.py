"""Tool-call actions: ``bash``, the ``str_replace_editor`` file editor and ``submit``, with their OpenAI schemas.

``gym.make("swe_gym/SWE-v0", tools=["bash", "str_replace_editor", "submit"])`` makes the env take tool
calls as actions (plain bash strings still work); `TOOLS` goes to an OpenAI-compatible client's ``tools=``.
"""

from swe_gym.tools.calls import ToolCall, ToolCallError, as_tool_call, hermes_calls, looks_like_call, tool_call
from swe_gym.tools.editor import Editor, EditorError, EditorHistory
from swe_gym.tools.schemas import BASH, EDITOR, SUBMIT_TOOL, TOOL_NAMES, TOOLS, tool_schemas

__all__ = [
    "BASH",
    "EDITOR",
    "SUBMIT_TOOL",
    "TOOLS",
    "TOOL_NAMES",
    "Editor",
    "EditorError",
    "EditorHistory",
    "ToolCall",
    "ToolCallError",
    "as_tool_call",
    "hermes_calls",
    "looks_like_call",
    "tool_call",
    "tool_schemas",
]
