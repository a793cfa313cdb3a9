"""Exact tokens: the response shapes `capture` reads (vLLM's and llama.cpp's, as their servers document them),
the model/environment mask of `token_segments`, and `LLMPolicy(record_tokens=True)` against the REAL llama.cpp
server (llama-cpp-python with SmolLM2), its token calls kept through a trajectory's round trip."""

from __future__ import annotations

import asyncio
from pathlib import Path

import gymnasium as gym
import pytest

from swe_gym.policies import LLMPolicy
from swe_gym.policies.llm.token_capture import capture
from swe_gym.policies.llm.tokens import TokenCall, token_segments
from swe_gym.wrappers import TrajectoryRecorder, read_trajectories
from tests.integrations.test_capture_proxy import detokenize, smollm2_gguf
from tests.policies.test_llm_policy import TASK_IDS, llm_endpoint  # noqa: F401  (a fixture)


def test_vllm_shape_is_read_as_the_servers_own_ids() -> None:
    response = {
        "prompt_token_ids": [1, 2, 3],
        "choices": [
            {
                "message": {"content": "ab"},
                "token_ids": [7, 8],
                "logprobs": {"content": [{"token": "a", "logprob": -0.5}, {"token": "b", "logprob": -1.0}]},
            }
        ],
    }
    call = asyncio.run(capture({"messages": []}, response))
    assert (call.shape, call.prompt_ids, call.completion_ids) == ("vllm", [1, 2, 3], [7, 8])
    assert call.completion_logprobs == [-0.5, -1.0] and call.prompt_source == call.completion_source == "server"
    as_ids = {"choices": [{"logprobs": {"content": [{"token": "token_id:42", "logprob": -0.1}]}}]}
    assert asyncio.run(capture({}, as_ids)).completion_ids == [42]  # return_tokens_as_token_ids


def test_llama_cpp_servers_ids_in_logprobs_entries() -> None:
    response = {"choices": [{"logprobs": {"content": [{"id": 5, "token": "x", "logprob": -0.2}]}}]}
    call = asyncio.run(capture({}, response))
    assert (call.shape, call.completion_ids, call.completion_logprobs) == ("llama.cpp", [5], [-0.2])
    assert call.prompt_ids is None and call.problems == ["the server returned no prompt ids"]


def test_no_logprobs_no_ids_says_so() -> None:
    call = asyncio.run(capture({}, {"choices": [{"message": {"content": "hi"}}]}))
    assert call.shape == "none" and not call.exact and "neither token ids nor logprobs" in call.problems[0]


def test_segments_mask_model_and_environment_tokens_and_cut_where_history_is_rewritten() -> None:
    first = TokenCall(prompt_ids=[1, 2], completion_ids=[3, 4], completion_logprobs=[-0.1, -0.2])
    second = TokenCall(prompt_ids=[1, 2, 3, 4, 9, 9], completion_ids=[5], completion_logprobs=[-0.3]).link(first)
    third = TokenCall(prompt_ids=[1, 2, 8], completion_ids=[6]).link(second)  # an old turn dropped
    assert (second.extends_previous, third.extends_previous) == (True, False)
    lost = TokenCall(problems=["no ids"])
    one, two = token_segments([first, second, lost, third])
    assert one.ids == [1, 2, 3, 4, 9, 9, 5] and one.mask == [0, 0, 1, 1, 0, 0, 1] and one.calls == [0, 1]
    assert one.logprobs == [None, None, -0.1, -0.2, None, None, -0.3]
    assert two.ids == [1, 2, 8, 6] and two.mask == [0, 0, 0, 1] and two.calls == [3]


@pytest.mark.timeout(900)
def test_policy_records_the_servers_tokens_and_the_trajectory_keeps_them(
    llm_endpoint: dict[str, str],  # noqa: F811
    tmp_path: Path,
) -> None:
    config = {**llm_endpoint, "max_tokens": 12, "context_budget_chars": 9000, "max_format_errors": 0}
    policy = LLMPolicy({**config, "record_tokens": True, "chat_template": str(smollm2_gguf())})
    out = tmp_path / "tokens.jsonl"
    env = TrajectoryRecorder(
        gym.make("swe_gym/SWE-v0", max_steps=2, instance_ids=TASK_IDS[:1]),
        out,
        policy=policy,
        policy_stats=policy.episode_stats,
        policy_tokens=policy.episode_tokens,
    )
    try:
        observation, info = env.reset(options={"task_id": TASK_IDS[0]})
        policy.reset(observation, info)
        done = False
        while not done:
            observation, _, terminated, truncated, info = env.step(policy.act(observation, info))
            done = terminated or truncated
        replies = [m["content"] for m in policy.messages if m["role"] == "assistant"]
    finally:
        env.close()
        policy.close()
    (record,) = read_trajectories(out)
    calls = record.token_calls or []
    assert len(calls) == len(replies) == record.policy_stats["model_calls"] == 2  # type: ignore[index]
    for call, reply in zip(calls, replies, strict=True):
        assert call.exact and not call.problems and call.shape == "token-texts"
        assert len(call.completion_ids or []) == len(call.completion_logprobs or []) == 12
        assert detokenize(llm_endpoint["base_url"], call.completion_ids or []) == reply
    assert calls[0].extends_previous is None and calls[1].extends_previous is True  # the history was kept
    (segment,) = token_segments(calls)
    assert sum(segment.mask) == 24 and len(segment.ids) == len(calls[1].prompt_ids or []) + 12
    assert segment.ids[-12:] == calls[1].completion_ids and segment.mask[-13:] == [0] + [1] * 12
