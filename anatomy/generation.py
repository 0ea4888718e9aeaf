"""Writing text with a transformer: one token at a time, greedy or sampled, in one loop.

Each step scores every vocabulary entry as the next token (the logits of the last position) and picks one:

* greedy: the highest score, always (deterministic; what the parity tests compare with transformers);
* sampled: divide the scores by a *temperature* (below 1 sharpens the distribution, above 1 flattens it),
  keep the `top_k` best tokens and/or the smallest set whose probabilities add up to `top_p` ("nucleus
  sampling", Holtzman et al., 2019), then draw from the softmax of what is left. The same order as
  transformers' `generate` (temperature, top-k, top-p). Draws come from the `torch.Generator` passed in, so
  a seed gives the same text every time, and no global random state is touched.

`generation_steps` is the loop itself, and the only one: it yields a `Step` for every token written (the
scores, the token chosen, the forward's trace if asked for), and each caller keeps what it wants to show.
`seq2seq_generation_steps` runs the same loop in the decoder of an encoder-decoder model, which reads the
encoder's output at every step. `generate` keeps only the tokens.

With a KV cache (`anatomy.cache`, created and owned by the caller) the prompt is read once and each later
step feeds only the newest token; its query attends to the keys and values cached so far. Without one, every
step runs the whole sequence again: the same tokens, several times slower.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterator
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING

import torch
from torch import Tensor

from anatomy.cache import KVCache
from anatomy.masks import padding_mask
from anatomy.trace import ModelTrace

if TYPE_CHECKING:  # only for the annotations: models.py and seq2seq.py import this module
    from anatomy.models import DecoderOnlyLM
    from anatomy.seq2seq import EncoderDecoder


@dataclass(frozen=True)
class Sampling:
    """How the next token is drawn from the scores; see the module's docstring."""

    temperature: float = 1.0
    top_k: int | None = None  # keep only the k best tokens
    top_p: float | None = None  # keep the fewest best tokens whose probabilities reach p

    def __post_init__(self) -> None:
        if self.temperature <= 0:
            raise ValueError("temperature must be positive (use greedy decoding for temperature 0)")
        if self.top_k is not None and self.top_k < 1:
            raise ValueError("top_k must be at least 1")
        if self.top_p is not None and not 0 < self.top_p <= 1:
            raise ValueError("top_p must lie in (0, 1]")


def filtered_scores(logits: Tensor, sampling: Sampling) -> Tensor:
    """(B, V) next-token logits -> (B, V) scores to sample from: tempered, with −∞ for every excluded token."""
    scores = logits / sampling.temperature
    if sampling.top_k is not None and sampling.top_k < scores.size(-1):
        kth_best = scores.topk(sampling.top_k, dim=-1).values[:, -1:]  # (B, 1)
        scores = scores.masked_fill(scores < kth_best, float("-inf"))
    if sampling.top_p is not None and sampling.top_p < 1:
        ascending, order = scores.sort(dim=-1)  # (B, V) worst first
        cumulative = ascending.softmax(dim=-1).cumsum(dim=-1)  # probability of this token and all worse ones
        excluded = cumulative <= 1 - sampling.top_p  # the worst tokens, together worth at most 1 − p
        excluded[:, -1] = False  # the best token always stays
        scores = scores.masked_fill(excluded.scatter(-1, order, excluded), float("-inf"))
    return scores


def greedy(logits: Tensor) -> Tensor:
    """(B, V) logits of the last position -> (B, 1) the id of the highest-scoring token."""
    return logits.argmax(dim=-1, keepdim=True)


def next_tokens(logits: Tensor, sampling: Sampling | None, generator: torch.Generator | None = None) -> Tensor:
    """(B, V) logits of the last position -> (B, 1) the chosen next token ids (greedy when sampling is None)."""
    if sampling is None:
        return greedy(logits)
    probabilities = filtered_scores(logits.float(), sampling).softmax(dim=-1)  # (B, V)
    return torch.multinomial(probabilities, num_samples=1, generator=generator)


Choose = Callable[[Tensor], Tensor]  # (B, V) logits of the last position -> (B, 1) the token ids to write


def choosing(sampling: Sampling | None, generator: torch.Generator | None = None) -> Choose:
    """`next_tokens` with its sampling and generator set: greedy when sampling is None, else drawn from `generator`."""
    return partial(next_tokens, sampling=sampling, generator=generator)


@dataclass(frozen=True)
class Step:
    """One token written: what the model had read, the scores it gave, and the token chosen."""

    sequence: Tensor  # (B, T) the prompt and every token written before this step
    logits: Tensor  # (B, V) the next-token scores at the last position of `sequence`
    chosen_ids: Tensor  # (B, 1) the token written after `sequence` (a finished sequence repeats its stop token)
    trace: ModelTrace | None  # every intermediate of this step's forward (of the decoder), when asked for

    @property
    def recorded_trace(self) -> ModelTrace:
        """The trace, for code that needs one: raises unless the steps ran with trace=True."""
        if self.trace is None:
            raise ValueError("intermediates are recorded only when the steps ran with trace=True")
        return self.trace


