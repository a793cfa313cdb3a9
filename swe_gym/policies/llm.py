"""`LLMPolicy`: a language model behind any OpenAI-compatible chat endpoint picks each action.

The conversation follows mini-swe-agent's text-based style: a system message
with the reply format, a first user message with the task (the env's reset
observation) and how to work, then one assistant reply per action and one user
message per observation. Every reply must hold a THOUGHT and exactly one
fenced ``bash`` block; that block's command is the action. A block holding only
``submit`` ends the episode (the env's `SUBMIT` action).

Failure handling, so that a rollout never crashes on the model and never hangs:

- *Format errors* (no block, several blocks, an empty or unclosed block, prose
  only, an empty reply): the policy re-asks the model within the same `act`,
  telling it what was wrong, up to ``max_format_errors`` times; if the reply is
  still unusable the action is a ``printf`` of the error, so the env steps (the
  step limit still bounds the episode) and the model reads the error as its
  next observation.
- *Endpoint errors*: connection failures, timeouts, HTTP 408/409/429/5xx and
  answers that are not a chat completion are retried with exponential backoff,
  at most ``max_retries`` times; every request has a hard deadline of
  ``request_timeout_s``. Then, and at once for any other HTTP error (a wrong
  model name, a bad key), `PolicyError` says what failed. A request that
  overflows the model's context shrinks the history budget and is retried.
- *History*: the system and task messages always stay; the oldest turns are
  dropped (and the dropped count said) to keep the conversation under
  ``context_budget_chars``; each observation is cut to ``max_observation_chars``.

`episode_stats` reports model calls, tokens (from the endpoint's ``usage``),
latencies, retries and format errors of the current episode; give it to
`TrajectoryRecorder` (``policy_stats=``) to store it with each trajectory.
"""

from __future__ import annotations

import logging
import os
import queue
import re
import shlex
import threading
import time
from collections.abc import Callable
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from swe_gym.envs.prompt import SUBMIT
from swe_gym.errors import ConfigError, PolicyError, validation_problems
from swe_gym.settings import setting

log = logging.getLogger(__name__)

ENV_PREFIX = "SWE_GYM_LLM_"
#: Languages of a fenced block that count as a command (``""``: no language given).
COMMAND_LANGUAGES = frozenset({"", "bash", "sh", "shell", "console", "zsh"})
_FENCE = re.compile(r"^[ \t]*```[ \t]*([\w+-]*)[^\n]*\n(.*?)^[ \t]*```[ \t]*$", re.MULTILINE | re.DOTALL)
_FENCE_LINE = re.compile(r"^[ \t]*```", re.MULTILINE)
#: HTTP statuses worth another try: timeout, conflict, rate limit, server errors.
_TRANSIENT_STATUS = {408, 409, 429}
_CONTEXT_OVERFLOW = re.compile(r"context|too (?:long|many tokens)|maximum.*tokens|exceed", re.IGNORECASE)

SYSTEM_TEMPLATE = """\
You are a software engineer who works in a bash shell, one command at a time, to resolve an issue in a repository.

Every reply has exactly two parts:
1. THOUGHT: a few sentences on what you learned and what you will do next.
2. Exactly ONE bash code block holding ONE command (join several with && or ;).

<format_example>
THOUGHT: I should first see which files the repository holds.

```bash
find . -name '*.py' -not -path './.git/*' | head -n 50
```
</format_example>

A reply without a bash block, or with more than one, is rejected and nothing is run.
"""

INSTANCE_TEMPLATE = """\
{task}

## How to work
1. Find the code the issue is about with grep, and read it with sed -n or cat.
2. Reproduce the problem with a short python3 -c command.
3. Edit the source code with sed -i, or rewrite a file with cat <<'EOF' > FILE, then check your fix.
4. When the fix works, submit: reply with a bash block that holds only the word {submit}.

## Rules
- Exactly ONE bash block per reply, after your THOUGHT.
- Every command runs in a fresh shell in the repository: cd and variables do not carry over.
- No interactive programs (vim, nano, less, a bare python3): they cannot get input.

Example of a reply:

THOUGHT: I need to find where the function from the issue is defined.

```bash
grep -rn "def " --include="*.py" . | head -n 30
```
"""

OBSERVATION_TEMPLATE = "<returncode>{exit_code}</returncode>{note}\n<output>\n{output}\n</output>"

FORMAT_ERROR_TEMPLATE = """\
FORMAT ERROR: {reason}. Nothing was run.
Reply with a THOUGHT, then exactly ONE bash code block holding ONE command, like this:

THOUGHT: why this command.

```bash
ls
```

To finish, reply with a bash block that holds only the word {submit}."""


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
        default=120.0, gt=0, description="hard deadline of one request, seconds", json_schema_extra={"flag": "timeout"}
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


