"""`LLMPolicy`: a language model behind any OpenAI-compatible chat endpoint picks each action.

The conversation follows mini-swe-agent's text-based style (`templates`): a system message with the
reply format, a first user message with the task (the env's reset observation) and how to work, then
one assistant reply per action and one user message per observation. Every reply must hold a THOUGHT
and exactly one fenced ``bash`` block (read by `swe_gym.envs.actions.parse_action`); that block's
command is the action. A block holding only ``submit`` ends the episode (the env's `SUBMIT` action).

Failure handling, so that a rollout never crashes on the model and never hangs:

- *Format errors* (no block, several blocks, an empty or unclosed block, prose only, an empty reply):
  the policy re-asks the model within the same `act`, telling it what was wrong, up to
  ``max_format_errors`` times; if the reply is still unusable the action is a ``printf`` of the error,
  so the env steps (the step limit still bounds the episode) and the model reads the error as its
  next observation.
- *Endpoint errors*: retried by the openai client, under a hard deadline (`client`); then
  `PolicyError` says what failed. A request that overflows the model's context shrinks the history
  budget and is sent again.
- *History* (`history`): the system and task messages always stay; the oldest turns are dropped (and
  the dropped count said) to keep the conversation under ``context_budget_chars``; each observation is
  cut to ``max_observation_chars``.

`episode_stats` reports model calls, tokens (from the endpoint's ``usage``), latencies, retries and
format errors of the current episode; give it to `TrajectoryRecorder` (``policy_stats=``) to store it
with each trajectory.
"""

from __future__ import annotations

import logging
import shlex
from typing import Any

from pydantic import ValidationError

from swe_gym.envs.actions import ActionFormatError, parse_action
from swe_gym.envs.prompt import SUBMIT
from swe_gym.envs.text import elide_middle
from swe_gym.errors import ConfigError, PolicyError, validation_problems
from swe_gym.policies.llm.client import ChatClient, Completion, ContextOverflow
from swe_gym.policies.llm.config import ENV_PREFIX, LLMConfig
from swe_gym.policies.llm.history import fit_history
from swe_gym.policies.llm.templates import FORMAT_ERROR_TEMPLATE, OBSERVATION_TEMPLATE

log = logging.getLogger(__name__)

#: How often one request may overflow the model's context (each time the history budget halves).
MAX_CONTEXT_OVERFLOWS = 3


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
        self.client = ChatClient(self.config)
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
            completion = self._query()
            self.messages.append({"role": "assistant", "content": completion.text})
            self._record_reply(completion.text)
            try:
                command = parse_action(completion.text, truncated=completion.finish_reason == "length")
            except ActionFormatError as exc:
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

    def _history(self) -> list[dict[str, str]]:
        """The messages to send: system and task, then as many recent turns as fit the budget."""
        history, dropped = fit_history(self.messages, self._budget)
        self._stats["turns_dropped"] = max(self._stats["turns_dropped"], dropped)
        return history

    def _query(self) -> Completion:
        """One chat completion; a context overflow halves the history budget and asks again."""
        overflows = 0
        while True:
            try:
                completion = self.client.complete(self._history(), self._on_failure)
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
        return completion
