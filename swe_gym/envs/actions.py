"""How a model's text reply becomes one bash action: its one fenced block, or its one ``<tag>`` element.

Every front end that reads actions out of text (the LLM policy, the NeMo RL env) uses `parse_action`, so
one reply means the same action everywhere and one error type, `ActionFormatError`, says why a reply
has none. Its message is written for the model: it says what was wrong and what to send instead.

A fenced block counts as a command when its language is one of `COMMAND_LANGUAGES`: unlabelled,
``bash``, ``sh`` or ``shell`` (what bash runs as written). Other blocks (``python``, ``diff``, and
``console``, whose lines hold prompts and output, or ``zsh``, another shell's syntax) are text.
"""

from __future__ import annotations

import re
from typing import Literal

ActionFormat = Literal["bash_block", "tag"]
#: Languages of a fenced block that count as a command (``""``: no language given).
COMMAND_LANGUAGES = frozenset({"", "bash", "sh", "shell"})
_FENCE = re.compile(r"^[ \t]*```[ \t]*([\w+-]*)[^\n]*\n(.*?)^[ \t]*```[ \t]*$", re.MULTILINE | re.DOTALL)
_FENCE_LINE = re.compile(r"^[ \t]*```", re.MULTILINE)
_CUT = " (your reply was cut off at the token limit: be shorter)"


class ActionFormatError(ValueError):
    """A reply holds no single usable command; the message says why (and is shown to the model)."""


def parse_action(
    reply: str, *, action_format: ActionFormat = "bash_block", tag: str = "bash", truncated: bool = False
) -> str:
    """The command of ``reply``: its one fenced command block, or (``action_format="tag"``) its one
    ``<tag>...</tag>`` element, stripped of surrounding blank space.

    >>> parse_action("THOUGHT: look.\\n```bash\\nls -la\\n```")
    'ls -la'
    >>> parse_action("<cmd>pwd</cmd>", action_format="tag", tag="cmd")
    'pwd'

    Raises:
        ActionFormatError: none, several, an empty or unclosed one, or only blocks of other languages;
            ``truncated`` (the reply hit the token limit) is mentioned where it explains the problem.
    """
    if action_format == "tag":
        return _tagged(reply, tag, truncated)
    blocks = _FENCE.findall(reply)
    commands = [body for language, body in blocks if language.lower() in COMMAND_LANGUAGES]
    if len(commands) == 1:
        command = commands[0].strip()
        if not command:
            raise ActionFormatError("the bash block is empty")
        return command
    if len(commands) > 1:
        raise ActionFormatError(f"your reply holds {len(commands)} bash blocks; send exactly one")
    if len(_FENCE_LINE.findall(reply)) % 2 == 1:
        raise ActionFormatError(f"the bash block is not closed with ```{_CUT if truncated else ''}")
    if blocks:
        other = ", ".join(sorted({f"```{language}" for language, _ in blocks}))
        raise ActionFormatError(f"a {other} block is not a command; put the command in a ```bash block")
    if not reply.strip():
        raise ActionFormatError("your reply is empty")
    raise ActionFormatError("your reply holds no bash block; put the command in a ```bash block")


def _tagged(reply: str, tag: str, truncated: bool) -> str:
    opening, closing = f"<{tag}>", f"</{tag}>"
    found = re.findall(rf"{re.escape(opening)}(.*?){re.escape(closing)}", reply, re.DOTALL)
    if len(found) == 1:
        command = found[0].strip()
        if not command:
            raise ActionFormatError(f"the {opening} element is empty")
        return command
    if len(found) > 1:
        raise ActionFormatError(f"your reply holds {len(found)} {opening} elements; send exactly one")
    if opening in reply:
        raise ActionFormatError(f"the {opening} element is not closed with {closing}{_CUT if truncated else ''}")
    if not reply.strip():
        raise ActionFormatError("your reply is empty")
    raise ActionFormatError(f"your reply holds no {opening}...{closing} element; put the command in one")


__all__ = ["COMMAND_LANGUAGES", "ActionFormat", "ActionFormatError", "parse_action"]
