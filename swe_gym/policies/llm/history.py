"""What of `LLMPolicy`'s conversation is sent: the system and task messages always, then the most recent
turns that fit the character budget (the dropped count said in the task message), a lone huge turn cut.

A turn is an assistant message and what answers it: the tool messages of its tool calls (each call's
result, which the OpenAI protocol wants right after it) or the user message with the observation or a
format error. Turns are dropped whole, so a tool call never loses its result and roles keep their order.
"""

from __future__ import annotations

import json
from typing import Any

from swe_gym.envs.text import elide_middle

#: Room kept, over budget, for the note that says how much was dropped.
_NOTE_ROOM = 120

Message = dict[str, Any]


def message_size(message: Message) -> int:
    """The characters a message sends: its content and its tool calls."""
    calls = message.get("tool_calls")
    return len(message.get("content") or "") + (len(json.dumps(calls)) if calls else 0)


def _turns(messages: list[Message]) -> list[list[Message]]:
    turns: list[list[Message]] = []
    for message in messages:
        if message.get("role") == "assistant" or not turns:
            turns.append([])
        turns[-1].append(message)
    return turns


def fit_history(messages: list[Message], budget: int) -> tuple[list[Message], int]:
    """``(messages to send, messages dropped)`` for a conversation of system, task, then turns."""
    head, turns = messages[:2], _turns(messages[2:])
    size = sum(message_size(m) for m in messages)
    budget = budget if size <= budget else budget - _NOTE_ROOM
    dropped = 0
    while size > budget and len(turns) > 1:  # the oldest turns go first; the last one stays
        oldest = turns.pop(0)
        size -= sum(message_size(m) for m in oldest)
        dropped += len(oldest)
    if dropped:
        note = f"\n\n[{dropped} earlier messages of this conversation were omitted to fit the context budget.]"
        head = [head[0], {"role": "user", "content": head[1]["content"] + note}]
    kept = [m for turn in turns for m in turn]
    if size > budget and kept:  # one huge turn left: cut its last message
        rest = sum(message_size(m) for m in head + kept[:-1])
        last = kept[-1]
        kept = [*kept[:-1], {**last, "content": elide_middle(last.get("content") or "", max(budget - rest, 500))}]
    return head + kept, dropped
