"""The spaces an SWE env declares: any Unicode text, and text or a tool call.

Gymnasium's `~gymnasium.spaces.Text` needs its charset listed character by character, and an agent
reads and writes every character a repository holds (accents, box drawing, emoji, control characters).
`UnicodeText` holds any ``str`` of valid Unicode up to a length; `Action` adds the tool calls an env
with ``tools`` runs. Both are ordinary `gymnasium.spaces.Space` subclasses, so ``check_env`` and the
vector API (``batch_space`` makes a `~gymnasium.spaces.Tuple` of them) work unchanged.
"""

from __future__ import annotations

import string
from collections.abc import Sequence
from typing import Any

import numpy as np
from gymnasium import spaces

from swe_gym.tools import BASH, ToolCallError, tool_call
from swe_gym.tools.calls import looks_like_call

#: Longest action the action space declares (a 1 MiB heredoc is a legitimate action).
MAX_ACTION_CHARS = 1 << 20
#: What `UnicodeText.sample` draws from: ASCII and a few characters of each kind a repository holds.
SAMPLE_CHARS = string.printable + "éüß→✓─│┌┐└┘≤π∑😀🎉中文\u200b"
#: The longest sample (a sample need not span the whole space: an action of a million characters is allowed
#: but a poor thing to draw at random).
SAMPLE_MAX_LENGTH = 64


def _valid_unicode(text: str) -> bool:
    """Whether ``text`` holds only Unicode scalar values (no lone surrogate, which no UTF-8 text can hold)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


class UnicodeText(spaces.Space[str]):
    """Every ``str`` of at most ``max_length`` characters whose characters are valid Unicode.

    >>> space = UnicodeText(100)
    >>> space.contains("grep café"), space.contains("┌─┐ 🎉"), space.contains("x" * 101), space.contains(b"ls")
    (True, True, False, False)
    """

    def __init__(self, max_length: int, seed: int | np.random.Generator | None = None) -> None:
        if max_length < 0:
            raise ValueError(f"max_length must be >= 0, got {max_length}")
        self.max_length = max_length
        super().__init__(dtype=str, seed=seed)

    @property
    def is_np_flattenable(self) -> bool:
        return False

    def sample(self, mask: Any = None, probability: Any = None) -> str:
        if mask is not None or probability is not None:
            raise ValueError("UnicodeText.sample takes no mask or probability")
        length = int(self.np_random.integers(0, min(self.max_length, SAMPLE_MAX_LENGTH) + 1))
        return "".join(self.np_random.choice(list(SAMPLE_CHARS), size=length))

    def contains(self, x: Any) -> bool:
        return isinstance(x, str) and len(x) <= self.max_length and _valid_unicode(x)

    def __repr__(self) -> str:
        return f"UnicodeText({self.max_length})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, UnicodeText) and other.max_length == self.max_length


class Action(spaces.Space[Any]):
    """An action an env runs: bash text (`UnicodeText`), or, when it has ``tools``, a call to one of them.

    A tool call is anything `swe_gym.tools.tool_call` reads (a ``{"name", "arguments"}`` dict, an
    OpenAI ``tool_calls`` entry, a `~swe_gym.tools.ToolCall`, their JSON text) naming one of ``tools``.
    Its arguments are the tool's to judge: a call the tool refuses is still a step (an error observation).

    >>> space = Action(1000, tools=("bash", "submit"))
    >>> space.contains("grep café"), space.contains({"name": "bash", "arguments": {"command": "ls"}})
    (True, True)
    >>> space.contains({"name": "rm_rf", "arguments": {}}), Action(1000).contains({"name": "bash"})
    (False, False)
    """

    def __init__(
        self, max_length: int, tools: Sequence[str] | None = None, seed: int | np.random.Generator | None = None
    ) -> None:
        self.text = UnicodeText(max_length)
        self.tools = tuple(tools) if tools is not None else None
        super().__init__(dtype=None, seed=seed)

    @property
    def is_np_flattenable(self) -> bool:
        return False

    def seed(self, seed: int | None = None) -> int | list[int] | dict[str, int]:
        seeded = super().seed(seed)
        self.text.seed(int(self.np_random.integers(2**31)))
        return seeded

    def sample(self, mask: Any = None, probability: Any = None) -> Any:
        text = self.text.sample(mask, probability)
        if self.tools and BASH in self.tools and self.np_random.random() < 0.5:
            return {"name": BASH, "arguments": {"command": text}}
        return text

    def contains(self, x: Any) -> bool:
        if isinstance(x, str) and (self.tools is None or not looks_like_call(x)):
            return self.text.contains(x)
        if self.tools is None:
            return False
        try:
            call = tool_call(x)
        except (ToolCallError, TypeError, ValueError):
            return False
        texts = [value for value in call.arguments.values() if isinstance(value, str)]
        return call.name in self.tools and all(self.text.contains(value) for value in texts)

    def __repr__(self) -> str:
        return f"Action({self.text.max_length}, tools={self.tools!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Action) and (other.text, other.tools) == (self.text, self.tools)


def env_spaces(max_observation_chars: int, tools: Sequence[str] | None) -> tuple[UnicodeText, Action]:
    """An env's observation and action spaces (of one sub-env, for a vector env)."""
    return UnicodeText(max_observation_chars), Action(MAX_ACTION_CHARS, tools)
