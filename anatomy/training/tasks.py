"""Two small algorithmic tasks for the models this project trains itself: sorting letters and reversing them.

Both are chosen because attention is the only way to solve them. To write the next letter of a sorted word,
the model must *look back* at the input and find the smallest letter it has not written yet; to reverse a
word, output step t must read input position S − 1 − t. A trained model's attention weights therefore show
the algorithm, which is what the lessons need.

Everything here is deterministic: examples come from a `torch.Generator` the caller seeds, so one seed always
gives the same words, and a different seed gives held-out words to test on.

    sorting (one decoder reads and writes one sequence):   <bos> d b c a = a b c d <eos>
    reversal (an encoder reads, a decoder writes):         source  d b c a
                                                           target  <bos> a c b d <eos>
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from functools import cached_property
from typing import Any, ClassVar

import torch
from torch import Tensor, nn

from anatomy.generation import generation_steps

PAD, BOS, EOS, SEPARATOR = "<pad>", "<bos>", "<eos>", "="
SPECIAL_TOKENS = (PAD, BOS, EOS, SEPARATOR)
IGNORE_INDEX = -100  # a target with this id adds nothing to the loss (F.cross_entropy's ignore_index)


@dataclass(frozen=True)
class CharacterTokenizer:
    """One token per letter, after the four special tokens: the whole vocabulary fits on one line."""

    tokens: tuple[str, ...]
    _ids: dict[str, int] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if len(set(self.tokens)) != len(self.tokens):
            raise ValueError("every token of a vocabulary must be different")
        object.__setattr__(self, "_ids", {token: index for index, token in enumerate(self.tokens)})

    def __len__(self) -> int:
        return len(self.tokens)

    def id(self, token: str) -> int:
        if token not in self._ids:
            raise ValueError(f"{token!r} is not in the vocabulary {''.join(self.tokens[len(SPECIAL_TOKENS) :])}")
        return self._ids[token]

    def encode(self, tokens: Iterable[str]) -> list[int]:
        """Letters (a string is an iterable of letters) or special tokens -> ids."""
        return [self.id(token) for token in tokens]

    def decode(self, ids: Iterable[int]) -> list[str]:
        return [self.tokens[int(index)] for index in ids]

    @property
    def pad_id(self) -> int:
        return self._ids[PAD]

    @property
    def bos_id(self) -> int:
        return self._ids[BOS]

    @property
    def eos_id(self) -> int:
        return self._ids[EOS]

    @property
    def separator_id(self) -> int:
        return self._ids[SEPARATOR]


@dataclass(frozen=True)
class Batch:
    """A training batch: the keyword arguments of the model's forward, and the token each position must predict."""

    inputs: dict[str, Tensor]  # e.g. input_ids (B, T) and attention_mask (B, T)
    targets: Tensor  # (B, T) the next token's id, IGNORE_INDEX where nothing is scored

    def to(self, device: torch.device | str) -> Batch:
        """The same batch on `device` (the model's): batches are built on the CPU."""
        return Batch({name: tensor.to(device) for name, tensor in self.inputs.items()}, self.targets.to(device))


def _pad(rows: Sequence[Sequence[int]], value: int) -> Tensor:
    """(B, longest) ids, each row padded on the right with `value`."""
    longest = max(len(row) for row in rows)
    return torch.tensor([list(row) + [value] * (longest - len(row)) for row in rows], dtype=torch.long)


def exact_match_rate(predictions: Sequence[str], answers: Sequence[str]) -> float:
    """The share of predictions that equal their answer exactly: one wrong letter makes the whole answer wrong."""
    if len(predictions) != len(answers) or not answers:
        raise ValueError("need as many predictions as answers, and at least one")
    return sum(prediction == answer for prediction, answer in zip(predictions, answers)) / len(answers)


