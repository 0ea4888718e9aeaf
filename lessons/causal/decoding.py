"""A decoder at work: greedy generation one token at a time, teacher forcing, and what the mask changes.

A decoder-only model is trained on whole sequences at once (*teacher forcing*: every position is shown the
true tokens before it and asked for the next one) but used one token at a time (*generation*: each new
token is chosen from the model's own previous choices). The causal mask is what makes those two the same
computation. Everything here returns frozen dataclasses of CPU tensors, so a page can show every step, and
nothing is stored on the model: the same model object serves every browser session.

    generation       <bos> b a n a n a =  ->  a     then  <bos> b a n a n a = a  ->  a   ...
    teacher forcing  <bos> b a n a n a = a a a b n n   ->  each position's next token, in one pass
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch
from torch import Tensor, nn

from anatomy.attention import AttentionTrace
from anatomy.devices import float64_on_the_cpu
from anatomy.generation import Step, generation_steps
from anatomy.models import DecoderOnlyLM
from anatomy.training.tasks import SortingTask, answer_text
from lessons.common.decoder_attention import layer_attention
from lessons.common.runs import TokenizedText, tokenize


@dataclass(frozen=True)
class Candidate:
    """One possible next token and the probability the model gave it."""

    token_id: int
    probability: float


def top_candidates(probabilities: Tensor, k: int) -> tuple[Candidate, ...]:
    """The k most probable next tokens of a (V,) distribution, most probable first (k is capped at V)."""
    values, ids = probabilities.topk(min(k, probabilities.numel()))
    return tuple(Candidate(int(token_id), float(value)) for token_id, value in zip(ids, values))


def _traced_forward(model: nn.Module, ids: Sequence[int]) -> tuple[Tensor, Tensor]:
    """One traced forward over one sequence: (T, V) log-probabilities and (L, H, T, T) attention, on the CPU."""
    device = next(model.parameters()).device
    with torch.inference_mode():
        output = model(torch.tensor([list(ids)], device=device), trace=True)
    log_probabilities = float64_on_the_cpu(output.logits[0]).log_softmax(dim=-1)  # (T, V)
    attention = torch.stack([weights[0] for weights in output.attentions])  # (L, H, T, T)
    return log_probabilities, attention.cpu()


# --- Generation, one token at a time -------------------------------------------------------------------


@dataclass(frozen=True)
class DecodingStep:
    """One step of greedy generation: the model read `read_ids` and wrote `chosen_id`."""

    read_ids: tuple[int, ...]  # the prompt plus every token written before this step
    probabilities: Tensor  # (V,) the next-token distribution at the last position read
    chosen_id: int  # the most probable token: greedy decoding takes it
    attention: Tensor  # (L, H, T, T) every weight of this step's forward, T = len(read_ids)

    @property
    def chosen_probability(self) -> float:
        return float(self.probabilities[self.chosen_id])

    def candidates(self, k: int) -> tuple[Candidate, ...]:
        """The k tokens the model found most likely here (the first one is `chosen_id`)."""
        return top_candidates(self.probabilities, k)


@dataclass(frozen=True)
class Generation:
    """A whole greedy generation, step by step."""

    prompt_ids: tuple[int, ...]
    steps: tuple[DecodingStep, ...]

    @property
    def generated_ids(self) -> tuple[int, ...]:
        return tuple(step.chosen_id for step in self.steps)

    @property
    def sequence_ids(self) -> tuple[int, ...]:
        """The prompt followed by everything written (the last token was written but never read)."""
        return self.prompt_ids + self.generated_ids

    @property
    def step_probabilities(self) -> Tensor:
        """(N, V) the next-token distribution of every step, one row per step."""
        return torch.stack([step.probabilities for step in self.steps])

    @property
    def final_attention(self) -> Tensor:
        """(L, H, T, T) the attention of the last step, which read the longest sequence."""
        return self.steps[-1].attention


def generate_greedily(
    model: DecoderOnlyLM, prompt_ids: Sequence[int], max_new_tokens: int, stop_id: int | None = None
) -> Generation:
    """Write up to `max_new_tokens` tokens after the prompt, each the most probable one, keeping every step.

    Each step runs the model on everything read so far, with a trace (no key-value cache: the point is to
    see each step's whole computation). Writing `stop_id` ends the generation. The model must fit the whole
    sequence in its positions (a decoder that slides a window would read something else than shown here).
    """
    if len(prompt_ids) + max_new_tokens - 1 > model.config.max_positions:
        raise ValueError(
            f"{len(prompt_ids)} prompt tokens + {max_new_tokens} new ones do not fit "
            f"{model.config.max_positions} positions"
        )
    device = next(model.parameters()).device
    prompt = torch.tensor([list(prompt_ids)], device=device)
    stop_token_ids = () if stop_id is None else (stop_id,)
    steps = generation_steps(model, prompt, max_new_tokens, trace=True, stop_token_ids=stop_token_ids)
    return Generation(tuple(prompt_ids), tuple(_decoding_step(step) for step in steps))


def _decoding_step(step: Step) -> DecodingStep:
    """What the page shows of one step: its distribution in float64 and every attention weight, on the CPU."""
    probabilities = float64_on_the_cpu(step.logits[0]).log_softmax(dim=-1).exp()  # (V,)
    attention = step.recorded_trace.attention_weights[:, 0]  # (L, H, T, T)
    return DecodingStep(tuple(step.sequence[0].tolist()), probabilities, int(step.chosen_ids), attention.cpu())


def largest_change_of_earlier_rows(generation: Generation) -> float:
    """How far any step's attention weights moved by the last step, over the positions that step read.

    Under a causal mask this is 0 up to float rounding: a new token never changes what the positions before
    it computed, which is also why a generator may cache their keys and values instead of recomputing them."""
    final = generation.final_attention
    return max(
        float((step.attention - final[..., : len(step.read_ids), : len(step.read_ids)]).abs().max())
        for step in generation.steps
    )


# --- Teacher forcing: the whole true sequence in one pass -----------------------------------------------


@dataclass(frozen=True)
class TeacherForcedRun:
    """One forward over a true sequence, as in training: position t reads tokens 0..t, must predict t + 1."""

    input_ids: tuple[int, ...]  # the sequence without its last token (T,)
    target_ids: tuple[int, ...]  # the token after each input position (T,)
    first_scored: int  # positions before this one are not scored (the prompt cannot be predicted)
    log_probabilities: Tensor  # (T, V) float64
    attention: Tensor  # (L, H, T, T)

    @property
    def target_losses(self) -> Tensor:
        """(T,) each position's loss −log p(the token that truly comes next)."""
        targets = torch.tensor(self.target_ids)[:, None]
        return -self.log_probabilities.gather(1, targets)[:, 0]

    @property
    def target_probabilities(self) -> Tensor:
        """(T,) the probability each position gave to the token that truly comes next."""
        return (-self.target_losses).exp()

    @property
    def predicted_ids(self) -> tuple[int, ...]:
        """Each position's most probable next token."""
        return tuple(self.log_probabilities.argmax(dim=-1).tolist())

    @property
    def loss(self) -> float:
        """Mean cross-entropy −log p(true next token) over the scored positions: the training loss."""
        return self.loss_at(range(self.first_scored, len(self.input_ids)))

    def loss_at(self, positions: range) -> float:
        """Mean −log p(true next token) over the given input positions."""
        return float(self.target_losses[list(positions)].mean())


def teacher_force(model: nn.Module, sequence_ids: Sequence[int], first_scored: int = 0) -> TeacherForcedRun:
    """Run the model once over a whole true sequence, the way it was trained."""
    inputs, targets = tuple(sequence_ids[:-1]), tuple(sequence_ids[1:])
    log_probabilities, attention = _traced_forward(model, inputs)
    return TeacherForcedRun(inputs, targets, first_scored, log_probabilities, attention)


# --- Where the heads look ----------------------------------------------------------------------------


def weight_above_diagonal(weights: Tensor) -> Tensor:
    """(..., T, T) -> (..., T): how much of each query's weight lands on later positions (the future).

    Under a causal mask this is exactly 0 for every query."""
    return weights.triu(diagonal=1).sum(dim=-1)


def mean_weight_above_diagonal(weights: Tensor) -> Tensor:
    """(..., T, T) -> (...): that share averaged over the queries that have a future (all but the last)."""
    return weight_above_diagonal(weights)[..., :-1].mean(dim=-1)


def strongest_key_holds_next_token(
    attention: Tensor, sequence_ids: Sequence[int], queries: range, keys: range
) -> Tensor:
    """(L, H, T, T) -> (L, H): for each head, the share of `queries` whose largest weight falls on a
    position in `keys` that holds the very token written after the query (sequence_ids[query + 1])."""
    ids = torch.tensor(list(sequence_ids))
    strongest = attention[:, :, list(queries)].argmax(dim=-1)  # (L, H, Q) key positions
    next_ids = ids[[query + 1 for query in queries]]  # (Q,)
    in_keys = (strongest >= keys.start) & (strongest < keys.stop)
    return (in_keys & (ids[strongest] == next_ids)).double().mean(dim=-1)


def strongest_key_is_next_position(attention: Tensor, queries: range) -> Tensor:
    """(L, H, T, T) -> (L, H): for each head, the share of `queries` t whose largest weight is on key t + 1,
    the position that holds, under teacher forcing, the very token t must predict."""
    strongest = attention[:, :, list(queries)].argmax(dim=-1)  # (L, H, Q)
    return (strongest == torch.tensor([query + 1 for query in queries])).double().mean(dim=-1)


# --- The sorting task, read and written by a decoder ----------------------------------------------------


@dataclass(frozen=True)
class SortingWalkthrough:
    """One word through a sorting decoder: its own greedy answer, and teacher forcing on the true answer."""

    word: str
    generation: Generation
    teacher_forced: TeacherForcedRun
    written: str  # the model's answer, up to its first <eos>
    expected: str  # the word's letters in alphabetical order

    @property
    def correct(self) -> bool:
        return self.written == self.expected


def walk_through_sorting(model: DecoderOnlyLM, task: SortingTask, word: str) -> SortingWalkthrough:
    """Sort one word greedily (len(word) letters and <eos>), and teacher-force the true sequence.

    The word must pass `task.check`. Scoring starts at the `=` position, as in `SortingTask.batch`."""
    task.check(word)
    tokenizer = task.tokenizer
    generation = generate_greedily(model, task.prompt(word), len(word) + 1, stop_id=tokenizer.eos_id)
    teacher_forced = teacher_force(model, task.sequence(word), first_scored=len(word) + 1)
    return SortingWalkthrough(
        word, generation, teacher_forced, answer_text(tokenizer.decode(generation.generated_ids)), task.answer(word)
    )


def answer_queries(word: str, read_length: int) -> range:
    """The positions that write a letter of the answer: from `=` (position len(word) + 1) on, within the
    `read_length` positions a forward read, and not the last letter's position (it writes <eos>)."""
    return range(len(word) + 1, min(read_length, 2 * len(word) + 1))


def word_positions(word: str) -> range:
    """Where the scrambled word's letters sit in `<bos> word = ...`."""
    return range(1, len(word) + 1)


# --- A pretrained language model on the user's text ------------------------------------------------------


@dataclass(frozen=True)
class TextContinuation:
    """A causal language model read a text: its tokens, and what it expects next. Its attention is read one layer
    at a time (`text_attention`): SmolLM2's 30 layers of 9 heads at 512 tokens would hold 283 MB at once."""

    tokenized: TokenizedText
    next_token_probabilities: Tensor  # (V,) after the last token read, float64

    def candidates(self, k: int) -> tuple[Candidate, ...]:
        return top_candidates(self.next_token_probabilities, k)


def read_text(model: DecoderOnlyLM, tokenizer, text: str, max_tokens: int | None = None) -> TextContinuation:
    """Tokenize (cutting at `max_tokens`, at most the model's positions) and run the model once, untraced."""
    limit = min(max_tokens or model.config.max_positions, model.config.max_positions)
    tokenized = tokenize(tokenizer, text, max_tokens=limit)
    if not len(tokenized):
        raise ValueError("the text makes no tokens")
    device = next(model.parameters()).device
    with torch.inference_mode():
        output = model(
            torch.tensor([list(tokenized.input_ids)], device=device), last_logits_only=True, keep_hidden_states=False
        )
    return TextContinuation(tokenized, float64_on_the_cpu(output.logits[0, -1]).softmax(dim=-1))


def text_attention(model: DecoderOnlyLM, run: TextContinuation, layer: int) -> AttentionTrace:
    """One layer's attention in the model that read `run`, on its device: any head's (1, T, T) weights on demand
    (`head_weights`)."""
    return layer_attention(model, run.tokenized.input_ids, layer)
