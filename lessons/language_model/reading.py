"""What SmolLM2 makes of a text: its tokens, its guess at the next token, and how much of a head's attention rests
on the first token (one layer's attention itself: `lessons.common.decoder_attention`, which the masking lesson
shares).

Everything here is a pure function of the model and the token ids (torch only): the page caches the results,
and nothing is stored on the model, which every browser session shares.
"""

from __future__ import annotations

import codecs
from dataclasses import dataclass
from functools import cache

import torch
from torch import Tensor

from anatomy.models import DecoderOnlyLM
from lessons.common.decoder_attention import MAX_TOKENS, as_batch
from lessons.common.llm.smollm2 import ChatModel

SHOWN_SPACE, SHOWN_NEWLINE, SHOWN_TAB = "·", "↵", "⇥"  # as the tokenization lesson draws them


def _bytes_as_hex(error: UnicodeError) -> tuple[str, int]:
    if not isinstance(error, UnicodeDecodeError):
        raise error
    return "".join(f"<{byte:02X}>" for byte in error.object[error.start : error.end]), error.end


_BYTES_AS_HEX = "anatomy-bytes-as-hex"  # a decoding error handler: bytes of a split character shown as <F0>
codecs.register_error(_BYTES_AS_HEX, _bytes_as_hex)


@cache
def _byte_of_character() -> dict[str, int]:
    """GPT-2's byte alphabet, reversed: byte-level BPE writes each byte as one printable character (a space is
    'Ġ', a newline 'Ċ'), so that every token of the vocabulary is a plain string (Radford et al., 2019)."""
    printable = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1), *range(ord("®"), ord("ÿ") + 1)]
    characters = list(printable)
    shifted = 0
    for byte in range(256):
        if byte not in printable:
            printable.append(byte)
            characters.append(256 + shifted)
            shifted += 1
    return {chr(character): byte for byte, character in zip(printable, characters)}


def token_bytes(token: str) -> bytes | None:
    """The bytes a vocabulary entry stands for, or None for a special token (<|im_start|>), which is no text."""
    alphabet = _byte_of_character()
    if not all(character in alphabet for character in token):
        return None
    return bytes(alphabet[character] for character in token)


def readable_piece(token: str) -> str:
    """A vocabulary entry as a reader sees it: 'Ġcapital' → '·capital' (spaces, newlines and tabs made visible).
    Part of a character (an emoji is four bytes, often split over tokens) is shown as its bytes: <F0><9F>."""
    raw = token_bytes(token)
    if raw is None:
        return token
    text = raw.decode("utf-8", errors=_BYTES_AS_HEX)
    return text.replace(" ", SHOWN_SPACE).replace("\n", SHOWN_NEWLINE).replace("\t", SHOWN_TAB)


def piece_of(chat: ChatModel, token_id: int) -> str:
    """The readable piece of one token id."""
    return readable_piece(chat.tokenizer.id_to_token(token_id) or "")


def decoder_of(chat: ChatModel) -> DecoderOnlyLM:
    return chat.loaded.model_as(DecoderOnlyLM)


@dataclass(frozen=True)
class ModelTokens:
    """A text as the model reads it: ids, and each id's piece of text made readable."""

    ids: tuple[int, ...]
    pieces: tuple[str, ...]
    special: tuple[bool, ...]  # a control token (<|im_start|>, <|im_end|>): a marker, not text
    untruncated_length: int  # tokens the whole text makes, before the cut at MAX_TOKENS

    @property
    def truncated(self) -> bool:
        return self.untruncated_length > len(self.ids)

    def __len__(self) -> int:
        return len(self.ids)


def read_tokens(chat: ChatModel, ids: list[int], max_tokens: int = MAX_TOKENS) -> ModelTokens:
    """Ids (cut to the first max_tokens) with their readable pieces."""
    special_ids = {index for index, token in chat.tokenizer.get_added_tokens_decoder().items() if token.special}
    kept = ids[:max_tokens]
    return ModelTokens(
        ids=tuple(kept),
        pieces=tuple(piece_of(chat, index) for index in kept),
        special=tuple(index in special_ids for index in kept),
        untruncated_length=len(ids),
    )


def text_tokens(chat: ChatModel, text: str, max_tokens: int = MAX_TOKENS) -> ModelTokens:
    """The text as the model's tokens. Special tokens typed into the text count as special, as in llama.cpp."""
    return read_tokens(chat, chat.encode(text), max_tokens)


def chat_tokens(chat: ChatModel, message: str, max_tokens: int = MAX_TOKENS) -> tuple[str, ModelTokens]:
    """One user message through the chat template: the prompt text, and the very tokens the model reads."""
    prompt = chat.chat_prompt([{"role": "user", "content": message}])
    return prompt, text_tokens(chat, prompt, max_tokens)


# --- The next token --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Candidates:
    """The k most probable next tokens, best first, with their probabilities under the full softmax."""

    ids: tuple[int, ...]
    probabilities: tuple[float, ...]


@torch.no_grad()
def next_token_probabilities(model: DecoderOnlyLM, ids: tuple[int, ...]) -> Tensor:
    """(V,) softmax of the last position's logits: the model's distribution over the token after the text."""
    logits = model(as_batch(ids, model), last_logits_only=True, keep_hidden_states=False).logits[0, -1]  # (V,)
    return logits.float().softmax(dim=-1)


def top_candidates(probabilities: Tensor, k: int) -> Candidates:
    best = probabilities.topk(k)
    return Candidates(tuple(best.indices.tolist()), tuple(best.values.double().tolist()))


# --- One layer's attention -------------------------------------------------------------------------------


def first_token_share(maps: Tensor, head: int) -> float:
    """The weight the first token receives in one head's (H, T, T) maps, averaged over the queries after the
    first (the first query has only itself to attend to, so it gives the first token 1 whatever the head)."""
    return float(maps[head, 1:, 0].double().mean())


def even_first_token_share(num_tokens: int) -> float:
    """The same average for queries that spread their attention evenly: query t gives 1 / (t + 1) to each of the
    t + 1 tokens it may read, the first among them."""
    return sum(1 / (query + 1) for query in range(1, num_tokens)) / (num_tokens - 1)
