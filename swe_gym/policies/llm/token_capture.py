"""What to ask a server for so that it returns its tokens, and how to read them out of its answer.

`TOKEN_FIELDS` (chat) and `COMPLETION_TOKEN_FIELDS` (``/v1/completions``) go into the request: logprobs of the
sampled tokens (``top_logprobs`` 0: none of the alternatives) and vLLM's ``return_token_ids`` (servers without
it ignore it). `capture` reads a response in the shape it has (`swe_gym.policies.llm.tokens` says which):

- vLLM (>= 0.10.2): ``prompt_token_ids`` (the response's, or the choice's) and the choice's ``token_ids``;
  with ``return_tokens_as_token_ids`` each logprobs entry's token reads ``token_id:<id>``.
- llama.cpp's own server (``llama-server``): each logprobs entry has the token's ``id``.
- llama-cpp-python's server returns token *texts* only. `ServerTokenizer` maps each returned completion
  token's text to its one id with the server's ``/extras/tokenize`` and checks that ``/extras/detokenize``
  of the ids gives the texts back; the prompt's ids are the server's tokenization of the prompt text (a
  completion's own prompt; a chat rendered with the model's `ChatTemplate`), kept only when their count is
  the server's ``usage.prompt_tokens``. A token whose text is not a whole UTF-8 piece (the server drops
  the partial bytes), or a text that two ids share, cannot be mapped: the ids are None and ``problems``
  says so. The end-of-turn token the server stops at is in no completion: it reads as the next prompt's.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from swe_gym.policies.llm.chat_template import ChatTemplate
from swe_gym.policies.llm.tokens import Shape, Source, TokenCall

if TYPE_CHECKING:
    import httpx

TOKEN_FIELDS: dict[str, Any] = {"logprobs": True, "top_logprobs": 0, "return_token_ids": True}
COMPLETION_TOKEN_FIELDS: dict[str, Any] = {"logprobs": 0, "return_token_ids": True}
_AS_ID = re.compile(r"token_id:(\d+)")


class ServerTokenizer:
    """llama-cpp-python's tokenizer endpoints (``/extras/tokenize``, ``/extras/detokenize``) at ``base_url``'s root."""

    def __init__(
        self, base_url: str, client: httpx.AsyncClient, api_key: str | None = None, separator: str | None = None
    ) -> None:
        root = base_url.rstrip("/")
        self.root = root[: -len("/v1")] if root.endswith("/v1") else root
        self.client = client
        self.headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self.separator = separator  # a special token's text (the EOS): one request tokenizes many texts
        self._ids: dict[str, int | None] = {}  # a token's text -> its one id (None: none, or several)

    async def tokenize(self, text: str) -> list[int]:
        response = await self.client.post(f"{self.root}/extras/tokenize", json={"input": text}, headers=self.headers)
        response.raise_for_status()
        return [int(i) for i in response.json()["tokens"]]

    async def detokenize(self, ids: list[int]) -> str:
        response = await self.client.post(f"{self.root}/extras/detokenize", json={"tokens": ids}, headers=self.headers)
        response.raise_for_status()
        return str(response.json()["text"])

    async def _tokenize_apart(self, texts: list[str]) -> dict[str, list[int]]:
        """Each text's ids as it tokenizes alone: in one request, the texts joined by the separator (a special
        token, which the tokenizer splits on), when that splits into one group per text; else one request each."""
        if self.separator and len(texts) > 1:
            separator = await self.tokenize(self.separator)
            if len(separator) == 1:
                groups: list[list[int]] = [[]]
                for token in await self.tokenize(self.separator.join(texts)):
                    groups.append([]) if token == separator[0] else groups[-1].append(token)
                if len(groups) == len(texts):
                    return dict(zip(texts, groups, strict=True))
        return {text: await self.tokenize(text) for text in texts}

    async def piece_ids(self, pieces: list[str]) -> tuple[list[int] | None, str | None]:
        """The id of each token text, or None and why not."""
        unknown = [piece for piece in dict.fromkeys(pieces) if piece not in self._ids]
        groups = await self._tokenize_apart([p for p in unknown if p])
        for piece in unknown:
            ids = groups.get(piece, [])
            self._ids[piece] = ids[0] if len(ids) == 1 else None
        ids = [self._ids[piece] for piece in pieces]
        if any(i is None for i in ids):
            bad = next(p for p, i in zip(pieces, ids, strict=True) if i is None)
            return None, f"a completion token's text ({bad!r}) is no single token of the server's tokenizer"
        exact = [int(i) for i in ids if i is not None]
        if await self.detokenize(exact) != "".join(pieces):
            return None, "the server's detokenization of the mapped ids differs from the token texts it returned"
        return exact, None


async def capture(
    request: dict[str, Any],
    response: dict[str, Any],
    *,
    tokenizer: ServerTokenizer | None = None,
    template: ChatTemplate | None = None,
) -> TokenCall:
    """The exact tokens of one call (``request`` as sent, ``response`` as JSON); see the module."""
    choice = (response.get("choices") or [{}])[0] or {}
    problems: list[str] = []
    shape: Shape = "none"
    prompt_ids = _ints(response.get("prompt_token_ids")) or _ints(choice.get("prompt_token_ids"))
    completion_ids = _ints(choice.get("token_ids"))
    prompt_source: Source | None = "server" if prompt_ids is not None else None
    completion_source: Source | None = "server" if completion_ids is not None else None
    if prompt_ids is not None or completion_ids is not None:
        shape = "vllm"
    pieces, logprobs, entry_ids = _logprobs(choice.get("logprobs"))
    if completion_ids is None and entry_ids is not None:
        completion_ids, completion_source = entry_ids, "server"
        shape = "llama.cpp" if shape == "none" and not _as_ids(choice.get("logprobs")) else "vllm"
    usage = response.get("usage") or {}
    if shape == "none" and pieces is not None:
        shape = "token-texts"
        if tokenizer is None:
            problems.append("the server returned token texts only, and no tokenizer endpoint was given")
        else:
            completion_ids, problem = await tokenizer.piece_ids(pieces)
            completion_source = "server-tokenizer" if completion_ids is not None else None
            problems += [problem] if problem else []
    if shape == "token-texts" and prompt_ids is None and tokenizer is not None:
        prompt_ids, problem = await _prompt_ids(request, tokenizer, template, usage.get("prompt_tokens"))
        prompt_source = "server-tokenizer" if prompt_ids is not None else None
        problems += [problem] if problem else []
    if shape == "none":
        problems.append("the response holds neither token ids nor logprobs (the server ignores both requests)")
    if completion_ids is not None and logprobs is not None and len(logprobs) != len(completion_ids):
        problems.append(f"{len(logprobs)} logprobs for {len(completion_ids)} completion tokens: logprobs dropped")
        logprobs = None
    if prompt_ids is None and shape != "none" and not problems:
        problems.append("the server returned no prompt ids")
    return TokenCall(
        shape=shape,
        prompt_ids=prompt_ids,
        completion_ids=completion_ids,
        completion_logprobs=logprobs,
        prompt_source=prompt_source,
        completion_source=completion_source,
        problems=problems,
    )


async def _prompt_ids(
    request: dict[str, Any], tokenizer: ServerTokenizer, template: ChatTemplate | None, count: Any
) -> tuple[list[int] | None, str | None]:
    """The server's tokenization of the prompt text, kept when it has the server's own prompt token count."""
    if isinstance(request.get("prompt"), str):
        text = request["prompt"]
    elif "messages" in request and template is not None:
        text = template.render(request["messages"], request.get("tools"))
    elif "messages" in request:
        return None, "the server returns no prompt ids, and no chat template was given to render the chat"
    else:
        return None, "the prompt is no text"
    ids = await tokenizer.tokenize(text)
    if count is not None and len(ids) != int(count):
        return None, (
            f"the server read {count} prompt tokens and its tokenizer gives {len(ids)} for the rendered prompt "
            "(the server renders or tokenizes the prompt another way): prompt ids dropped"
        )
    return ids, None


def _logprobs(logprobs: Any) -> tuple[list[str] | None, list[float | None] | None, list[int] | None]:
    """The token texts, logprobs and ids (where the entries carry them) of a chat or completion choice."""
    if not isinstance(logprobs, dict):
        return None, None, None
    entries = logprobs.get("content")
    if isinstance(entries, list):  # chat: one entry per token
        pieces = [str(e.get("token", "")) for e in entries]
        values = [_float(e.get("logprob")) for e in entries]
        ids = [e.get("id") for e in entries]
        if entries and all(isinstance(i, int) for i in ids):
            return pieces, values, [int(i) for i in ids]
        return pieces, values, _ids_in_texts(pieces)
    if isinstance(logprobs.get("tokens"), list):  # completions: parallel lists
        pieces = [str(t) for t in logprobs["tokens"]]
        values = [_float(v) for v in logprobs.get("token_logprobs") or [None] * len(pieces)]
        return pieces, values, _ids_in_texts(pieces)
    return None, None, None


def _as_ids(logprobs: Any) -> bool:
    pieces, _, _ = _logprobs(logprobs)
    return bool(pieces) and _ids_in_texts(pieces or []) is not None


def _ids_in_texts(pieces: list[str]) -> list[int] | None:
    """vLLM's ``return_tokens_as_token_ids``: every token reads ``token_id:<id>``."""
    matches = [_AS_ID.fullmatch(p) for p in pieces]
    if not pieces or not all(matches):
        return None
    return [int(m.group(1)) for m in matches if m]


def _ints(value: Any) -> list[int] | None:
    if isinstance(value, list) and all(isinstance(i, int) and not isinstance(i, bool) for i in value):
        return list(value)
    return None


def _float(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None
