"""The reverser at work on one word: its three kinds of attention, and its answer written one token at a time.

An encoder-decoder runs three different attentions, and the reversal task makes each one easy to read:

* the encoder's **self-attention** (S × S): the source letters read each other, in both directions, no mask;
* the decoder's **masked self-attention** (T × T): each target position reads itself and the positions
  before it, never the ones after (the causal mask);
* **cross-attention** (T × S): the queries come from the decoder, the keys and values from the encoder's
  output. Row t says which source letters output step t reads; to reverse a word it should read position
  S − 1 − t.

`reverse_word` generates as `EncoderDecoder.generate_greedy` does, through the same loop
(`anatomy.generation.seq2seq_generation_steps`: encode once, then run the decoder on the target so far and
append its most probable token), but it keeps every step's probabilities and weights.
Everything returned is a frozen dataclass of CPU tensors: the shared model is only read.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor

from anatomy.generation import Step, seq2seq_generation_steps
from anatomy.seq2seq import EncoderDecoder
from anatomy.trace import ModelTrace
from anatomy.training.tasks import CharacterTokenizer, LetterTask, ReversalTask, answer_text


@dataclass(frozen=True)
class WordCheck:
    """What the user typed, made ready for the model: the word to run, or the reason it cannot run."""

    word: str  # the entry after trimming spaces and lowercasing ("" when there is a problem)
    problem: str | None  # why the entry cannot be reversed, in plain text (None when it can)
    lowercased: bool = False  # True when capitals were turned into small letters


def describe_characters(characters: str, limit: int = 6) -> str:
    """“1”, “2”, a space: each character quoted, whitespace named, at most `limit` listed (plain text,
    for the page to escape)."""
    names = {" ": "a space", "\t": "a tab", "\n": "a line break"}
    shown = [names.get(char, f"“{char}”") for char in characters[:limit]]
    if len(characters) > limit:
        shown.append(f"{len(characters) - limit} other characters")
    return ", ".join(shown)


def check_word(task: LetterTask, entry: str) -> WordCheck:
    """The word to reverse, or a clear reason why `entry` is not one the model was trained on."""
    word = entry.strip()
    lowercased = word != word.lower()
    word = word.lower()
    letters = f"{task.min_length} to {task.max_length} letters"
    if not word:
        return WordCheck("", f"Type a word of {letters} to reverse.")
    unknown = "".join(sorted(set(word) - set(task.alphabet)))
    if unknown:
        return WordCheck(
            "",
            (
                f"The reverser knows only the {len(task.alphabet)} letters {task.alphabet[0]}–{task.alphabet[-1]}, "
                f"and this entry also holds {describe_characters(unknown)}. Type a word of {letters}."
            ),
        )
    if not task.min_length <= len(word) <= task.max_length:
        return WordCheck("", f"The reverser was trained on words of {letters}; this one has {len(word)}.")
    try:
        task.check(word)
    except ValueError as error:
        return WordCheck("", f"The reverser cannot read this word: {error}.")
    return WordCheck(word, None, lowercased)


@dataclass(frozen=True)
class GenerationStep:
    """One step of greedy generation: what the decoder had, what it wrote, and which source letters it read."""

    index: int  # t, counted from 0
    inputs: tuple[str, ...]  # the decoder's input at this step: <bos> and the t tokens written so far
    token: str  # the token written: the most probable one
    token_id: int  # its id in the vocabulary
    probability: float  # its probability after the softmax
    probabilities: Tensor  # (V,) the whole next-token distribution
    runner_up: str  # the second most probable token
    runner_up_probability: float
    cross_attention: Tensor  # (H, S) this step's row of cross-attention, one per head
    most_read: tuple[int, ...]  # per head: the source position with the largest weight in that row


@dataclass(frozen=True)
class ReversalLesson:
    """One word through the reverser, every attention kept. Attention tensors hold one block's heads."""

    word: str
    source_tokens: tuple[str, ...]  # S: the letters the encoder reads
    target_tokens: tuple[str, ...]  # T: the decoder's inputs, <bos> then every written token but the last
    steps: tuple[GenerationStep, ...]
    encoder_attention: Tensor  # (H, S, S) self-attention of the last encoder block, no mask
    encoder_mask: Tensor | None  # the mask encoder self-attention ran with (None: every pair allowed)
    decoder_attention: Tensor  # (H, T, T) masked self-attention of the last decoder block
    cross_attention: Tensor  # (H, T, S) cross-attention of the last decoder block
    expected: str  # the true reversal

    @property
    def written(self) -> tuple[str, ...]:
        """The T tokens the decoder wrote, one per step (the last is <eos> when it stopped by itself)."""
        return tuple(step.token for step in self.steps)

    @property
    def probabilities(self) -> Tensor:
        """(T, V) every step's next-token distribution."""
        return torch.stack([step.probabilities for step in self.steps])

    @property
    def answer(self) -> str:
        """What the model wrote before its first <eos>, as the task reads an answer."""
        return answer_text(self.written)

    @property
    def correct(self) -> bool:
        return self.answer == self.expected

    @property
    def has_repeated_letters(self) -> bool:
        return len(set(self.word)) < len(self.word)

    @property
    def decoder_self_weight(self) -> Tensor:
        """(H,) the mean weight a decoder position puts on itself (the diagonal of masked self-attention)."""
        return self.decoder_attention.diagonal(dim1=-2, dim2=-1).mean(dim=-1)

    @property
    def alignment(self) -> Tensor:
        """(H, T) for each head and output step, the source position it reads most."""
        return self.cross_attention.argmax(dim=-1)

    @property
    def mirrored_positions(self) -> Tensor:
        """(S,) the source position S − 1 − t that letter step t must read to reverse the word."""
        return torch.arange(len(self.source_tokens) - 1, -1, -1)

    @property
    def letter_steps(self) -> int:
        """S': the steps that have a mirrored source letter to copy (the first S, or fewer if it stopped early)."""
        return min(len(self.source_tokens), len(self.steps))

    @property
    def mirrored_hits(self) -> tuple[int, ...]:
        """Per head: how many of the S letter steps read exactly their mirrored source position most."""
        wanted = self.mirrored_positions[: self.letter_steps]
        return tuple(int((row[: self.letter_steps] == wanted).sum()) for row in self.alignment)

    @property
    def weight_on_mirror(self) -> Tensor:
        """(H, S') the weight each letter step puts on its mirrored position."""
        rows = torch.arange(self.letter_steps)
        return self.cross_attention[:, rows, self.mirrored_positions[: self.letter_steps]]

    @property
    def mean_weight_on_mirror(self) -> Tensor:
        """(H,) the average weight a letter step puts on its mirrored position."""
        return self.weight_on_mirror.mean(dim=-1)


