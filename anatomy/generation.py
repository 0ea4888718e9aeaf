"""Writing text with a decoder-only language model: one token at a time, greedy or sampled.

Each step scores every vocabulary entry as the next token (the logits of the last position) and picks one:

* greedy: the highest score, always (deterministic; what the parity tests compare with transformers);
* sampled: divide the scores by a *temperature* (below 1 sharpens the distribution, above 1 flattens it),
  keep the `top_k` best tokens and/or the smallest set whose probabilities add up to `top_p` ("nucleus
  sampling", Holtzman et al., 2019), then draw from the softmax of what is left. The same order as
  transformers' `generate` (temperature, top-k, top-p). Draws come from the `torch.Generator` passed in, so
  a seed gives the same text every time, and no global random state is touched.

With `use_cache` (the default) the prompt is read once and each later step feeds only the newest token; its
query attends to the keys and values cached so far (`anatomy.cache`). Without it, every step runs the whole
sequence again: the same tokens, several times slower.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass

import torch
from torch import Tensor

from anatomy.models import DecoderOnlyLM


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


def next_tokens(logits: Tensor, sampling: Sampling | None, generator: torch.Generator | None = None) -> Tensor:
    """(B, V) logits of the last position -> (B, 1) the chosen next token ids (greedy when sampling is None)."""
    if sampling is None:
        return logits.argmax(dim=-1, keepdim=True)
    probabilities = filtered_scores(logits.float(), sampling).softmax(dim=-1)  # (B, V)
    return torch.multinomial(probabilities, num_samples=1, generator=generator)


@torch.no_grad()
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
    cache = model.new_cache() if use_cache else None
    sequence, step_input = input_ids, input_ids
    finished = torch.zeros(input_ids.size(0), 1, dtype=torch.bool, device=input_ids.device)
    stop_ids = torch.tensor(sorted(stop_token_ids), dtype=input_ids.dtype, device=input_ids.device)
    for _ in range(max_new_tokens):
        logits = model(step_input, cache=cache, last_logits_only=True, keep_hidden_states=False).logits[:, -1]  # (B, V)
        chosen = next_tokens(logits, sampling, generator)  # (B, 1)
        chosen = torch.where(finished, sequence[:, -1:], chosen)  # a finished sequence repeats its stop token
        sequence = torch.cat((sequence, chosen), dim=1)
        step_input = chosen if use_cache else sequence
        finished = finished | torch.isin(chosen, stop_ids)
        if bool(finished.all()):
            break
    return sequence
