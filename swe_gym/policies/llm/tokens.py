"""The exact tokens of model calls: `TokenCall` (one call) and `token_segments` (a token-level view of an episode).

A `TokenCall` holds the ids the model server itself used: the prompt's ids, the completion's ids and each
completion token's logprob, with where each came from (``prompt_source``, ``completion_source``):

- ``"server"``: the response carried the ids (vLLM with ``return_token_ids``: ``prompt_token_ids`` and the
  choice's ``token_ids``; llama.cpp's own server: an ``id`` in each logprobs entry);
- ``"server-tokenizer"``: the response carried token *texts* only (llama-cpp-python's server), and the
  server's own tokenizer (``/extras/tokenize``, checked by ``/extras/detokenize``) mapped them to ids: each
  returned completion token's text to its one id, and the prompt text it was given (``/v1/completions``) or
  the chat rendered with the model's own template (checked against the server's ``usage.prompt_tokens``).

What could not be had is None, and ``problems`` says why; nothing here is ever our own re-tokenisation.
``extends_previous`` says whether this call's prompt starts with the previous call's prompt and completion
(a multi-turn conversation whose history was not rewritten); `token_segments` cuts an episode where it does not.

A consumer (a trainer) reads an episode as `token_segments(calls)`: each `TokenSegment` is one token
sequence with a mask, 1 where the model sampled the token, 0 where the environment (the prompt, the
observations, the chat template's own tokens between turns) put it, and the model's logprob per model token.
Import path: ``swe_gym.policies.llm.tokens``.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

#: Which response shape the ids came from: vLLM's, llama.cpp's own server's, token texts without ids
#: (llama-cpp-python's server; OpenAI's), or none (no logprobs, no ids).
Shape = Literal["vllm", "llama.cpp", "token-texts", "none"]
#: How the ids were had: in the response itself, or from the server's own tokenizer endpoints.
Source = Literal["server", "server-tokenizer"]


class TokenCall(BaseModel):
    """One model call's exact tokens (see the module)."""

    model_config = ConfigDict(extra="ignore")

    shape: Shape = Field(default="none", description="the server's response shape the ids came from")
    prompt_ids: list[int] | None = Field(default=None, description="the ids the model read (None: not had)")
    completion_ids: list[int] | None = Field(default=None, description="the ids the model sampled")
    completion_logprobs: list[float | None] | None = Field(
        default=None, description="the model's logprob of each completion id, as the server returned it"
    )
    prompt_source: Source | None = None
    completion_source: Source | None = None
    extends_previous: bool | None = Field(
        default=None, description="the prompt starts with the previous call's prompt + completion (None: first)"
    )
    problems: list[str] = Field(default_factory=list, description="why ids are missing or unchecked")

    @property
    def exact(self) -> bool:
        """Both the prompt's and the completion's ids are known."""
        return self.prompt_ids is not None and self.completion_ids is not None

    def link(self, previous: TokenCall | None) -> TokenCall:
        """This call with ``extends_previous`` set against ``previous`` (None: the episode's first call)."""
        extends = None
        if previous is not None and previous.exact and self.prompt_ids is not None:
            context = [*(previous.prompt_ids or ()), *(previous.completion_ids or ())]
            extends = self.prompt_ids[: len(context)] == context
        return self.model_copy(update={"extends_previous": extends})


class TokenSegment(BaseModel):
    """One token sequence of an episode: ids, a mask (1: the model sampled it; 0: the environment put it),
    the model's logprob of each model token (None at environment tokens), and the calls it spans."""

    ids: list[int] = Field(default_factory=list)
    mask: list[int] = Field(default_factory=list)
    logprobs: list[float | None] = Field(default_factory=list)
    calls: list[int] = Field(default_factory=list, description="indices of the calls whose tokens it holds")


def token_segments(calls: list[TokenCall]) -> list[TokenSegment]:
    """An episode's calls as token sequences: a call whose prompt extends the sequence so far adds the
    prompt's new suffix (environment) and its completion (model); any other call starts a new segment.
    A call without both ids is left out (and ends the segment it would have extended)."""
    segments: list[TokenSegment] = []
    current: TokenSegment | None = None
    for index, call in enumerate(calls):
        if call.prompt_ids is None or call.completion_ids is None:
            current = None
            continue
        if current is None or call.prompt_ids[: len(current.ids)] != current.ids:
            current = TokenSegment()
            segments.append(current)
        new = call.prompt_ids[len(current.ids) :]
        logprobs = call.completion_logprobs or [None] * len(call.completion_ids)
        current.ids += [*new, *call.completion_ids]
        current.mask += [0] * len(new) + [1] * len(call.completion_ids)
        current.logprobs += [None] * len(new) + list(logprobs)
        current.calls.append(index)
    return segments
