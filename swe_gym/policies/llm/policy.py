"""`LLMPolicy`: a language model behind any OpenAI-compatible chat endpoint picks each action.

Two ways to act (``LLMConfig.tool_calling``):

- *Text* (mini-swe-agent's text-based style, `templates`): a system message with the reply format, a
  first user message with the task (the env's reset observation) and how to work, then one assistant
  reply per action and one user message per observation. Every reply must hold a THOUGHT and exactly
  one fenced ``bash`` block (read by `swe_gym.envs.actions.parse_action`); that block's command is the
  action. A block holding only ``submit`` ends the episode (the env's `SUBMIT` action).
- *Native function calling*: each request carries the env's tools (`swe_gym.tools.tool_schemas`) in
  ``tools=``; each of the reply's ``tool_calls`` is an action, passed to the env as the OpenAI entry it
  is (so the env answers a bad call with an error observation), and its result goes back as a tool
  message with its ``tool_call_id``. Several calls in one reply are acted one per env step, in order,
  and every call has its tool message before the next request (the OpenAI protocol requires it). The
  env must take tool calls (``gym.make(..., tools=[...])``); its reset info names them.
- ``"auto"`` (the default) is native when the env takes tool calls, until the endpoint shows it does not
  call tools: it refuses ``tools=`` (then the request is sent again without them) or answers with a
  bash block and no tool call (then that block is the action). From then on the policy writes text.

Failure handling, so that a rollout never crashes on the model and never hangs:

- *Format errors* (no block, several blocks, an empty or unclosed block, prose only, an empty reply;
  natively: a reply that calls no tool): the policy re-asks the model within the same `act`, telling
  it what was wrong, up to ``max_format_errors`` times; if the reply is still unusable the action is a
  ``printf`` of the error, so the env steps (the step limit still bounds the episode) and the model
  reads the error as its next observation.
- *Endpoint errors*: retried by the openai client, under a hard deadline (`client`); then
  `PolicyError` says what failed. A request that overflows the model's context shrinks the history
  budget and is sent again.
- *History* (`history`): the system and task messages always stay; the oldest turns are dropped (and
  the dropped count said) to keep the conversation under ``context_budget_chars``; each observation is
  cut to ``max_observation_chars``.

`episode_stats` reports model calls, tokens (from the endpoint's ``usage``), latencies, retries and
format errors of the current episode; give it to `TrajectoryRecorder` (``policy_stats=``) to store it
with each trajectory. With ``record_tokens``, `episode_tokens` holds each model call's exact token ids and
logprobs (`swe_gym.policies.llm.tokens`; the recorder's ``policy_tokens=``).
"""

from __future__ import annotations

import json
import logging
import shlex
from typing import Any

from pydantic import ValidationError

from swe_gym.envs.actions import ActionFormatError, parse_action
from swe_gym.envs.prompt import SUBMIT
from swe_gym.envs.text import elide_middle
from swe_gym.errors import ConfigError, PolicyError, validation_problems
from swe_gym.policies.base import PolicyInfo
from swe_gym.policies.llm.client import ChatClient, Completion, ContextOverflow, ToolsRejected
from swe_gym.policies.llm.config import ENV_PREFIX, LLMConfig
from swe_gym.policies.llm.history import fit_history
from swe_gym.policies.llm.templates import (
    FORMAT_ERROR_TEMPLATE,
    OBSERVATION_TEMPLATE,
    TOOL_FALLBACK,
    TOOL_FALLBACK_SHORT,
    TOOL_FORMAT_ERROR_TEMPLATE,
    TOOL_LINES,
)
from swe_gym.policies.llm.tokens import TokenCall
from swe_gym.tools import BASH, SUBMIT_TOOL, TOOL_NAMES, tool_schemas

log = logging.getLogger(__name__)

#: How often one request may overflow the model's context (each time the history budget halves).
MAX_CONTEXT_OVERFLOWS = 3
NO_TOOL_CALL = "your reply called no tool"


