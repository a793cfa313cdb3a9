"""`LLMConfig`: the endpoint, sampling and robustness settings of `LLMPolicy`."""

from __future__ import annotations

import os
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from swe_gym.policies.llm.templates import (
    INSTANCE_TEMPLATE,
    SYSTEM_TEMPLATE,
    TOOL_INSTANCE_TEMPLATE,
    TOOL_SYSTEM_TEMPLATE,
)
from swe_gym.settings import setting

ENV_PREFIX = "SWE_GYM_LLM_"
#: A retry's backoff never exceeds this many seconds (a server's Retry-After aside).
MAX_BACKOFF_S = 30.0


def _env(name: str, default: str | None = None) -> str | None:
    return setting(ENV_PREFIX, name, default)


class LLMConfig(BaseModel):
    """Endpoint, sampling and robustness settings of `LLMPolicy`.

    ``base_url`` and ``model`` fall back to ``SWE_GYM_LLM_BASE_URL`` / ``SWE_GYM_LLM_MODEL`` (from the
    environment or the file ``SWE_GYM_LLM_ENV_FILE`` names), ``api_key`` to ``OPENAI_API_KEY``.
    """

    model_config = ConfigDict(extra="forbid")

    base_url: str | None = Field(
        default_factory=lambda: _env("BASE_URL"), description="e.g. http://127.0.0.1:18791/v1 (None: OpenAI's)"
    )
    model: str | None = Field(default_factory=lambda: _env("MODEL"), description="the model id the endpoint serves")
    api_key: str = Field(default_factory=lambda: os.environ.get("OPENAI_API_KEY") or "none", repr=False)
    temperature: float = Field(default=0.0, ge=0.0, le=2.0, description="sampling temperature")
    max_tokens: int = Field(default=512, ge=1, description="completion tokens per reply")
    request_timeout_s: float = Field(
        default=120.0,
        gt=0,
        description="timeout of each try (connect, every read), seconds; the tries and backoffs share a hard deadline",
        json_schema_extra={"flag": "timeout"},
    )
    max_retries: int = Field(default=3, ge=0, description="further tries of a request after a transient error")
    retry_backoff_s: float = Field(default=1.0, ge=0, description="first backoff; doubles per retry, at most 30 s")
    context_budget_chars: int = Field(
        default=24000,
        ge=1000,
        description="history sent per request, chars",
        json_schema_extra={"flag": "context-chars"},
    )
    max_observation_chars: int = Field(default=4000, ge=200, description="each observation keeps head and tail")
    max_format_errors: int = Field(default=2, ge=0, description="re-asks per action after an unusable reply")
    max_recorded_reply_chars: int = Field(default=2000, ge=0, description="each reply kept in episode_stats")
    system_template: str = Field(default=SYSTEM_TEMPLATE, repr=False)
    instance_template: str = Field(
        default=INSTANCE_TEMPLATE, repr=False, description="{task}: the reset observation; {submit}: the action"
    )
    tool_calling: Literal["auto", "native", "text"] = Field(
        default="auto",
        description="native: the env's tools go in each request's tools= and the reply's tool_calls are the "
        "actions; text: one bash block per reply; auto: native while the env takes tool calls and the endpoint "
        "answers with them, the bash block when it rejects tools= or answers with a block instead",
    )
    tools: list[Literal["bash", "str_replace_editor", "submit"]] | None = Field(
        default=None, description="the tools offered to the model (None: the env's, from its reset info)"
    )
    tool_system_template: str = Field(
        default=TOOL_SYSTEM_TEMPLATE, repr=False, description="{tools}: a line per tool; {fallback}: auto's note"
    )
    tool_instance_template: str = Field(
        default=TOOL_INSTANCE_TEMPLATE, repr=False, description="{task}: the reset observation; {submit}: how"
    )

    record_tokens: bool = Field(
        default=False,
        description="ask the server for its token ids and logprobs and record them per call "
        "(LLMPolicy.episode_tokens; swe_gym.policies.llm.tokens)",
    )
    chat_template: str | None = Field(
        default=None,
        repr=False,
        description="the model's chat template (a .gguf file, a template file, or its text): with record_tokens, "
        "the prompt ids of a server that returns none (llama-cpp-python) are its tokenizer's of this rendering",
    )

    def backoff_s(self, retry: int) -> float:
        """The wait before retry number ``retry`` (0 for the first): ``retry_backoff_s`` doubled per retry."""
        return min(self.retry_backoff_s * 2.0**retry, MAX_BACKOFF_S)

    def deadline_s(self) -> float:
        """The whole request's hard deadline: every try's ``request_timeout_s`` and every backoff between them."""
        tries = self.max_retries + 1
        return tries * self.request_timeout_s + sum(self.backoff_s(i) for i in range(self.max_retries))
