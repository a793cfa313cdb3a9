"""The action of a NeMo RL turn: what the last message of the sample's log, the assistant's, asks for.

In the order of the config's ``accept_actions``: its OpenAI ``tool_calls`` (a ``tool_calls`` key in the
message, as an OpenAI-compatible server's parser leaves it), its Hermes ``<tool_call>{json}</tool_call>``
elements (what Qwen-style models write; NeMo RL's own rollout passes only ``role`` and ``content`` to an
env, so this is how tool calls reach it there), or one command read by swe_gym's one action parser
(`swe_gym.envs.actions.parse_action`) in ``action_format``. A log that does not end in an assistant
reply, a broken ``<tool_call>`` element, or a reply without exactly one command is an
`ActionFormatError` whose message the env shows the model. A well-formed call the env cannot run (an
unknown tool, bad arguments) is not: the env answers it, as a step.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from swe_gym.envs.actions import ActionFormatError, parse_action
from swe_gym.integrations.nemo_rl.config import SWEGymEnvConfig
from swe_gym.tools import ToolCall, ToolCallError, hermes_calls

HERMES_OPEN, HERMES_CLOSE = "<tool_call>", "</tool_call>"


def last_assistant(message_log: Sequence[Mapping[str, Any]] | None) -> Mapping[str, Any]:
    """The log's last message, which must be the assistant's turn."""
    if not message_log:
        raise ActionFormatError("the message log is empty: there is no assistant reply to act on")
    last = message_log[-1]
    if not isinstance(last, Mapping) or last.get("role") != "assistant":
        role = last.get("role") if isinstance(last, Mapping) else type(last).__name__
        raise ActionFormatError(f"the last message is not the assistant's (role {role!r}): nothing to act on")
    return last


def last_assistant_text(message_log: Sequence[Mapping[str, Any]] | None) -> str:
    """The content of the log's last message, which must be the assistant's turn."""
    content = last_assistant(message_log).get("content")
    return content if isinstance(content, str) else "" if content is None else str(content)


def read_tool_calls(
    message_log: Sequence[Mapping[str, Any]] | None, config: SWEGymEnvConfig
) -> list[Mapping[str, Any] | ToolCall] | None:
    """The tool calls of the log's last (assistant) message, in order, or None when it makes none (then
    its text is the action): its ``tool_calls`` entries, else its Hermes elements, as ``config`` accepts."""
    last = last_assistant(message_log)
    accepted = config.accept_actions
    entries = last.get("tool_calls") if "tool_calls" in accepted else None
    if entries:
        if isinstance(entries, str | bytes | Mapping) or not isinstance(entries, Sequence):
            raise ActionFormatError("the message's tool_calls must be a list of tool calls")
        return list(entries)
    text = last_assistant_text(message_log)
    if "hermes" in accepted and HERMES_OPEN in text:
        try:
            calls = hermes_calls(text)
        except ToolCallError as exc:
            raise ActionFormatError(f"a {HERMES_OPEN} element is unusable: {exc}") from None
        if not calls or text.count(HERMES_OPEN) != len(calls):
            raise ActionFormatError(f"a {HERMES_OPEN} element is not closed with {HERMES_CLOSE}")
        return list(calls)
    return None


def read_action(message_log: Sequence[Mapping[str, Any]] | None, config: SWEGymEnvConfig) -> str:
    """The command of the log's last (assistant) message, in ``config``'s action format."""
    text = last_assistant_text(message_log)
    if "text" not in config.accept_actions:
        how = f' (write each call as {HERMES_OPEN}{{"name": TOOL, "arguments": {{...}}}}{HERMES_CLOSE})'
        how = how if "hermes" in config.accept_actions else ""
        raise ActionFormatError(f"your reply calls no tool{how}")
    return parse_action(text, action_format=config.action_format, tag=config.action_tag)


__all__ = [
    "ActionFormatError",
    "last_assistant",
    "last_assistant_text",
    "parse_action",
    "read_action",
    "read_tool_calls",
]