@torch.no_grad()
def reverse_word(model: EncoderDecoder, task: ReversalTask, word: str, layer: int = -1) -> ReversalLesson:
    """Encode `word` once, then write its reversal greedily, one token per step, until <eos> or as many
    steps as `task.predict` allows (max_length + 1). `layer` picks which block's attention is kept."""
    tokenizer = task.tokenizer
    device = next(model.parameters()).device
    source_ids = torch.tensor([task.source(word)], device=device)  # (1, S)
    encoded = model.encode(source_ids, trace=True)
    memory = encoded.last_hidden_state  # (1, S, D)
    start_ids = torch.tensor([[tokenizer.bos_id]], device=device)  # (1, 1)
    generation = list(  # every step's decoder trace kept: a small model, a short word
        seq2seq_generation_steps(
            model, memory, start_ids, task.max_length + 1, trace=True, stop_token_ids={tokenizer.eos_id}
        )
    )
    steps = tuple(_generation_step(step, index, tokenizer, layer) for index, step in enumerate(generation))
    # The last step's decoder pass saw every input position, and with the causal mask row t of its
    # attention is exactly what step t computed: it holds the whole T × T and T × S picture.
    last_trace = generation[-1].recorded_trace
    encoder_attention = encoded.recorded_trace.layers[layer].attention
    return ReversalLesson(
        word=word,
        source_tokens=tuple(word),
        target_tokens=steps[-1].inputs,
        steps=steps,
        encoder_attention=encoder_attention.weights[0].cpu(),
        encoder_mask=encoder_attention.mask,
        decoder_attention=last_trace.layers[layer].attention.weights[0].cpu(),
        cross_attention=_cross_attention_weights(last_trace, layer)[0].cpu(),
        expected=task.answer(word),
    )


def _generation_step(step: Step, index: int, tokenizer: CharacterTokenizer, layer: int) -> GenerationStep:
    """What the page shows of one step: the decoder's inputs, the token written and the runner-up, and the
    row of cross-attention (in block `layer`) that the newest position computed."""
    probabilities = step.logits[0].softmax(dim=-1)  # (V,)
    token_id, runner_up = int(step.chosen_ids), int(probabilities.topk(2).indices[1])
    row = _cross_attention_weights(step.recorded_trace, layer)[0, :, -1].cpu()  # (H, S)
    return GenerationStep(
        index=index,
        inputs=tuple(tokenizer.decode(step.sequence[0].tolist())),
        token=tokenizer.tokens[token_id],
        token_id=token_id,
        probability=float(probabilities[token_id]),
        probabilities=probabilities.cpu(),
        runner_up=tokenizer.tokens[runner_up],
        runner_up_probability=float(probabilities[runner_up]),
        cross_attention=row,
        most_read=tuple(int(position) for position in row.argmax(dim=-1)),
    )


def _cross_attention_weights(decoder_trace: ModelTrace, layer: int) -> Tensor:
    """(1, H, T, S) the cross-attention weights of block `layer` of an encoder-decoder's decoder."""
    cross_attention = decoder_trace.layers[layer].cross_attention
    if cross_attention is None:
        raise ValueError("only the decoder of an encoder-decoder model has cross-attention")
    return cross_attention.weights
