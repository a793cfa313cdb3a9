"""`ChatTemplate`: a model's own Jinja chat template, rendered as llama-cpp-python's server renders it.

Only for the prompt ids of a server that returns none (llama-cpp-python): the chat it was sent is rendered
here, the server's own tokenizer turns that text into ids, and the count is checked against the server's
``usage.prompt_tokens`` (`swe_gym.policies.llm.token_capture`). The template comes from the model's GGUF file
(``tokenizer.chat_template``, with its BOS/EOS token texts; needs the ``gguf`` package) or is given as text.
"""

from __future__ import annotations

import functools
from datetime import datetime
from pathlib import Path
from typing import Any

from swe_gym.errors import ConfigError


class ChatTemplate:
    """A Jinja chat template with the BOS and EOS texts it may use."""

    def __init__(self, template: str, *, bos_token: str = "", eos_token: str = "") -> None:
        from jinja2.sandbox import ImmutableSandboxedEnvironment

        environment = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True)
        self._template = environment.from_string(template)
        self.bos_token, self.eos_token = bos_token, eos_token

    @classmethod
    def load(cls, source: str | Path) -> ChatTemplate:
        """From a ``.gguf`` file (its ``tokenizer.chat_template``), another file (the template's text), or text."""
        path = Path(source)
        if path.suffix == ".gguf":
            return _from_gguf(path)
        if len(str(source)) < 4096 and path.is_file():
            return cls(path.read_text(encoding="utf-8"))
        return cls(str(source))

    def render(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None = None) -> str:
        """The prompt text of ``messages``, ending with the assistant's generation prompt."""

        def raise_exception(message: str) -> None:
            raise ValueError(message)

        from jinja2 import TemplateError

        try:
            return self._template.render(
                messages=messages,
                tools=tools,
                bos_token=self.bos_token,
                eos_token=self.eos_token,
                add_generation_prompt=True,
                raise_exception=raise_exception,
                strftime_now=lambda fmt: datetime.now().strftime(fmt),
            )
        except TemplateError as exc:
            raise ValueError(f"the chat template failed: {exc}") from exc


@functools.cache
def _from_gguf(path: Path) -> ChatTemplate:
    try:
        import gguf
    except ImportError as exc:
        raise ConfigError("reading a chat template from a GGUF file needs the gguf package: pip install gguf") from exc
    if not path.is_file():
        raise ConfigError(f"chat template: no GGUF file at {path}")
    reader = gguf.GGUFReader(str(path))

    def text(key: str) -> str | None:
        field = reader.fields.get(key)
        return None if field is None else bytes(field.parts[field.data[0]]).decode("utf-8")

    def token(key: str) -> str:
        field, tokens = reader.fields.get(key), reader.fields.get("tokenizer.ggml.tokens")
        if field is None or tokens is None:
            return ""
        index = int(field.parts[field.data[0]][0])
        return bytes(tokens.parts[tokens.data[index]]).decode("utf-8")

    template = text("tokenizer.chat_template")
    if template is None:
        raise ConfigError(f"chat template: {path} holds no tokenizer.chat_template")
    return ChatTemplate(
        template, bos_token=token("tokenizer.ggml.bos_token_id"), eos_token=token("tokenizer.ggml.eos_token_id")
    )
