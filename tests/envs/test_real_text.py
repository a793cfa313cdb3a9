"""The agent sees the real text: every character a file or a command's output holds, on every front end.

Bytes that are not UTF-8 are marked (``�xe9``) so no two byte strings look alike, and text copied from any
observation names the bytes it came from: the editor's ``str_replace`` finds them, a bash action gets them.
The declared spaces hold every observation and every action the env runs, tool calls included. The real
repositories' text (sympy's pretty printer, Django's translations, an emoji in a failing test's output) is
read on their own images in ``tests/envs/test_real_text_images.py``.
"""

from __future__ import annotations

from collections.abc import Iterator

import gymnasium as gym
import pytest
from gymnasium.utils.env_checker import check_env
from hypothesis import given
from hypothesis import strategies as st

import swe_gym  # noqa: F401 - registers the env
from swe_gym.shown_text import to_bytes, to_text
from swe_gym.tools import TOOL_NAMES
from swe_gym.vector import SWEVectorEnv
from tests.conftest import provider_setup

#: UTF-8 text of each kind a repository holds: accents, CJK, box drawing, emoji, a zero-width space, a tab.
UNICODE = "café naïve 中文 ┌─┐│└┘ ✓ → 😀🎉 a\u200bb\tend"


@given(st.binary(max_size=400))
def test_shown_text_is_valid_unicode_and_names_its_bytes(data: bytes) -> None:
    text = to_text(data)
    text.encode("utf-8")  # never a lone surrogate: every observation can be tokenised and sent as JSON
    assert to_bytes(text) == data


@given(st.text(max_size=200))
def test_valid_utf8_is_shown_as_itself(text: str) -> None:
    data = text.encode("utf-8", "surrogatepass")
    if "\ufffd" not in text and all(not 0xD800 <= ord(c) <= 0xDFFF for c in text):
        assert to_text(data) == text


def test_look_alikes_are_told_apart() -> None:
    latin1, literal, replacement = b"caf\xe9", b"caf\\xe9", "caf\ufffdxe9".encode()
    shown = {to_text(latin1), to_text(literal), to_text(replacement)}
    assert shown == {"caf\ufffdxe9", "caf\\xe9", "caf\ufffd\ufffdxe9"}


@pytest.fixture
def env() -> Iterator[gym.Env]:
    provider_setup("local")
    environment = gym.make("swe_gym/SWE-v0", tools=list(TOOL_NAMES), max_steps=50)
    environment.reset(seed=0)
    yield environment
    environment.close()


def step(env: gym.Env, action: object) -> str:
    assert env.action_space.contains(action), action
    obs, reward, terminated, truncated, info = env.step(action)
    assert env.observation_space.contains(obs), obs
    assert (reward, terminated, truncated) == (0.0, False, False), obs
    return obs


def edit(command: str, path: str, **arguments: object) -> dict[str, object]:
    return {"name": "str_replace_editor", "arguments": {"command": command, "path": path, **arguments}}


def test_output_and_views_carry_the_characters_the_files_hold(env: gym.Env) -> None:
    step(env, edit("create", "unicode.txt", file_text=UNICODE + "\n"))
    assert step(env, "cat unicode.txt") == UNICODE + "\n"
    assert f"1\t{UNICODE}" in step(env, edit("view", "unicode.txt"))
    assert step(env, "printf '\\033[1mbold\\033[0m\\r\\n'") == "\x1b[1mbold\x1b[0m\r\n"  # control characters as is
    # A copy of the shown text is a valid bash action that means the same bytes.
    assert step(env, f"grep -c '{UNICODE.split()[3]}' unicode.txt") == "1\n"


def test_a_latin1_file_and_its_escaped_look_alike_are_different_text_and_edits_hit_the_right_one(
    env: gym.Env,
) -> None:
    step(env, "printf 'caf\\xe9\\n' > latin1.txt && printf 'caf\\\\xe9\\n' > literal.txt")
    shown_latin1 = step(env, "cat latin1.txt")
    shown_literal = step(env, "cat literal.txt")
    assert (shown_latin1, shown_literal) == ("caf\ufffdxe9\n", "caf\\xe9\n")
    view = step(env, edit("view", "latin1.txt"))
    copied = view.rsplit("\t", 1)[1].rstrip("\n")  # exactly what the view shows on the file's line
    obs = step(env, edit("str_replace", "latin1.txt", old_str=copied, new_str="café"))
    assert "Edited" in obs, obs
    assert step(env, "cat latin1.txt literal.txt") == "café\ncaf\\xe9\n"
    obs = step(env, edit("str_replace", "literal.txt", old_str="caf\ufffdxe9", new_str="x"))
    assert "does not appear verbatim" in obs  # the look-alike is not touched
    assert step(env, "cat literal.txt") == "caf\\xe9\n"


def test_text_copied_from_a_command_output_replaces_in_a_file_of_mixed_encodings(env: gym.Env) -> None:
    step(env, "printf 'head \\xff\\xfe tail \\xe2\\x94\\x80 \\xef\\xbf\\xbd end\\n' > mixed.txt")
    shown = step(env, "cat mixed.txt")
    assert shown == "head \ufffdxff\ufffdxfe tail ─ \ufffd\ufffd end\n"
    obs = step(env, edit("str_replace", "mixed.txt", old_str=shown.strip(), new_str="clean ─"))
    assert "Edited" in obs, obs
    assert step(env, "cat mixed.txt") == "clean ─\n"


def test_the_spaces_hold_every_action_the_env_runs_and_check_env_passes() -> None:
    provider_setup("local")
    plain = gym.make("swe_gym/SWE-v0", max_steps=5)
    tools = gym.make("swe_gym/SWE-v0", max_steps=5, tools=list(TOOL_NAMES))
    try:
        for environment in (plain, tools):
            assert environment.action_space.contains("grep café")
            assert environment.action_space.contains("printf '┌─┐ 🎉'")
            check_env(environment.unwrapped)
        call = {"name": "bash", "arguments": {"command": "ls"}}
        openai = {"id": "c1", "type": "function", "function": {"name": "submit", "arguments": "{}"}}
        assert tools.action_space.contains(call) and tools.action_space.contains(openai)
        assert not plain.action_space.contains(call)  # an env without tools= runs strings only
        assert not tools.action_space.contains({"name": "no_such_tool", "arguments": {}})
        samples = [tools.action_space.sample() for _ in range(40)]
        assert any(isinstance(s, dict) for s in samples) and any(isinstance(s, str) for s in samples)
    finally:
        plain.close()
        tools.close()


def test_the_vector_env_shows_the_same_text() -> None:
    provider_setup("local")
    env = SWEVectorEnv(num_envs=2, max_steps=5)
    try:
        env.reset(seed=0)
        obs, *_ = env.step(["printf 'caf\\xc3\\xa9'", "printf 'caf\\xe9'"])
        assert obs == ("café", "caf\ufffdxe9") and env.observation_space.contains(obs)
        assert env.action_space.contains(("grep café", "ls"))
    finally:
        env.close()