@dataclass(frozen=True, kw_only=True)
class LetterTask:
    """Words of `min_length`..`max_length` letters from `alphabet`, drawn at random."""

    name: ClassVar[str]
    alphabet: str = "abcdefghijklmnop"
    min_length: int = 3
    max_length: int = 8
    distinct: bool = True  # no letter twice in a word

    def __post_init__(self) -> None:
        if not 1 <= self.min_length <= self.max_length:
            raise ValueError("need 1 <= min_length <= max_length")
        if self.distinct and self.max_length > len(self.alphabet):
            raise ValueError("a word of distinct letters cannot be longer than the alphabet")

    @cached_property  # built once: a training step asks for it once per word
    def tokenizer(self) -> CharacterTokenizer:
        return CharacterTokenizer(SPECIAL_TOKENS + tuple(self.alphabet))

    def sample_words(self, count: int, generator: torch.Generator) -> list[str]:
        """`count` random words; the same generator state always gives the same words."""
        letters = len(self.alphabet)
        lengths = torch.randint(self.min_length, self.max_length + 1, (count,), generator=generator)
        if self.distinct:  # a random permutation of the alphabet per word, cut to its length
            choices = torch.rand(count, letters, generator=generator).argsort(dim=1)
        else:
            choices = torch.randint(0, letters, (count, self.max_length), generator=generator)
        return ["".join(self.alphabet[i] for i in row[:length]) for row, length in zip(choices.tolist(), lengths)]

    def check(self, word: str) -> None:
        """Raise ValueError, with the reason, for a word this task's models were not trained on."""
        if not self.min_length <= len(word) <= self.max_length:
            raise ValueError(f"use {self.min_length} to {self.max_length} letters (got {len(word)})")
        unknown = sorted(set(word) - set(self.alphabet))
        if unknown:
            raise ValueError(f"only the letters {self.alphabet} are known (not {''.join(unknown)})")
        if self.distinct and len(set(word)) != len(word):
            raise ValueError("no letter may appear twice")

    def answer(self, word: str) -> str:
        raise NotImplementedError

    def batch(self, words: Sequence[str]) -> Batch:
        """The training batch of `words`: the model's inputs and the token each position must predict."""
        raise NotImplementedError

    def predict(self, model: nn.Module, words: Sequence[str]) -> list[str]:
        """The model's own answers to `words`, written one greedy token at a time."""
        raise NotImplementedError

    def reads_only_earlier_tokens(self, model: nn.Module) -> bool:
        """Whether every answer position of `model` reads only the tokens before it (the causal mask)."""
        raise NotImplementedError

    @torch.no_grad()
    def written_right(self, model: nn.Module, words: Sequence[str]) -> list[bool]:
        """For each word, whether the model's own greedy answer (what `predict` writes) is exactly right.

        A model whose positions read only earlier tokens writes a word right exactly when, given the right
        answer so far, its most probable next token is the right one at every answer position, <eos> included:
        each greedy step then writes what the right answer has there, and the first wrong step would be one of
        those positions. So the teacher-forced pass that training scores decides every word at once, where
        writing takes a pass per letter. A model that reads later tokens too (the cheater, trained without the
        causal mask) would read the answer in that pass: its answers are written out (`written_out_right`).
        """
        if not self.reads_only_earlier_tokens(model):
            return self.written_out_right(model, words)
        batch = self.batch(words).to(next(model.parameters()).device)
        logits = model(**batch.inputs).logits  # (B, T, V)
        targets = batch.targets  # (B, T), IGNORE_INDEX where nothing is answered
        right = (logits.argmax(dim=-1) == targets) | (targets == IGNORE_INDEX)  # greedy's choice: the first maximum
        return right.all(dim=1).tolist()

    def written_out_right(self, model: nn.Module, words: Sequence[str]) -> list[bool]:
        """For each word, whether the answer `predict` writes is exactly right."""
        return [written == self.answer(word) for written, word in zip(self.predict(model, words), words)]

    def to_dict(self) -> dict[str, Any]:
        """What a checkpoint's config.json records about the task (see `task_from_dict`)."""
        return {"name": self.name, **asdict(self)}


@dataclass(frozen=True, kw_only=True)
class SortingTask(LetterTask):
    """A decoder-only model reads the word, then writes its letters in alphabetical order.

    Training shows the whole sequence `<bos> word = sorted <eos>` and scores only the positions after `=`:
    predicting the scrambled word itself is impossible and not the point.
    """

    name: ClassVar[str] = "sort"

    def answer(self, word: str) -> str:
        return "".join(sorted(word))

    def prompt(self, word: str) -> list[int]:
        """`<bos> word =`: what the model sees before it starts answering."""
        return self.tokenizer.encode([BOS, *word, SEPARATOR])

    def sequence(self, word: str) -> list[int]:
        """The full training sequence `<bos> word = answer <eos>`."""
        return self.prompt(word) + self.tokenizer.encode([*self.answer(word), EOS])

    def batch(self, words: Sequence[str]) -> Batch:
        """Teacher forcing: position t reads tokens 0..t and must predict token t + 1."""
        tokenizer = self.tokenizer
        sequences = _pad([self.sequence(word) for word in words], tokenizer.pad_id)  # (B, T + 1)
        input_ids, next_ids = sequences[:, :-1], sequences[:, 1:]  # (B, T) each
        positions = torch.arange(next_ids.size(1))[None]  # (1, T)
        first_answer = torch.tensor([len(word) + 1 for word in words])[:, None]  # the `=` position
        scored = (positions >= first_answer) & (next_ids != tokenizer.pad_id)
        targets = next_ids.masked_fill(~scored, IGNORE_INDEX)
        attention_mask = (input_ids != tokenizer.pad_id).long()
        return Batch({"input_ids": input_ids, "attention_mask": attention_mask}, targets)

    def reads_only_earlier_tokens(self, model) -> bool:
        return model.config.causal  # False for the cheater

    @torch.no_grad()
    def predict(self, model, words: Sequence[str]) -> list[str]:
        """The model's own answers, written one greedy token at a time (no teacher forcing).

        Words of one length run as one batch, so no prompt needs padding; the answer is what comes before
        the first `<eos>` among the len(word) + 1 generated tokens, special tokens written by name.
        """
        answers: dict[int, str] = {}
        for length, indices in _by_length(words):
            prompts = self._prompts(model, [words[index] for index in indices])
            generated = model.generate_greedy(prompts, max_new_tokens=length + 1)[:, prompts.size(1) :]
            for index, row in zip(indices, generated.tolist()):
                answers[index] = answer_text(self.tokenizer.decode(row))
        return [answers[index] for index in range(len(words))]

    @torch.no_grad()
    def written_out_right(self, model, words: Sequence[str]) -> list[bool]:
        """For each word, whether the answer `predict` writes is exactly right, written only as far as that
        is in doubt: a word is wrong from its first wrong token on, so the words of one length stop being written
        once every one of them has gone wrong. The cheater's words mostly have within three of the up to nine
        tokens (the 300 held-out words on one CPU thread: 0.02–0.15 s against 0.17 s written out in full). Each
        step is the one `predict` takes, on the same batch, so the verdicts are the ones its answers give."""
        right = [False] * len(words)
        for length, indices in _by_length(words):
            prompts = self._prompts(model, [words[index] for index in indices])
            answer_ids = [self.sequence(words[index])[length + 2 :] for index in indices]  # letters, then <eos>
            answers = torch.tensor(answer_ids, device=prompts.device)
            still_right = torch.ones(len(indices), dtype=torch.bool, device=prompts.device)
            for position, step in enumerate(generation_steps(model, prompts, length + 1)):
                still_right &= step.chosen_ids[:, 0] == answers[:, position]
                if not still_right.any():
                    break
            for index, verdict in zip(indices, still_right.tolist()):
                right[index] = verdict
        return right

    def _prompts(self, model, words: Sequence[str]) -> Tensor:
        """(b, length + 2) the prompts of words of one length, on the model's device: no padding needed."""
        return torch.tensor([self.prompt(word) for word in words], device=next(model.parameters()).device)


