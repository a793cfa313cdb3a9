"""`ChatClient`: one OpenAI-compatible chat endpoint, behind the openai client's own retries and timeouts.

- Connection failures, timeouts and HTTP 408/409/429/5xx are retried by the openai client itself
  (``max_retries``), ``retry_backoff_s`` apart, doubling per retry up to 30 s (a server's ``Retry-After``
  wins); every try's connect and reads time out after ``request_timeout_s`` (the client's ``timeout``).
- The whole request, its tries and backoffs included, has a hard deadline (`LLMConfig.deadline_s`), so
  an endpoint that trickles bytes and never lets a read time out cannot hold a rollout. The request is a
  coroutine on swe_gym's background event loop: past the deadline it is cancelled and its connection
  closed; no thread is left behind.
- An answer that is not a chat completion (a body that is not JSON, a JSON string, an HTML error page),
  which the client takes as an answer, is asked again the same way, up to ``max_retries`` times.
- Any other HTTP error (a wrong model name, a bad key) is a `PolicyError` at once; a request that
  overflows the model's context is `ContextOverflow`, for the policy to shrink its history; a request
  with ``tools`` that the endpoint refuses as such (HTTP 400/422 naming tools or functions, as vLLM
  without a tool parser, Ollama or OpenAI answer) is `ToolsRejected`, for the policy to fall back.
- A reply's ``tool_calls`` come back as OpenAI ``tool_calls`` entries (plain dicts, ``arguments`` a
  JSON string), in order.
- With ``record_tokens``, each request asks for the server's token ids and logprobs, and each completion
  carries the call's exact tokens (`swe_gym.policies.llm.token_capture`; None fields say what was not had).

Each failed try is reported to the caller's ``on_failure(description, retried)`` as it is known.
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import json
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from tenacity import AsyncRetrying, RetryCallState, retry_if_exception_type, stop_after_attempt

from swe_gym.errors import ConfigError, PolicyError
from swe_gym.policies.llm.chat_template import ChatTemplate
from swe_gym.policies.llm.config import LLMConfig
from swe_gym.policies.llm.token_capture import TOKEN_FIELDS, ServerTokenizer, capture
from swe_gym.policies.llm.tokens import TokenCall
from swe_gym.sandbox.loop import run_sync

#: ``on_failure(description, retried)``: a try failed; ``retried`` says whether another one follows.
FailureCallback = Callable[[str, bool], None]
#: HTTP statuses the openai client retries: timeout, conflict, rate limit (and every 5xx).
TRANSIENT_STATUS = frozenset({408, 409, 429})
_CONTEXT_OVERFLOW = re.compile(r"context|too (?:long|many tokens)|maximum.*tokens|exceed", re.IGNORECASE)
_ABOUT_TOOLS = re.compile(r"tool|function", re.IGNORECASE)


class ContextOverflow(Exception):
    """The endpoint refused the request because it overflows the model's context."""


class NotACompletion(Exception):
    """The endpoint answered with something that is no chat completion: asked again, the same way."""


class ToolsRejected(Exception):
    """The endpoint refused a request because of its ``tools`` (it does no tool calling)."""


@dataclass(frozen=True)
class Completion:
    """One chat completion: the reply, why it stopped, its token counts (None: not reported), its latency,
    its tool calls (OpenAI ``tool_calls`` entries; ``id`` None where the endpoint gave none), and with
    ``record_tokens`` its exact tokens."""

    text: str
    finish_reason: str | None
    prompt_tokens: int | None
    completion_tokens: int | None
    latency_s: float
    tool_calls: tuple[dict[str, Any], ...] = ()
    tokens: TokenCall | None = None


@functools.cache
def _client_class() -> type:
    """``openai.AsyncOpenAI`` whose retries wait ``LLMConfig.backoff_s`` (unless the server says how long)."""
    import openai

    class Client(openai.AsyncOpenAI):  # type: ignore[misc,valid-type]
        swe_gym_config: LLMConfig

        def _calculate_retry_timeout(self, remaining_retries: int, options: Any, response_headers: Any = None) -> float:
            if response_headers is not None and any(h in response_headers for h in ("retry-after", "retry-after-ms")):
                return super()._calculate_retry_timeout(remaining_retries, options, response_headers)
            return self.swe_gym_config.backoff_s(options.get_max_retries(self.max_retries) - remaining_retries)

    return Client


