"""The tokenizers of the tokenization lesson.

The model's own tokenizer is WordPiece, trained by Google on English books and Wikipedia; here it is read
token by token (`describe_tokens`). Next to it, two other families are trained on the spot with the
`tokenizers` library, on a small corpus written for this app (lessons/tokenization/corpus.txt): byte-level
BPE, the scheme of GPT-2, and Unigram, the scheme of SentencePiece (T5, ALBERT). Training takes a few
milliseconds, so the learner can change the vocabulary size and watch the splits change.
"""

from __future__ import annotations

import string
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import pandas as pd
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

from lessons.common.runs import TokenizedText

CORPUS_FILE = Path(__file__).parent / "corpus.txt"
ZOO_VOCAB_SIZES = (300, 350, 400, 450)  # small on purpose: a tiny corpus cannot fill a large vocabulary
UNIGRAM_UNKNOWN = "<unk>"
CONTINUATION_PREFIX = "##"  # WordPiece's mark for a piece glued to the previous one
# Unigram keeps only the characters it saw; these are kept even if the corpus lacks them.
_PRINTABLE_ASCII = list(string.ascii_letters + string.digits + string.punctuation)


@cache
def read_corpus() -> tuple[str, ...]:
    """The training sentences, one per line."""
    return tuple(line for line in CORPUS_FILE.read_text(encoding="utf-8").splitlines() if line.strip())


# --- The model's WordPiece, token by token ---------------------------------------------------------


@dataclass(frozen=True)
class TokenRow:
    """One token of the model's input, with where it came from."""

    position: int
    token: str
    id: int
    token_type_id: int  # 0: sentence A, 1: sentence B
    sentence: int  # index into the texts the tokens came from (0 for A, 1 for B)
    start: int  # character span in its own sentence; start == end for special tokens
    end: int
    covered_text: str  # those characters exactly as typed ("" for special tokens)
    continuation: bool  # a "##" piece: it continues the word of the token before it
    special: bool  # [CLS], [SEP], ...: added by the tokenizer, stands for no text
    unknown: bool  # the vocabulary had no piece for this text


def describe_tokens(
    tokenized: TokenizedText, texts: tuple[str, ...], unknown_token: str = "[UNK]"
) -> tuple[TokenRow, ...]:
    """Every token with its id, its sentence and the characters of the original text it stands for.

    `texts` are the sentences as typed: (text,) or (text, pair). Hugging Face offsets of a pair's second
    sentence count from that sentence's own start, so a token's token type id says which text to cut.
    """
    rows = []
    for position, (token, token_id, token_type, (start, end), special) in enumerate(
        zip(tokenized.tokens, tokenized.input_ids, tokenized.token_type_ids, tokenized.offsets, tokenized.special)
    ):
        sentence = min(token_type, len(texts) - 1)
        rows.append(
            TokenRow(
                position=position,
                token=token,
                id=token_id,
                token_type_id=token_type,
                sentence=sentence,
                start=start,
                end=end,
                covered_text="" if special else texts[sentence][start:end],
                continuation=token.startswith(CONTINUATION_PREFIX),
                special=special,
                unknown=token == unknown_token,
            )
        )
    return tuple(rows)


def texts_read(rows: tuple[TokenRow, ...], texts: tuple[str, ...], truncated: bool) -> tuple[str, ...]:
    """The part of each text the model actually reads: all of it, or after truncation only up to the last
    character a kept token covers (the rest never reaches the model, so it is not worth drawing)."""
    if not truncated:
        return texts
    return tuple(
        text[: max((row.end for row in rows if row.sentence == sentence and not row.special), default=0)]
        for sentence, text in enumerate(texts)
    )


# --- Two tokenizers trained here ---------------------------------------------------------------------


def train_bpe(vocab_size: int, corpus: tuple[str, ...] | None = None) -> Tokenizer:
    """Byte-level BPE as in GPT-2: start from the 256 byte values and merge the most frequent adjacent
    pair, again and again, until the vocabulary holds `vocab_size` tokens.

    Every text is a sequence of bytes, so no input is ever unknown. "Ġ" is how GPT-2 writes a space byte.
    """
    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size, initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False
    )
    tokenizer.train_from_iterator(corpus or read_corpus(), trainer)
    return tokenizer


def train_unigram(vocab_size: int, corpus: tuple[str, ...] | None = None) -> Tokenizer:
    """Unigram as in SentencePiece: start from many candidate substrings, give each a probability, and
    prune the pieces the corpus misses least until `vocab_size` remain (fewer if the corpus runs out).

    "▁" marks a space, so pieces that begin a word carry it. Every ASCII letter, digit and punctuation mark is
    a piece of its own, seen or not; any other character the corpus never showed becomes <unk>.
    """
    tokenizer = Tokenizer(models.Unigram())
    tokenizer.pre_tokenizer = pre_tokenizers.Metaspace()
    tokenizer.decoder = decoders.Metaspace()
    trainer = trainers.UnigramTrainer(
        vocab_size=vocab_size,
        unk_token=UNIGRAM_UNKNOWN,
        special_tokens=[UNIGRAM_UNKNOWN],
        initial_alphabet=_PRINTABLE_ASCII,
        show_progress=False,
    )
    tokenizer.train_from_iterator(corpus or read_corpus(), trainer)
    return tokenizer


@dataclass(frozen=True)
class Split:
    """One text as one tokenizer cuts it."""

    algorithm: str
    vocab_size: int
    tokens: tuple[str, ...]

    def __len__(self) -> int:
        return len(self.tokens)


def split_with(tokenizer: Tokenizer, text: str, algorithm: str) -> Split:
    """The tokens a trained tokenizer makes of `text`, unknown pieces written as <unk>.

    (A Unigram encoding reports an unknown piece by its original characters and the <unk> id; the table
    should say plainly that the model would see <unk>.)
    """
    unknown_id = tokenizer.token_to_id(UNIGRAM_UNKNOWN)
    encoding = tokenizer.encode(text)
    tokens = tuple(
        UNIGRAM_UNKNOWN if token_id == unknown_id else token for token, token_id in zip(encoding.tokens, encoding.ids)
    )
    return Split(algorithm, tokenizer.get_vocab_size(), tokens)


def wordpiece_split(tokenized: TokenizedText, vocab_size: int) -> Split:
    """The model's WordPiece tokens of a text (tokenized without [CLS]/[SEP]) as a `Split`."""
    return Split("WordPiece", vocab_size, tokenized.tokens)


def side_by_side(splits: list[Split]) -> pd.DataFrame:
    """One column of tokens per tokenizer, the i-th token of each in row i. A tokenizer that made fewer tokens
    leaves its last cells empty (""), not None: the table shows a blank, not the word "None"."""
    rows = max((len(split) for split in splits), default=0)
    return pd.DataFrame({split.algorithm: [*split.tokens, *[""] * (rows - len(split))] for split in splits})