@dataclass(frozen=True, kw_only=True)
class ReversalTask(LetterTask):
    """An encoder reads the word; a decoder writes it back to front, reading the source by cross-attention."""

    name: ClassVar[str] = "reverse"
    alphabet: str = "abcdefghijklmnopqrstuvwxyz"
    distinct: bool = False

    def answer(self, word: str) -> str:
        return word[::-1]

    def source(self, word: str) -> list[int]:
        return self.tokenizer.encode(word)

    def target(self, word: str) -> list[int]:
        """`<bos> answer <eos>`: the decoder starts from <bos> and stops by writing <eos>."""
        return self.tokenizer.encode([BOS, *self.answer(word), EOS])

    def sources(self, words: Sequence[str]) -> tuple[Tensor, Tensor]:
        """(B, S) source ids padded on the right, and their (B, S) mask of 1 = letter, 0 = padding."""
        source_ids = _pad([self.source(word) for word in words], self.tokenizer.pad_id)
        return source_ids, (source_ids != self.tokenizer.pad_id).long()

    def batch(self, words: Sequence[str]) -> Batch:
        """Teacher forcing on the target; every target token after <bos> is scored, padding is not."""
        source_ids, source_mask = self.sources(words)
        targets = _pad([self.target(word) for word in words], self.tokenizer.pad_id)  # (B, T + 1)
        target_ids, next_ids = targets[:, :-1], targets[:, 1:]
        next_ids = next_ids.masked_fill(next_ids == self.tokenizer.pad_id, IGNORE_INDEX)
        inputs = {"source_ids": source_ids, "target_ids": target_ids, "source_mask": source_mask}
        return Batch(inputs, next_ids)

    def reads_only_earlier_tokens(self, model) -> bool:
        return True  # the decoder's self-attention is causal; the source it reads is given whole

    @torch.no_grad()
    def predict(self, model, words: Sequence[str]) -> list[str]:
        """The model's own reversals, greedy, all words in one batch (the source padding is masked)."""
        device = next(model.parameters()).device
        source_ids, source_mask = (tensor.to(device) for tensor in self.sources(words))
        generated = model.generate_greedy(
            source_ids, self.tokenizer.bos_id, self.max_length + 1, source_mask=source_mask
        )[:, 1:]
        return [answer_text(self.tokenizer.decode(row)) for row in generated.tolist()]


def _by_length(words: Sequence[str]) -> Iterable[tuple[int, list[int]]]:
    """Each length the words have, shortest first, with the positions of its words in `words`."""
    for length in sorted({len(word) for word in words}):
        yield length, [index for index, word in enumerate(words) if len(word) == length]


def answer_text(tokens: Sequence[str]) -> str:
    """Generated tokens as an answer: everything before the first <eos>, joined (special tokens are written
    by name, so an answer holding one never equals a word of letters)."""
    tokens = list(tokens)
    return "".join(tokens[: tokens.index(EOS)] if EOS in tokens else tokens)


TASKS: dict[str, type[LetterTask]] = {task.name: task for task in (SortingTask, ReversalTask)}


def task_from_dict(description: dict[str, Any]) -> LetterTask:
    """The task a checkpoint's config.json describes, e.g. {"name": "sort", "alphabet": "abc...", ...}."""
    options = dict(description)
    name = options.pop("name", None)
    if name not in TASKS:
        raise ValueError(f"unknown task {name!r}; known: {sorted(TASKS)}")
    return TASKS[name](**options)
