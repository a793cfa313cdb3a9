"""One action parser, one submission rule, one head-and-tail cut: what every front end shares.

`parse_action` reads replies for the LLM policy and the NeMo RL env alike; `is_submission` is the
rule of `SWEEnv` and of both mini-swe-agent adapters; `elide_middle` cuts observations and replies.
"""

from __future__ import annotations

import gymnasium as gym
import pytest
from hypothesis import given
from hypothesis import strategies as st

from swe_gym.envs.actions import COMMAND_LANGUAGES, ActionFormatError, parse_action
from swe_gym.envs.prompt import SUBMIT_MARKER, is_submission
from swe_gym.envs.text import elide_middle
from swe_gym.integrations import nemo_rl
from swe_gym.policies.llm import policy as llm_policy
from tests.conftest import provider_setup


def test_every_front_end_uses_the_one_parser_and_error() -> None:
    assert llm_policy.parse_action is nemo_rl.parse_action is parse_action
    assert nemo_rl.ActionFormatError is ActionFormatError


@pytest.mark.parametrize("language", sorted(COMMAND_LANGUAGES))
def test_shell_blocks_are_commands(language: str) -> None:
    assert parse_action(f"THOUGHT: x\n```{language}\n  ls -la\n```\n") == "ls -la"


@pytest.mark.parametrize("language", ["python", "console", "zsh", "diff"])
def test_other_blocks_are_text(language: str) -> None:
    with pytest.raises(ActionFormatError, match=f"```{language} block is not a command"):
        parse_action(f"```{language}\n$ ls\n```")


@pytest.mark.parametrize(
    ("reply", "reason"),
    [
        ("no command here", "no <bash>...</bash> element"),
        ("<bash>ls</bash> and <bash>pwd</bash>", "2 <bash> elements"),
        ("<bash>  \n</bash>", "<bash> element is empty"),
        ("<bash>cat <<'EOF' > f.py\nprint(1)", "not closed with </bash> \\(your reply was cut off"),
        ("  ", "empty"),
    ],
)
def test_tag_format_errors_say_what_to_send(reply: str, reason: str) -> None:
    with pytest.raises(ActionFormatError, match=reason):
        parse_action(reply, action_format="tag", truncated=True)


def test_tag_format_reads_the_one_element() -> None:
    assert parse_action("think first\n<cmd>\ngrep -rn x .\n</cmd>", action_format="tag", tag="cmd") == "grep -rn x ."


@pytest.mark.parametrize(
    ("output", "exit_code", "submits"),
    [
        (f"{SUBMIT_MARKER}\n", 0, True),
        (f"\n  {SUBMIT_MARKER}  \ndiff --git a/x b/x\n", 0, True),
        (f"{SUBMIT_MARKER}\nfatal: not a git repository\n", 128, False),  # `echo MARKER && git diff` failed
        (f"{SUBMIT_MARKER}\n", -1, False),  # timed out
        (f"{SUBMIT_MARKER}\n", None, False),
        (f"note\n{SUBMIT_MARKER}\n", 0, False),  # only the first line counts
        (f"{SUBMIT_MARKER} and more\n", 0, False),
    ],
)
def test_the_submission_rule_is_mini_swe_agents(output: str, exit_code: int | None, submits: bool) -> None:
    assert is_submission(output, exit_code) is submits


def test_sweenv_submits_only_on_exit_zero() -> None:
    provider_setup("local")
    env = gym.make("swe_gym/SWE-v0", max_steps=5, grade_on_truncation=False)
    try:
        env.reset(seed=0)
        observation, _, terminated, truncated, info = env.step(f"echo {SUBMIT_MARKER}; false")
        assert not (terminated or truncated) and info["exit_code"] == 1
        assert observation.startswith(SUBMIT_MARKER)  # the failure is shown; the episode goes on
        _, reward, terminated, truncated, info = env.step(f"echo {SUBMIT_MARKER}")
        assert terminated and not truncated and reward == 0.0 and info["report"]["empty_patch"]
    finally:
        env.close()


@given(st.text(max_size=400), st.integers(min_value=1, max_value=300))
def test_elide_middle_fits_and_keeps_both_ends(text: str, limit: int) -> None:
    cut = elide_middle(text, limit)
    assert len(cut) <= limit
    if len(text) <= limit:
        assert cut == text
    elif limit >= 60:  # room for the note and some of each end
        head, _, tail = cut.partition("\n[... ")
        assert text.startswith(head) and text.endswith(tail.split(" elided ...]\n", 1)[1])