class ChatClient:
    """Chat completions from the endpoint of ``config``; see the module for how failures end."""

    def __init__(self, config: LLMConfig) -> None:
        try:
            import openai
        except ImportError as exc:
            raise ConfigError("the LLM policy needs the openai client: pip install 'swe_gym[llm]'") from exc
        self.config = config
        self._openai = openai
        self._statuses: list[int | None] = []  # the HTTP status of each try of the current call (None: no answer)
        self._failures = 0  # tries of the current request that failed so far
        http_client = openai.DefaultAsyncHttpxClient(
            event_hooks={"request": [self._on_request], "response": [self._on_response]}
        )
        self.client = _client_class()(
            base_url=config.base_url,
            api_key=config.api_key,
            timeout=config.request_timeout_s,
            max_retries=config.max_retries,
            http_client=http_client,
        )
        self.client.swe_gym_config = config
        self._template = (
            ChatTemplate.load(config.chat_template) if config.record_tokens and config.chat_template else None
        )
        self._tokenizer: ServerTokenizer | None = None  # made on the background loop, at the first call

    @property
    def endpoint(self) -> str:
        return self.config.base_url or "api.openai.com"

    def complete(
        self,
        messages: list[dict[str, Any]],
        on_failure: FailureCallback,
        tools: list[dict[str, Any]] | None = None,
    ) -> Completion:
        """One chat completion of ``messages``, offering ``tools`` (OpenAI schemas; ``tool_choice="auto"``)
        when given (waits on swe_gym's background loop; not callable from it)."""
        return run_sync(self._complete(messages, on_failure, tools))

    def close(self) -> None:
        """Close the HTTP client's connections."""
        run_sync(self._close())

    async def _close(self) -> None:
        await self.client.close()
        if self._tokenizer is not None:
            await self._tokenizer.client.aclose()

    async def _on_request(self, request: Any) -> None:
        self._statuses.append(None)

    async def _on_response(self, response: Any) -> None:
        if self._statuses:
            self._statuses[-1] = response.status_code

    async def _complete(
        self, messages: list[dict[str, Any]], on_failure: FailureCallback, tools: list[dict[str, Any]] | None
    ) -> Completion:
        """Ask until an answer is a chat completion (tenacity: at most ``max_retries`` more times,
        ``backoff_s`` apart); every other failure ends the request at once."""
        config = self.config
        self._failures = 0

        def report_retry(state: RetryCallState) -> None:
            if state.outcome is not None:
                self._failures += self._report(str(state.outcome.exception()), on_failure, retried=True)

        retrying = AsyncRetrying(
            stop=stop_after_attempt(config.max_retries + 1),
            wait=lambda state: config.backoff_s(state.attempt_number - 1),
            retry=retry_if_exception_type(NotACompletion),
            before_sleep=report_retry,
            reraise=True,
        )
        try:
            return await retrying(self._ask, messages, on_failure, tools)
        except NotACompletion as exc:
            raise self._failed(str(exc), self._failures, on_failure) from None

    async def _ask(
        self, messages: list[dict[str, Any]], on_failure: FailureCallback, tools: list[dict[str, Any]] | None
    ) -> Completion:
        """One request (the openai client's own retries inside it); `NotACompletion` if its answer is none."""
        openai, config, failures = self._openai, self.config, self._failures
        deadline = config.deadline_s()
        offer: dict[str, Any] = {"tools": tools, "tool_choice": "auto"} if tools else {}
        if config.record_tokens:
            offer["extra_body"] = dict(TOKEN_FIELDS)
        self._statuses = []
        started = time.perf_counter()
        try:
            async with asyncio.timeout(deadline):
                response = await self.client.chat.completions.create(
                    model=config.model,
                    messages=messages,
                    temperature=config.temperature,
                    max_tokens=config.max_tokens,
                    **offer,
                )
        except TimeoutError:
            problem = f"timed out (no complete answer within {deadline:g} s)"
            raise self._failed(problem, failures, on_failure) from None
        except openai.APITimeoutError:
            raise self._failed(f"timed out after {config.request_timeout_s:g} s", failures, on_failure) from None
        except openai.APIConnectionError as exc:
            raise self._failed(f"cannot connect ({_describe(exc)})", failures, on_failure) from exc
        except (openai.BadRequestError, openai.UnprocessableEntityError) as exc:
            if _CONTEXT_OVERFLOW.search(str(exc)):  # first: OpenAI's overflow names "the functions" too
                raise ContextOverflow(str(exc)) from exc
            if tools and _ABOUT_TOOLS.search(str(exc)):
                raise ToolsRejected(_describe(exc)) from exc
            raise PolicyError(f"the model endpoint refused the request: {_describe(exc)}") from exc
        except openai.APIStatusError as exc:
            if exc.status_code in TRANSIENT_STATUS or exc.status_code >= 500:
                problem = f"HTTP {exc.status_code} ({_describe(exc)})"
                raise self._failed(problem, failures, on_failure) from exc
            raise PolicyError(
                f"the model endpoint {self.endpoint} refused the request: {_describe(exc)}. "
                f"Check the model name (model={config.model!r}) and the API key"
            ) from exc
        except (openai.OpenAIError, ValueError, TypeError, KeyError, AttributeError) as exc:  # e.g. not JSON
            raise NotACompletion(f"not a chat completion ({_describe(exc)})") from None
        if not hasattr(response, "choices"):
            raise NotACompletion(f"not a chat completion (got {type(response).__name__}: {str(response)[:200]!r})")
        completion = _completion(response, time.perf_counter() - started)
        if config.record_tokens:
            request = {"model": config.model, "messages": messages, **({"tools": tools} if tools else {})}
            completion = dataclasses.replace(completion, tokens=await self._capture(request, response))
        return completion

    async def _capture(self, request: dict[str, Any], response: Any) -> TokenCall:
        """The call's exact tokens; a tokenizer endpoint that fails leaves them None, with the reason."""
        import httpx  # the openai client's own transport: there whenever a model is called (the llm extra)

        if self._tokenizer is None:
            client = httpx.AsyncClient(timeout=self.config.request_timeout_s)
            separator = self._template.eos_token if self._template is not None else None
            self._tokenizer = ServerTokenizer(self.config.base_url or "", client, self.config.api_key, separator)
        try:
            return await capture(request, response.model_dump(), tokenizer=self._tokenizer, template=self._template)
        except (httpx.HTTPError, ValueError, KeyError, TypeError) as exc:
            return TokenCall(problems=[f"the server's tokenizer endpoints failed: {_describe(exc)}"])

    def _report(self, last: str, on_failure: FailureCallback, *, retried: bool) -> int:
        """Report every try of the call just ended (the client's retries among them); returns how many."""
        statuses = self._statuses or [None]
        for status in statuses[:-1]:  # tries the client retried on its own
            on_failure(f"HTTP {status}" if status is not None else last, True)
        on_failure(last, retried)
        return len(statuses)

    def _failed(self, last: str, failures: int, on_failure: FailureCallback) -> PolicyError:
        failures += self._report(last, on_failure, retried=False)
        return PolicyError(
            f"the model endpoint {self.endpoint} failed {failures} time(s); last error: {last}. Check that the "
            f"server runs and answers chat completions (base_url=, model={self.config.model!r}), or raise "
            "request_timeout_s= or max_retries="
        )