class LLMPolicy:
    """Asks a chat model behind an OpenAI-compatible endpoint for each action: a bash command, or (native
    function calling, with an env made with ``tools=``) an OpenAI ``tool_calls`` entry.

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
        self.client = ChatClient(self.config)
        self.messages: list[dict[str, Any]] = []
        self._first_act = True
        self._budget = self.config.context_budget_chars
        self._tools: tuple[str, ...] = ()  # the episode's tools (empty: text)
        self._native = False  # this episode's requests carry tools=
        self._endpoint_calls_tools: bool | None = None  # learnt in auto mode: None until the endpoint shows it
        self._pending: list[dict[str, Any]] = []  # calls of the last reply not yet handed to the env
        self._answering: str | None = None  # the id of the call whose result the next observation is
        self._call_ids: set[str] = set()
        self._stats: dict[str, Any] = self._new_stats()
        self._token_calls: list[TokenCall] = []

    @property
    def identity(self) -> PolicyInfo:
        """``llm`` and the model it asks: what a trajectory records as its policy."""
        return PolicyInfo(name="llm", model=self.config.model)

    # -- Policy protocol ----------------------------------------------------------------

    def reset(self, observation: str, info: dict[str, Any]) -> None:
        """Start a conversation whose task is ``observation`` (the env's reset observation; its ``info``
        names the env's tools, ``info["tools"]``, when it takes tool calls)."""
        config = self.config
        self._tools = self._episode_tools(info)
        self._native = bool(self._tools) and config.tool_calling != "text" and self._endpoint_calls_tools is not False
        if self._native:
            fallback = TOOL_FALLBACK if config.tool_calling == "auto" else ""
            tools = "\n".join(TOOL_LINES[name] for name in self._tools)
            system = config.tool_system_template.format(tools=tools, fallback=fallback).rstrip() + "\n"
            instance = config.tool_instance_template.format(task=observation.strip(), submit=self._how_to_submit())
        else:
            system = config.system_template
            instance = config.instance_template.format(task=observation.strip(), submit=SUBMIT)
        self.messages = [{"role": "system", "content": system}, {"role": "user", "content": instance}]
        self._first_act = True
        self._budget = config.context_budget_chars
        self._pending, self._answering, self._call_ids = [], None, set()
        self._stats = self._new_stats()
        self._token_calls = []
        self._stats["instance_id"] = info.get("instance_id")
        self._stats["tool_calling"] = "native" if self._native else "text"

    def act(self, observation: str, info: dict[str, Any]) -> str | dict[str, Any]:
        """The next action: a bash command, or natively an OpenAI ``tool_calls`` entry (a dict) for an env
        made with ``tools=``; raises `PolicyError` when the endpoint fails beyond its retries."""
        if not self.messages:
            raise RuntimeError("call reset() before act()")
        if not self._first_act:  # the first observation is the task, already in the instance message
            self._add_observation(observation, info)
        self._first_act = False
        if self._pending:  # the reply's next call: its result goes back before the next request
            return self._next_call()
        attempt = 0
        while True:  # each pass returns, or re-asks after a format error (at most max_format_errors times)
            completion = self._query()
            if self._native and completion.tool_calls:
                return self._take_calls(completion)
            self.messages.append({"role": "assistant", "content": completion.text})
            self._record_reply(completion.text)
            try:
                command = parse_action(completion.text, truncated=completion.finish_reason == "length")
                if self._native and self.config.tool_calling == "native":
                    raise ActionFormatError(NO_TOOL_CALL)
            except ActionFormatError as exc:
                self._stats["format_errors"] += 1
                message = self._format_error(exc)
                log.info("format error (%d/%d): %s", attempt + 1, self.config.max_format_errors + 1, exc)
                if attempt < self.config.max_format_errors:
                    self.messages.append({"role": "user", "content": message})
                    attempt += 1
                    continue
                # Out of re-asks: the env runs a printf of the error, so the step limit still ends the
                # episode and the model reads the error as its next observation.
                self._stats["action_sources"].append("format_error")
                return f"printf '%s\\n' {shlex.quote(message)}"
            if self._native and self._endpoint_calls_tools is None:  # auto: the endpoint writes blocks
                self._fall_back("the endpoint answered with a bash block and no tool call")
            self._stats["action_sources"].append("block")
            return command

    # -- native tool calls ------------------------------------------------------------------

    def _episode_tools(self, info: dict[str, Any]) -> tuple[str, ...]:
        """The tools offered this episode: the config's, else those the env's reset info names."""
        config = self.config
        named = config.tools if config.tools is not None else info.get("tools")
        tools = tuple(name for name in (named or ()) if name in TOOL_NAMES)
        if config.tool_calling == "native" and not tools:
            raise ConfigError(
                "tool_calling='native' needs an env that takes tool calls: make it with "
                "tools=['bash', 'str_replace_editor', 'submit'] (or set LLMConfig.tools=)"
            )
        return tools

    def _how_to_submit(self) -> str:
        if SUBMIT_TOOL in self._tools:
            return "call the submit tool"
        return f"run `{SUBMIT}` with the bash tool" if BASH in self._tools else f"send `{SUBMIT}`"

    def _format_error(self, exc: ActionFormatError) -> str:
        if not self._native:
            return FORMAT_ERROR_TEMPLATE.format(reason=exc, submit=SUBMIT)
        auto = self.config.tool_calling == "auto"
        reason = f"{NO_TOOL_CALL}, and {exc}" if auto else NO_TOOL_CALL
        return TOOL_FORMAT_ERROR_TEMPLATE.format(
            reason=reason,
            tools=", ".join(self._tools),
            fallback=f" {TOOL_FALLBACK_SHORT}" if auto else "",
            submit=self._how_to_submit(),
        )

    def _fall_back(self, why: str) -> None:
        """auto mode: the endpoint does no tool calling; from now on the policy writes text."""
        log.warning("the model endpoint does not call tools (%s); writing bash blocks from now on", why)
        self._endpoint_calls_tools = False
        self._native = False
        self._stats["tool_calling"] = "text"
        self._stats["tool_calling_fallback"] = why

    def _take_calls(self, completion: Completion) -> dict[str, Any]:
        """The reply's calls, each with a unique id, into the history; the first one is the action."""
        self._endpoint_calls_tools = True
        calls = []
        for call in completion.tool_calls:
            call_id = call.get("id")
            if not call_id or call_id in self._call_ids:  # the protocol needs an id per call
                call_id = f"call_{len(self._call_ids)}"
                while call_id in self._call_ids:
                    call_id += "_"
            self._call_ids.add(call_id)
            calls.append({**call, "id": call_id})
        # content "" rather than None: some servers (llama.cpp's) refuse a null content
        self.messages.append({"role": "assistant", "content": completion.text, "tool_calls": calls})
        self._record_reply(f"{completion.text}\n{json.dumps(calls)}".strip())
        self._stats["tool_calls"] += len(calls)
        self._pending = list(calls)  # popped as they are acted; the history keeps them all
        return self._next_call()

    def _next_call(self) -> dict[str, Any]:
        call = self._pending.pop(0)
        self._answering = call["id"]
        self._stats["action_sources"].append("tool_call")
        return {**call, "function": dict(call["function"])}  # a copy: the history keeps its own

    def _add_observation(self, observation: str, info: dict[str, Any]) -> None:
        """The last action's result: a tool message answering its call, else a user message."""
        content = self._format_observation(observation, info)
        if self._answering is None:
            self.messages.append({"role": "user", "content": content})
            return
        env_id = info.get("tool_call_id")
        if env_id is not None and env_id != self._answering:
            log.warning("the env answered tool call %r where %r was expected", env_id, self._answering)
        self.messages.append({"role": "tool", "tool_call_id": self._answering, "content": content})
        self._answering = None

    # -- accounting -----------------------------------------------------------------------

    def episode_stats(self) -> dict[str, Any]:
        """Model calls, tokens, latencies, retries and format errors of the current episode (JSON-ready)."""
        stats = dict(self._stats)
        latencies = stats["latencies_s"]
        stats["latency_total_s"] = round(sum(latencies), 3)
        stats["latency_mean_s"] = round(sum(latencies) / len(latencies), 3) if latencies else 0.0
        stats["total_tokens"] = stats["prompt_tokens"] + stats["completion_tokens"]
        return stats

    def episode_tokens(self) -> list[TokenCall]:
        """The current episode's model calls' exact tokens, in order (empty without ``record_tokens``)."""
        return list(self._token_calls)

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
            "tool_calling": "text",
            "tool_calling_fallback": None,
            "tool_calls": 0,
            "turns_dropped": 0,
            "context_overflows": 0,
            "replies": [],
        }

    def _record_reply(self, reply: str) -> None:
        cap = self.config.max_recorded_reply_chars
        if cap:
            self._stats["replies"].append(elide_middle(reply, cap))

    def _on_failure(self, description: str, retried: bool) -> None:
        self._stats["errors"].append(description)
        if retried:
            self._stats["retries"] += 1
            log.warning("model request failed (%s); retrying", description)

    # -- conversation ---------------------------------------------------------------------

    def _format_observation(self, observation: str, info: dict[str, Any]) -> str:
        note = " (the command timed out and was killed)" if info.get("timed_out") else ""
        output = elide_middle(observation, self.config.max_observation_chars)
        return OBSERVATION_TEMPLATE.format(exit_code=info.get("exit_code"), note=note, output=output)

    def _history(self) -> list[dict[str, Any]]:
        """The messages to send: system and task, then as many recent turns as fit the budget."""
        history, dropped = fit_history(self.messages, self._budget)
        self._stats["turns_dropped"] = max(self._stats["turns_dropped"], dropped)
        return history

    def _query(self) -> Completion:
        """One chat completion; a context overflow halves the history budget and asks again, and in auto
        mode an endpoint that refuses ``tools=`` is asked again without them."""
        overflows = 0
        while True:
            tools = tool_schemas(self._tools) if self._native else None
            try:
                completion = self.client.complete(self._history(), self._on_failure, tools)
            except ToolsRejected as exc:
                if self.config.tool_calling == "native" or self._endpoint_calls_tools:
                    raise PolicyError(
                        f"the model endpoint refused the request's tools ({exc}); for an endpoint without "
                        "tool calling, set tool_calling='text' (or tool_calling='auto')"
                    ) from exc
                self._fall_back(f"the endpoint refused tools= ({exc})")
                continue
            except ContextOverflow as exc:
                if overflows >= MAX_CONTEXT_OVERFLOWS or len(self.messages) <= 3:
                    raise PolicyError(f"the model endpoint refused the request: {exc}") from exc
                overflows += 1
                self._stats["context_overflows"] += 1
                self._budget = max(self._budget // 2, 1000)
                log.warning("the request overflowed the model's context; history budget now %d chars", self._budget)
                continue
            return self._account(completion)

    def _account(self, completion: Completion) -> Completion:
        stats = self._stats
        stats["model_calls"] += 1
        stats["latencies_s"].append(round(completion.latency_s, 3))
        if completion.prompt_tokens is not None:
            stats["prompt_tokens"] += completion.prompt_tokens
            stats["completion_tokens"] += completion.completion_tokens or 0
        else:
            stats["calls_without_usage"] += 1
        if completion.tokens is not None:
            previous = self._token_calls[-1] if self._token_calls else None
            self._token_calls.append(completion.tokens.link(previous))
        return completion
