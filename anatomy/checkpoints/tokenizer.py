"""A checkpoint's tokenizer, read with the `tokenizers` library alone, behind the part of transformers' tokenizer
interface the lessons call: `tokenizer(text, pair, return_offsets_mapping=True, ...)`, `tokenize`, `decode`,
`convert_ids_to_tokens`, and the special tokens by name (`cls_token`, `pad_token_id` ...).

transformers' fast tokenizers wrap this very object (the Rust tokenizer a `tokenizer.json` describes), so the ids,
offsets and masks are the same, string for string. Reading it directly spares the server
transformers itself: importing it and building its tokenizer classes costs about 30 MB of memory, for
nothing the lessons need (tests/anatomy/test_tokenizer_parity.py compares the two).

One object serves every browser session at once, so nothing here changes the Rust tokenizer after it is built:
a call that truncates cuts its own encodings instead of switching the shared tokenizer's truncation on and off.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch

if TYPE_CHECKING:  # the `tokenizers` package is only imported by the functions that build one
    from tokenizers import Encoding, Tokenizer

SPECIAL_TOKEN_NAMES = ("bos_token", "eos_token", "unk_token", "sep_token", "pad_token", "cls_token", "mask_token")


@dataclass(frozen=True)
class NamedSpecialTokens:
    """The special tokens a checkpoint names (special_tokens_map.json), each None where it has none."""

    bos_token: str | None = None
    eos_token: str | None = None
    unk_token: str | None = None
    sep_token: str | None = None
    pad_token: str | None = None
    cls_token: str | None = None
    mask_token: str | None = None

    @classmethod
    def from_mapping(cls, mapping: dict[str, Any]) -> NamedSpecialTokens:
        """From special_tokens_map.json or tokenizer_config.json, where a token is a string or {"content": ...}."""
        named = {}
        for name in SPECIAL_TOKEN_NAMES:
            value = mapping.get(name)
            named[name] = value.get("content") if isinstance(value, dict) else value
        return cls(**named)


class TextTokenizer:
    """A `tokenizers.Tokenizer` with its special tokens named, called as transformers' fast tokenizers are."""

    def __init__(self, tokenizer: Tokenizer, specials: NamedSpecialTokens, do_lower_case: bool = False):
        self.backend_tokenizer = tokenizer
        self.specials = specials
        self.do_lower_case = do_lower_case  # the tokenization lesson says so when the tokenizer lowercases

    @classmethod
    def from_folder(cls, folder: Path) -> TextTokenizer:
        """The tokenizer.json of a checkpoint folder, with the special tokens its two config files name."""
        from tokenizers import Tokenizer

        settings: dict[str, Any] = {}
        for name in ("tokenizer_config.json", "special_tokens_map.json"):  # the second wins, as in transformers
            path = folder / name
            if path.is_file():
                settings.update(json.loads(path.read_text(encoding="utf-8")))
        tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
        tokenizer.no_padding()  # a sentence-transformers tokenizer.json pads every text to 128 tokens ...
        tokenizer.no_truncation()  # ... and cuts it there: the lessons choose their own cap per call
        return cls(tokenizer, NamedSpecialTokens.from_mapping(settings), bool(settings.get("do_lower_case", False)))

    # ----- special tokens, by name -------------------------------------------------------------------------

    def _id_of(self, token: str | None) -> int | None:
        return None if token is None else self.backend_tokenizer.token_to_id(token)

    @property
    def bos_token(self) -> str | None:
        return self.specials.bos_token

    @property
    def eos_token(self) -> str | None:
        return self.specials.eos_token

    @property
    def unk_token(self) -> str | None:
        return self.specials.unk_token

    @property
    def sep_token(self) -> str | None:
        return self.specials.sep_token

    @property
    def pad_token(self) -> str | None:
        return self.specials.pad_token

    @property
    def cls_token(self) -> str | None:
        return self.specials.cls_token

    @property
    def mask_token(self) -> str | None:
        return self.specials.mask_token

    @property
    def bos_token_id(self) -> int | None:
        return self._id_of(self.bos_token)

    @property
    def eos_token_id(self) -> int | None:
        return self._id_of(self.eos_token)

    @property
    def unk_token_id(self) -> int | None:
        return self._id_of(self.unk_token)

    @property
    def sep_token_id(self) -> int | None:
        return self._id_of(self.sep_token)

    @property
    def pad_token_id(self) -> int | None:
        return self._id_of(self.pad_token)

    @property
    def cls_token_id(self) -> int | None:
        return self._id_of(self.cls_token)

    @property
    def mask_token_id(self) -> int | None:
        return self._id_of(self.mask_token)

    def __len__(self) -> int:
        """The vocabulary with the added tokens, as `len()` of a transformers tokenizer."""
        return self.backend_tokenizer.get_vocab_size(with_added_tokens=True)

    # ----- text to ids and back ----------------------------------------------------------------------------

    def __call__(
        self,
        text: str,
        text_pair: str | None = None,
        *,
        add_special_tokens: bool = True,
        truncation: bool = False,
        max_length: int | None = None,
        return_offsets_mapping: bool = False,
        return_special_tokens_mask: bool = False,
        return_token_type_ids: bool = True,
        return_tensors: str | None = None,
        verbose: bool = True,  # transformers warns of texts over the model's length; nothing here does
    ) -> dict[str, Any]:
        """One text (or sentence pair) as transformers returns it: lists, or (1, T) tensors with "pt". An empty
        second sentence is none, as for transformers."""
        encoding = self._encode(text, text_pair or None, add_special_tokens, max_length if truncation else None)
        encoded: dict[str, Any] = {"input_ids": encoding.ids}
        if return_token_type_ids:
            encoded["token_type_ids"] = encoding.type_ids
        encoded["attention_mask"] = encoding.attention_mask
        if return_offsets_mapping:
            encoded["offset_mapping"] = encoding.offsets
        if return_special_tokens_mask:
            encoded["special_tokens_mask"] = encoding.special_tokens_mask
        if return_tensors == "pt":
            return {key: torch.tensor([value]) for key, value in encoded.items()}
        if return_tensors is not None:
            raise ValueError(f"return_tensors={return_tensors!r}: only 'pt' (torch) is supported here")
        return encoded

    def _encode(self, text: str, pair: str | None, add_special_tokens: bool, max_length: int | None) -> Encoding:
        """The encoding of text (and pair), cut to max_length tokens, special ones included, if one is given.

        A pair is cut as transformers' default "longest_first" truncation cuts it (tokenizers' LongestFirst,
        before [CLS] and [SEP] are added): a sequence that fits in half the room is kept whole and the other
        gets the rest; otherwise each gets half, and the longer one (the second, on a tie) the odd token. A
        cap below the special tokens' count cuts nothing, as in transformers (which logs an error then)."""
        added = self.backend_tokenizer.num_special_tokens_to_add(pair is not None) if add_special_tokens else 0
        if max_length is None or max_length < added:
            return self.backend_tokenizer.encode(text, pair, add_special_tokens=add_special_tokens)
        first = self.backend_tokenizer.encode(text, add_special_tokens=False)
        second = None if pair is None else self.backend_tokenizer.encode(pair, add_special_tokens=False)
        room = max_length - added
        kept_first, kept_second = len(first), 0 if second is None else len(second)
        if kept_first + kept_second > room:
            longer, shorter = max(kept_first, kept_second), min(kept_first, kept_second)
            half = room // 2
            longer, shorter = (room - shorter, shorter) if shorter <= half else (room - half, half)
            kept_first, kept_second = (longer, shorter) if kept_first > kept_second else (shorter, longer)
        first.truncate(kept_first)
        if second is not None:
            second.truncate(kept_second)
        return self.backend_tokenizer.post_process(first, second, add_special_tokens=add_special_tokens)

    def encode(self, text: str, add_special_tokens: bool = True) -> list[int]:
        return self.backend_tokenizer.encode(text, add_special_tokens=add_special_tokens).ids

    def tokenize(self, text: str) -> list[str]:
        """The token strings of text, without the special tokens a model adds around it."""
        return self.backend_tokenizer.encode(text, add_special_tokens=False).tokens

    def decode(self, ids: Sequence[int], skip_special_tokens: bool = False) -> str:
        return self.backend_tokenizer.decode(list(ids), skip_special_tokens=skip_special_tokens)

    def convert_ids_to_tokens(self, ids: Sequence[int]) -> list[str | None]:
        """Each id's token string (None for an id outside the vocabulary)."""
        return [self.backend_tokenizer.id_to_token(index) for index in ids]

    def convert_tokens_to_ids(self, tokens: Sequence[str]) -> list[int | None]:
        return [self.backend_tokenizer.token_to_id(token) for token in tokens]

    def convert_tokens_to_string(self, tokens: Sequence[str]) -> str:
        """The text the tokens stand for, as the tokenizer's decoder writes it (byte-level BPE: 'Ġthe' is ' the')."""
        decoder = self.backend_tokenizer.decoder
        return " ".join(tokens) if decoder is None else decoder.decode(list(tokens))
