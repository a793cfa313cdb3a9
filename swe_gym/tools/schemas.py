"""The tools' JSON schemas, in the OpenAI function-calling format, ready for an OpenAI-compatible client's ``tools=``.

>>> from swe_gym.tools import TOOLS
>>> [tool["function"]["name"] for tool in TOOLS]
['bash', 'str_replace_editor', 'submit']
"""

from __future__ import annotations

from typing import Any

BASH = "bash"
EDITOR = "str_replace_editor"
SUBMIT_TOOL = "submit"

BASH_SCHEMA: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": BASH,
        "description": (
            "Run a bash command in the repository's sandbox and get what it printed (stdout and stderr) and its "
            "exit code. Each call is its own shell unless the env keeps a persistent one; stdin is empty, pagers "
            "are off, and a command past the step timeout is killed with its whole process group."
        ),
        "parameters": {
            "type": "object",
            "properties": {"command": {"type": "string", "description": "the bash command to run"}},
            "required": ["command"],
            "additionalProperties": False,
        },
    },
}

EDITOR_SCHEMA: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": EDITOR,
        "description": (
            "View, create and edit files in the sandbox. `view` shows a file with line numbers (or a directory's "
            "files two levels deep); `create` writes a new file; `str_replace` replaces the one exact occurrence "
            "of `old_str` with `new_str`; `insert` puts `new_str` after line `insert_line` (0: at the top); "
            "`undo_edit` reverts the last edit of `path`. Paths are absolute or relative to the repository."
        ),
        "parameters": {
            "type": "object",
            "properties": {
                "command": {"type": "string", "enum": ["view", "create", "str_replace", "insert", "undo_edit"]},
                "path": {"type": "string", "description": "the file or directory"},
                "file_text": {"type": "string", "description": "create: the new file's content"},
                "old_str": {"type": "string", "description": "str_replace: the text to replace, exactly once"},
                "new_str": {"type": "string", "description": "str_replace: the replacement; insert: the text"},
                "insert_line": {"type": "integer", "description": "insert: the line after which new_str goes"},
                "view_range": {
                    "type": "array",
                    "items": {"type": "integer"},
                    "description": "view: [first, last] line, 1-based; last -1 means to the end",
                },
            },
            "required": ["command", "path"],
            "additionalProperties": False,
        },
    },
}

SUBMIT_SCHEMA: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": SUBMIT_TOOL,
        "description": "Submit the repository as it is now: the episode ends and the change is graded.",
        "parameters": {"type": "object", "properties": {}, "additionalProperties": False},
    },
}

#: Every tool, in the order an agent usually needs them.
TOOLS: list[dict[str, Any]] = [BASH_SCHEMA, EDITOR_SCHEMA, SUBMIT_SCHEMA]
TOOL_NAMES = tuple(tool["function"]["name"] for tool in TOOLS)


def tool_schemas(names: list[str] | tuple[str, ...] | None = None) -> list[dict[str, Any]]:
    """The schemas of ``names`` (all when None), for ``tools=`` of a chat completion request."""
    if names is None:
        return [dict(tool) for tool in TOOLS]
    by_name = {tool["function"]["name"]: tool for tool in TOOLS}
    unknown = [name for name in names if name not in by_name]
    if unknown:
        from swe_gym.errors import ConfigError

        raise ConfigError(f"unknown tools {unknown}; swe_gym's tools: {', '.join(TOOL_NAMES)}")
    return [dict(by_name[name]) for name in names]