Read = Callable[[Tensor], tuple[Tensor, ModelTrace | None]]  # ids -> (B, V) next-token logits, the trace


def generation_loop(
    read: Read,
    prompt_ids: Tensor,
    max_new_tokens: int,
    choose: Choose,
    stop_token_ids: Collection[int],
    reads_only_new_tokens: bool,
) -> Iterator[Step]:
    """The loop both entry points share: read, take the scores of the last position, choose, append; until
    every sequence has written a stop token, or `max_new_tokens` were written."""
    sequence, step_input = prompt_ids, prompt_ids
    finished = torch.zeros(prompt_ids.size(0), 1, dtype=torch.bool, device=prompt_ids.device)  # (B, 1)
    stop_ids = torch.tensor(sorted(stop_token_ids), dtype=prompt_ids.dtype, device=prompt_ids.device)
    for _ in range(max_new_tokens):
        logits, trace = read(step_input)  # (B, V) the scores at the last position
        chosen = choose(logits)  # (B, 1), drawn for finished sequences too: a seed always draws the same
        chosen = torch.where(finished, sequence[:, -1:], chosen)  # a finished sequence repeats its stop token
        yield Step(sequence, logits, chosen, trace)
        sequence = torch.cat((sequence, chosen), dim=1)
        step_input = chosen if reads_only_new_tokens else sequence
        finished = finished | torch.isin(chosen, stop_ids)
        if bool(finished.all()):
            return


@torch.no_grad()
def generation_steps(
    model: DecoderOnlyLM,
    prompt_ids: Tensor,
    max_new_tokens: int,
    *,
    choose: Choose = greedy,
    cache: KVCache | None = None,
    trace: bool = False,
    stop_token_ids: Collection[int] = (),
) -> Iterator[Step]:
    """Write up to `max_new_tokens` tokens after the (B, T) prompts, yielding each `Step` as it is taken.

    With a `cache` (empty: `model.new_cache()`) the prompt is read once, then only each newest token.
    Without one, each step is the plain forward over the whole sequence, every position scored, so that its
    logits are those of `model(sequence, trace=trace)` bit for bit (the causal lesson shows them beside
    teacher forcing); a sequence longer than the model's positions is cut to its last `max_positions` tokens.
    Stops early once every sequence has written one of `stop_token_ids`. The prompts of a batch must have
    equal lengths (there is no padding on the left).
    """

    def read(ids: Tensor) -> tuple[Tensor, ModelTrace | None]:
        if cache is not None:  # the cache holds what came before; only the last position needs scoring
            output = model(ids, cache=cache, trace=trace, last_logits_only=True, keep_hidden_states=False)
        else:
            output = model(ids[:, -model.config.max_positions :], trace=trace, keep_hidden_states=False)
        return output.logits[:, -1], output.trace

    yield from generation_loop(
        read, prompt_ids, max_new_tokens, choose, stop_token_ids, reads_only_new_tokens=cache is not None
    )


@torch.no_grad()
def seq2seq_generation_steps(
    model: EncoderDecoder,
    memory: Tensor,
    start_ids: Tensor,
    max_new_tokens: int,
    *,
    source_mask: Tensor | None = None,
    choose: Choose = greedy,
    trace: bool = False,
    stop_token_ids: Collection[int] = (),
) -> Iterator[Step]:
    """The same loop in the decoder of an encoder-decoder: (B, S, D) encoder output `memory` (read once, by
    `model.encode`), (B, T) target so far `start_ids` (usually <bos> alone) -> a `Step` per target token.

    A separate entry point because the decoder reads two inputs (the target and the memory, whose padding
    `source_mask` hides) and has no cache: every step runs it over the whole target written so far.
    """
    memory_mask = None if source_mask is None else padding_mask(source_mask)  # (B, 1, 1, S)

    def read(target_ids: Tensor) -> tuple[Tensor, ModelTrace | None]:
        output = model.decoder(target_ids, memory, memory_mask, trace=trace)
        return output.logits[:, -1], output.trace

    yield from generation_loop(read, start_ids, max_new_tokens, choose, stop_token_ids, reads_only_new_tokens=False)


def generate(
    model: DecoderOnlyLM,
    input_ids: Tensor,
    max_new_tokens: int,
    *,
    sampling: Sampling | None = None,
    generator: torch.Generator | None = None,
    stop_token_ids: Collection[int] = (),
    use_cache: bool = True,
) -> Tensor:
    """(B, T) prompt ids -> (B, T + n) with n ≤ max_new_tokens new tokens, greedy unless `sampling` is given.

    Stops early once every sequence of the batch has produced one of `stop_token_ids` (e.g. `<|im_end|>`);
    a sequence that stopped first is padded with its stop token. The prompts of a batch must have equal
    lengths (there is no padding on the left).
    """
    steps = generation_steps(
        model,
        input_ids,
        max_new_tokens,
        choose=choosing(sampling, generator),
        cache=model.new_cache() if use_cache else None,
        stop_token_ids=stop_token_ids,
    )
    return torch.cat([input_ids, *(step.chosen_ids for step in steps)], dim=1)
