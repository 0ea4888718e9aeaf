"""SmolLM2's tokens as a reader sees them: ids, and each id's piece of text with spaces, line breaks and tabs
made visible ('Ġcapital' → '·capital'), special tokens marked. Shared by the lessons that show SmolLM2's
tokens (the language-model lesson; the rotary positions of the positional lesson).

Pure functions of the tokenizer (no torch, no Streamlit).
"""

from __future__ import annotations

import codecs
from dataclasses import dataclass
from functools import cache

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


@dataclass(frozen=True)
class ModelTokens:
    """A text as the model reads it: ids, and each id's piece of text made readable."""

    ids: tuple[int, ...]
    pieces: tuple[str, ...]
    special: tuple[bool, ...]  # a control token (<|im_start|>, <|im_end|>): a marker, not text
    untruncated_length: int  # tokens the whole text makes, before any cut

    @property
    def truncated(self) -> bool:
        return self.untruncated_length > len(self.ids)

    def __len__(self) -> int:
        return len(self.ids)


def read_tokens(chat: ChatModel, ids: list[int], max_tokens: int | None = None) -> ModelTokens:
    """Ids (cut to the first max_tokens, when given) with their readable pieces."""
    special_ids = {index for index, token in chat.tokenizer.get_added_tokens_decoder().items() if token.special}
    kept = ids if max_tokens is None else ids[:max_tokens]
    return ModelTokens(
        ids=tuple(kept),
        pieces=tuple(piece_of(chat, index) for index in kept),
        special=tuple(index in special_ids for index in kept),
        untruncated_length=len(ids),
    )


def text_tokens(chat: ChatModel, text: str, max_tokens: int | None = None) -> ModelTokens:
    """The text as the model's tokens. Special tokens typed into the text count as special, as in llama.cpp."""
    return read_tokens(chat, chat.encode(text), max_tokens)