class FormatError(ValueError):
    """A model reply holds no single usable command; the message says why (and is shown to the model)."""


def parse_action(reply: str, *, truncated: bool = False) -> str:
    """The command of a reply holding exactly one ``bash``/``sh``/unlabelled fenced block.

    Raises:
        FormatError: no such block, several, an empty or unclosed one; ``truncated`` (the reply hit
            max_tokens) is mentioned when it explains the problem.
    """
    blocks = _FENCE.findall(reply)
    commands = [body for language, body in blocks if language.lower() in COMMAND_LANGUAGES]
    if len(commands) == 1:
        command = commands[0].strip()
        if not command:
            raise FormatError("the bash block is empty")
        return command
    if len(commands) > 1:
        raise FormatError(f"your reply holds {len(commands)} bash blocks; send exactly one")
    if len(_FENCE_LINE.findall(reply)) % 2 == 1:
        cut = " (your reply was cut off at the token limit: be shorter)" if truncated else ""
        raise FormatError(f"the bash block is not closed with ```{cut}")
    if blocks:
        other = ", ".join(sorted({f"```{language}" for language, _ in blocks}))
        raise FormatError(f"a {other} block is not a command; put the command in a ```bash block")
    if not reply.strip():
        raise FormatError("your reply is empty")
    raise FormatError("your reply holds no bash block")


