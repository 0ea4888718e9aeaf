"""A `tokenizers.Tokenizer` built from a GGUF file's metadata, and its chat template rendered.

A GGUF file carries no tokenizer.json: llama.cpp stores the tokenizer as metadata.

    tokenizer.ggml.model       'gpt2' -> byte-level BPE (the only kind built here)
    tokenizer.ggml.pre         'smollm' -> how text is cut into words before BPE (the pre-tokenizer)
    tokenizer.ggml.tokens      the vocabulary, index = id, already in GPT-2's byte alphabet (' ' is 'Ġ')
    tokenizer.ggml.merges      'left right' pairs, best first
    tokenizer.ggml.token_type  1 normal, 3 control (<|im_start|> and the other special tokens), 4 user-defined
    tokenizer.ggml.{bos,eos,unknown,padding}_token_id, add_bos_token
    tokenizer.chat_template    a jinja2 template

The pre-tokenizer is the one real choice. llama.cpp's 'smollm' pre-type (src/llama-vocab.cpp, the case it
shares with STARCODER) first isolates every digit, then applies GPT-2's regex, and SmolLM2's own
tokenizer.json says the same: Sequence[Digits(individual_digits=True), ByteLevel]. transformers 5.23's GGUF
loader has no 'smollm' entry and keeps GPT-2's regex alone. The vocabulary has no multi-digit token, so the two
agree except where spaces precede a digit: "a  1" is cut ["a", " ", " 1"] by GPT-2's regex and ["a", "  ",
"1"] digit-first. We build what the model was trained with (`digits="individual"`, the default); the parity
test compares `digits="transformers"` with transformers and names the strings where the two choices differ.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers, processors

CONTROL_TOKEN = 3  # llama.cpp's LLAMA_TOKEN_TYPE_CONTROL: special tokens, matched whole, hidden when decoding
USER_DEFINED_TOKEN = 4  # LLAMA_TOKEN_TYPE_USER_DEFINED: added tokens that are ordinary text
# tokenizer.ggml.pre values whose pre-tokenizer is "each digit alone, then GPT-2's regex" (one llama.cpp case).
DIGITS_FIRST_PRE_TYPES = {"smollm", "starcoder", "refact", "command-r", "codeshell", "exaone", "minerva-7b"}
Digits = Literal["individual", "transformers"]


@dataclass(frozen=True)
class SpecialTokens:
    """The tokens with a role, as strings (None when the file names none)."""

    bos: str | None  # beginning of sequence (SmolLM2: <|im_start|>)
    eos: str | None  # end of sequence: generation stops here (SmolLM2: <|im_end|>)
    unknown: str | None
    padding: str | None
    add_bos: bool  # whether encoding puts bos first (SmolLM2: no)


def special_tokens(metadata: Mapping[str, Any]) -> SpecialTokens:
    tokens = metadata["tokenizer.ggml.tokens"]

    def token(key: str) -> str | None:
        index = metadata.get(f"tokenizer.ggml.{key}")
        return None if index is None else tokens[index]

    return SpecialTokens(
        bos=token("bos_token_id"),
        eos=token("eos_token_id"),
        unknown=token("unknown_token_id"),
        padding=token("padding_token_id"),
        add_bos=bool(metadata.get("tokenizer.ggml.add_bos_token", False)),
    )


def pre_tokenizer(pre_type: str, digits: Digits = "individual") -> pre_tokenizers.PreTokenizer:
    """How a byte-level BPE file cuts text into words: see the module's docstring for `digits`."""
    gpt2_words_as_bytes = pre_tokenizers.ByteLevel(add_prefix_space=False, trim_offsets=True, use_regex=True)
    if digits == "individual" and pre_type in DIGITS_FIRST_PRE_TYPES:
        return pre_tokenizers.Sequence([pre_tokenizers.Digits(individual_digits=True), gpt2_words_as_bytes])
    if digits == "transformers" or pre_type in ("gpt2", "default"):
        return gpt2_words_as_bytes
    raise ValueError(f"no pre-tokenizer is written here for tokenizer.ggml.pre = {pre_type!r}")


def build_tokenizer(metadata: Mapping[str, Any], digits: Digits = "individual") -> Tokenizer:
    """The tokenizer a GGUF file describes (byte-level BPE files only)."""
    if metadata.get("tokenizer.ggml.model") != "gpt2":
        raise ValueError(
            f"tokenizer.ggml.model is {metadata.get('tokenizer.ggml.model')!r}; only byte-level BPE ('gpt2') is built"
        )
    tokens: Sequence[str] = metadata["tokenizer.ggml.tokens"]
    vocabulary = {token: index for index, token in enumerate(tokens)}
    if len(vocabulary) != len(tokens):
        raise ValueError("tokenizer.ggml.tokens holds the same string twice")
    merges = [tuple(merge.split(" ", 1)) for merge in metadata["tokenizer.ggml.merges"]]
    # No unknown token: a byte missing from the vocabulary (SmolLM2 lacks 21 of the 256, e.g. 0x04) is dropped,
    # as llama.cpp and SmolLM2's tokenizer.json (unk_token null) drop it.
    tokenizer = Tokenizer(models.BPE(vocab=vocabulary, merges=merges, unk_token=None, fuse_unk=False))
    tokenizer.pre_tokenizer = pre_tokenizer(metadata.get("tokenizer.ggml.pre", "default"), digits)
    tokenizer.decoder = decoders.ByteLevel()
    tokenizer.post_processor = processors.ByteLevel(trim_offsets=False)  # offsets only: adds no token
    # Control tokens are matched whole in the raw text before pre-tokenization, and keep their vocabulary ids.
    kinds = metadata.get("tokenizer.ggml.token_type") or [1] * len(tokens)
    tokenizer.add_special_tokens(
        [
            AddedToken(token, special=True, normalized=False)
            for token, kind in zip(tokens, kinds)
            if kind == CONTROL_TOKEN
        ]
    )
    tokenizer.add_tokens(
        [
            AddedToken(token, special=False, normalized=False)
            for token, kind in zip(tokens, kinds)
            if kind == USER_DEFINED_TOKEN
        ]
    )
    return tokenizer


def encode(tokenizer: Tokenizer, text: str, specials: SpecialTokens) -> list[int]:
    """Token ids as llama.cpp gives them: bos first only where the file asks for it."""
    ids = tokenizer.encode(text, add_special_tokens=False).ids
    bos = None if specials.bos is None else tokenizer.token_to_id(specials.bos)
    return [bos, *ids] if specials.add_bos and bos is not None else ids


def render_chat(
    template: str, messages: Sequence[Mapping[str, str]], add_generation_prompt: bool = True, **variables: Any
) -> str:
    """A chat template applied to messages with the jinja2 settings transformers uses (sandboxed, trim_blocks
    and lstrip_blocks, loop controls, raise_exception), so the text equals `apply_chat_template`'s."""
    import jinja2.ext
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    def raise_exception(message: str) -> None:
        raise jinja2.exceptions.TemplateError(message)

    environment = ImmutableSandboxedEnvironment(
        trim_blocks=True, lstrip_blocks=True, extensions=[jinja2.ext.loopcontrols]
    )
    environment.globals["raise_exception"] = raise_exception
    return environment.from_string(template).render(
        messages=messages, add_generation_prompt=add_generation_prompt, **variables
    )