def _completion(response: Any, latency_s: float) -> Completion:
    usage = getattr(response, "usage", None)
    prompt_tokens = completion_tokens = None
    if usage is not None and getattr(usage, "prompt_tokens", None) is not None:
        prompt_tokens, completion_tokens = int(usage.prompt_tokens or 0), int(usage.completion_tokens or 0)
    choices = response.choices or []
    if not choices:  # an empty answer: the policy's format-error path asks again
        return Completion("", None, prompt_tokens, completion_tokens, latency_s)
    message = getattr(choices[0], "message", None)
    content = getattr(message, "content", None)
    reason = getattr(choices[0], "finish_reason", None)
    calls = tuple(_entry(call) for call in getattr(message, "tool_calls", None) or ())
    text = content if isinstance(content, str) else ""
    return Completion(text, reason, prompt_tokens, completion_tokens, latency_s, calls)


def _entry(call: Any) -> dict[str, Any]:
    """A reply's tool call as a plain OpenAI ``tool_calls`` entry (``arguments`` a string, as the API sends it)."""
    function = getattr(call, "function", None)
    name = getattr(function, "name", None)
    arguments = getattr(function, "arguments", None)
    if arguments is not None and not isinstance(arguments, str):  # some servers send an object
        arguments = json.dumps(arguments)
    call_id = getattr(call, "id", None)
    return {
        "id": call_id if isinstance(call_id, str) and call_id else None,
        "type": "function",
        "function": {"name": name if isinstance(name, str) else "", "arguments": arguments or ""},
    }


def _describe(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return f"{type(exc).__name__}: {text[:300]}"