def truncate_middle(text: str, limit: int) -> str:
    """``text`` cut to about ``limit`` characters, keeping its head and tail."""
    if len(text) <= limit:
        return text
    half = max(limit // 2 - 40, 0)
    omitted = len(text) - 2 * half
    return f"{text[:half]}\n... [{omitted} characters omitted] ...\n{text[len(text) - half :]}"


class _Retryable(Exception):
    """A failed request worth another try."""


def _call_with_deadline(fn: Callable[[], Any], deadline_s: float) -> Any:
    """``fn()`` in a daemon thread; `TimeoutError` if it has not returned after ``deadline_s``.

    The client's own timeouts bound each network read; this bounds the whole request (an endpoint
    that trickles bytes never ends a read timeout). A request given up on is left to finish alone.
    """
    results: queue.SimpleQueue[tuple[bool, Any]] = queue.SimpleQueue()

    def target() -> None:
        try:
            results.put((True, fn()))
        except BaseException as exc:
            results.put((False, exc))

    threading.Thread(target=target, name="swe_gym-llm-request", daemon=True).start()
    try:
        ok, value = results.get(timeout=deadline_s)
    except queue.Empty:
        raise TimeoutError(f"no complete answer within {deadline_s:g} s") from None
    if ok:
        return value
    raise value


class LLMPolicy:
    """Asks a chat model behind an OpenAI-compatible endpoint for each bash action.

    Args:
        config: an `LLMConfig`, a dict of its fields, or None (all defaults, endpoint from the environment).

    Example:
        >>> policy = LLMPolicy({"base_url": "http://127.0.0.1:18791/v1", "model": "smollm2"})  # doctest: +SKIP
        >>> observation, info = env.reset(seed=0)  # doctest: +SKIP
        >>> policy.reset(observation, info)  # doctest: +SKIP
        >>> action = policy.act(observation, info)  # doctest: +SKIP
    """

    def __init__(self, config: LLMConfig | dict[str, Any] | None = None) -> None:
        try:
            self.config = config if isinstance(config, LLMConfig) else LLMConfig(**(config or {}))
        except ValidationError as exc:
            raise ConfigError(f"invalid LLM policy options ({validation_problems(exc)})") from None
        if not self.config.model:
            raise ConfigError(f"the LLM policy needs a model name: set {ENV_PREFIX}MODEL or pass model=")
        try:
            import openai
        except ImportError as exc:
            raise ConfigError("the LLM policy needs the openai client: pip install 'swe_gym[llm]'") from exc
        self._openai = openai
        # Retries and the overall deadline are ours; the client's timeout bounds each network phase.
        self.client = openai.OpenAI(
            base_url=self.config.base_url,
            api_key=self.config.api_key,
            timeout=self.config.request_timeout_s,
            max_retries=0,
        )
        self.messages: list[dict[str, str]] = []
        self._first_act = True
        self._budget = self.config.context_budget_chars
        self._stats: dict[str, Any] = self._new_stats()

    # -- Policy protocol ----------------------------------------------------------------

    def reset(self, observation: str, info: dict[str, Any]) -> None:
        """Start a conversation whose task is ``observation`` (the env's reset observation)."""
        instance = self.config.instance_template.format(task=observation.strip(), submit=SUBMIT)
        self.messages = [
            {"role": "system", "content": self.config.system_template},
            {"role": "user", "content": instance},
        ]
        self._first_act = True
        self._budget = self.config.context_budget_chars
        self._stats = self._new_stats()
        self._stats["instance_id"] = info.get("instance_id")

    def act(self, observation: str, info: dict[str, Any]) -> str:
        """The next bash action; raises `PolicyError` when the endpoint fails beyond its retries."""
        if not self.messages:
            raise RuntimeError("call reset() before act()")
        if not self._first_act:  # the first observation is the task, already in the instance message
            self.messages.append({"role": "user", "content": self._format_observation(observation, info)})
        self._first_act = False
        for attempt in range(self.config.max_format_errors + 1):
            reply, finish_reason = self._query()
            self.messages.append({"role": "assistant", "content": reply})
            self._record_reply(reply)
            try:
                command = parse_action(reply, truncated=finish_reason == "length")
            except FormatError as exc:
                self._stats["format_errors"] += 1
                message = FORMAT_ERROR_TEMPLATE.format(reason=exc, submit=SUBMIT)
                log.info("format error (%d/%d): %s", attempt + 1, self.config.max_format_errors + 1, exc)
                if attempt < self.config.max_format_errors:
                    self.messages.append({"role": "user", "content": message})
                    continue
                # Out of re-asks: the env runs a printf of the error, so the step limit still ends the
                # episode and the model reads the error as its next observation.
                self._stats["action_sources"].append("format_error")
                return f"printf '%s\\n' {shlex.quote(message)}"
            self._stats["action_sources"].append("block")
            return command
        raise AssertionError("unreachable")

    # -- accounting -----------------------------------------------------------------------

    def episode_stats(self) -> dict[str, Any]:
        """Model calls, tokens, latencies, retries and format errors of the current episode (JSON-ready)."""
        stats = dict(self._stats)
        latencies = stats["latencies_s"]
        stats["latency_total_s"] = round(sum(latencies), 3)
        stats["latency_mean_s"] = round(sum(latencies) / len(latencies), 3) if latencies else 0.0
        stats["total_tokens"] = stats["prompt_tokens"] + stats["completion_tokens"]
        return stats

    def close(self) -> None:
        """Close the HTTP client's connections."""
        self.client.close()

    def _new_stats(self) -> dict[str, Any]:
        return {
            "policy": "llm",
            "model": self.config.model,
            "base_url": self.config.base_url,
            "instance_id": None,
            "model_calls": 0,
            "prompt_tokens": 0,
            "completion_tokens": 0,
            "calls_without_usage": 0,
            "latencies_s": [],
            "retries": 0,
            "errors": [],
            "format_errors": 0,
            "action_sources": [],
            "turns_dropped": 0,
            "context_overflows": 0,
            "replies": [],
        }

    def _record_reply(self, reply: str) -> None:
        cap = self.config.max_recorded_reply_chars
        if cap:
            self._stats["replies"].append(truncate_middle(reply, cap))

    # -- conversation ---------------------------------------------------------------------

    def _format_observation(self, observation: str, info: dict[str, Any]) -> str:
        note = " (the command timed out and was killed)" if info.get("timed_out") else ""
        output = truncate_middle(observation, self.config.max_observation_chars)
        return OBSERVATION_TEMPLATE.format(exit_code=info.get("exit_code"), note=note, output=output)

    def _history(self) -> list[dict[str, str]]:
        """The messages to send: system and task, then as many recent turns as fit the budget."""
        head, turns = self.messages[:2], self.messages[2:]
        size = sum(len(m["content"]) for m in self.messages)
        # Over budget, keep room for the note that says how much was dropped.
        budget = self._budget if size <= self._budget else self._budget - 120
        dropped = 0
        # Drop (assistant, user) pairs from the front, so roles keep alternating; keep the last turn.
        while size > budget and len(turns) > 2:
            size -= len(turns[0]["content"]) + len(turns[1]["content"])
            turns = turns[2:]
            dropped += 2
        if dropped:
            note = f"\n\n[{dropped} earlier messages of this conversation were omitted to fit the context budget.]"
            head = [head[0], {"role": "user", "content": head[1]["content"] + note}]
            self._stats["turns_dropped"] = max(self._stats["turns_dropped"], dropped)
        if size > budget and turns:  # one huge turn left: cut it
            rest = sum(len(m["content"]) for m in head + turns[:-1])
            turns = [
                *turns[:-1],
                {**turns[-1], "content": truncate_middle(turns[-1]["content"], max(budget - rest, 500))},
            ]
        return head + turns

    # -- the endpoint ---------------------------------------------------------------------

    def _query(self) -> tuple[str, str | None]:
        """One chat completion: (reply text, finish reason); retries transient failures."""
        config = self.config
        delay = config.retry_backoff_s
        tries = config.max_retries + 1
        overflows = 0
        attempt = 0
        while True:
            attempt += 1
            started = time.perf_counter()
            try:
                response = self._request(self._history())
            except _Retryable as exc:
                self._stats["errors"].append(str(exc))
                if attempt >= tries:
                    raise PolicyError(
                        f"the model endpoint {config.base_url or 'api.openai.com'} failed {attempt} time(s); "
                        f"last error: {exc}. Check that the server runs and answers chat completions "
                        f"(base URL, model {config.model!r}), or raise request_timeout_s/max_retries"
                    ) from exc
                self._stats["retries"] += 1
                log.warning("model request failed (%s); retrying in %.1f s (%d/%d)", exc, delay, attempt, tries - 1)
                time.sleep(delay)
                delay = min(delay * 2, 30.0)
                continue
            except self._openai.BadRequestError as exc:
                if _CONTEXT_OVERFLOW.search(str(exc)) and overflows < 3 and len(self.messages) > 3:
                    overflows += 1
                    self._stats["context_overflows"] += 1
                    self._budget = max(self._budget // 2, 1000)
                    log.warning("the request overflowed the model's context; history budget now %d chars", self._budget)
                    continue
                raise PolicyError(f"the model endpoint refused the request: {_describe(exc)}") from exc
            except self._openai.APIStatusError as exc:
                raise PolicyError(
                    f"the model endpoint {config.base_url or 'api.openai.com'} refused the request: {_describe(exc)}. "
                    f"Check the model name ({config.model!r}) and the API key"
                ) from exc
            latency = time.perf_counter() - started
            return self._account(response, latency)

    def _request(self, messages: list[dict[str, str]]) -> Any:
        """The HTTP request; transient failures and non-completions become `_Retryable`."""
        openai = self._openai
        config = self.config

        def create() -> Any:
            return self.client.chat.completions.create(
                model=config.model,
                messages=messages,
                temperature=config.temperature,
                max_tokens=config.max_tokens,
            )

        try:
            response = _call_with_deadline(create, config.request_timeout_s + 5.0)
        except TimeoutError as exc:
            raise _Retryable(f"timed out ({exc})") from exc
        except openai.APITimeoutError as exc:
            raise _Retryable(f"timed out after {config.request_timeout_s:g} s") from exc
        except openai.APIConnectionError as exc:
            raise _Retryable(f"cannot connect ({_describe(exc)})") from exc
        except openai.APIStatusError as exc:
            if exc.status_code in _TRANSIENT_STATUS or exc.status_code >= 500:
                raise _Retryable(f"HTTP {exc.status_code} ({_describe(exc)})") from exc
            raise
        except openai.OpenAIError as exc:
            raise _Retryable(f"not a chat completion ({_describe(exc)})") from exc
        except (ValueError, TypeError, KeyError, AttributeError) as exc:  # e.g. a body that is not JSON
            raise _Retryable(f"not a chat completion ({type(exc).__name__}: {exc})") from exc
        if not hasattr(response, "choices"):  # e.g. a JSON string or list where an object belongs
            raise _Retryable(f"not a chat completion (got {type(response).__name__}: {str(response)[:200]!r})")
        return response

    def _account(self, response: Any, latency: float) -> tuple[str, str | None]:
        stats = self._stats
        stats["model_calls"] += 1
        stats["latencies_s"].append(round(latency, 3))
        usage = getattr(response, "usage", None)
        if usage is not None and getattr(usage, "prompt_tokens", None) is not None:
            stats["prompt_tokens"] += int(usage.prompt_tokens or 0)
            stats["completion_tokens"] += int(usage.completion_tokens or 0)
        else:
            stats["calls_without_usage"] += 1
        choices = response.choices or []
        if not choices:  # an empty answer: the format-error path re-asks
            return "", None
        message = getattr(choices[0], "message", None)
        content = getattr(message, "content", None)
        return (content if isinstance(content, str) else ""), getattr(choices[0], "finish_reason", None)


def _describe(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return f"{type(exc).__name__}: {text[:300]}"


__all__ = ["FormatError", "LLMConfig", "LLMPolicy", "parse_action"]
