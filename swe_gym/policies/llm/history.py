"""What of `LLMPolicy`'s conversation is sent: the system and task messages always, then the most recent
turns that fit the character budget (the dropped count said in the task message), a lone huge turn cut."""

from __future__ import annotations

from swe_gym.envs.text import elide_middle

#: Room kept, over budget, for the note that says how much was dropped.
_NOTE_ROOM = 120


def fit_history(messages: list[dict[str, str]], budget: int) -> tuple[list[dict[str, str]], int]:
    """``(messages to send, messages dropped)`` for a conversation of system, task, then turns."""
    head, turns = messages[:2], messages[2:]
    size = sum(len(m["content"]) for m in messages)
    budget = budget if size <= budget else budget - _NOTE_ROOM
    dropped = 0
    # Drop (assistant, user) pairs from the front, so roles keep alternating; keep the last turn.
    while size > budget and len(turns) > 2:
        size -= len(turns[0]["content"]) + len(turns[1]["content"])
        turns = turns[2:]
        dropped += 2
    if dropped:
        note = f"\n\n[{dropped} earlier messages of this conversation were omitted to fit the context budget.]"
        head = [head[0], {"role": "user", "content": head[1]["content"] + note}]
    if size > budget and turns:  # one huge turn left: cut it
        rest = sum(len(m["content"]) for m in head + turns[:-1])
        turns = [*turns[:-1], {**turns[-1], "content": elide_middle(turns[-1]["content"], max(budget - rest, 500))}]
    return head + turns, dropped
