"""The action of a NeMo RL turn: the command in the last message of the sample's log, the assistant's.

The reply is read by swe_gym's one action parser (`swe_gym.envs.actions.parse_action`), in the
config's ``action_format``; a log that does not end in an assistant reply, or a reply without exactly
one command, is an `ActionFormatError` whose message the env shows the model.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from swe_gym.envs.actions import ActionFormatError, parse_action
from swe_gym.integrations.nemo_rl.config import SWEGymEnvConfig


def last_assistant_text(message_log: Sequence[Mapping[str, Any]] | None) -> str:
    """The content of the log's last message, which must be the assistant's turn."""
    if not message_log:
        raise ActionFormatError("the message log is empty: there is no assistant reply to act on")
    last = message_log[-1]
    if not isinstance(last, Mapping) or last.get("role") != "assistant":
        role = last.get("role") if isinstance(last, Mapping) else type(last).__name__
        raise ActionFormatError(f"the last message is not the assistant's (role {role!r}): nothing to act on")
    content = last.get("content")
    return content if isinstance(content, str) else str(content)


def read_action(message_log: Sequence[Mapping[str, Any]] | None, config: SWEGymEnvConfig) -> str:
    """The command of the log's last (assistant) message, in ``config``'s action format."""
    return parse_action(last_assistant_text(message_log), action_format=config.action_format, tag=config.action_tag)


__all__ = ["ActionFormatError", "last_assistant_text", "parse_action", "read_action"]
