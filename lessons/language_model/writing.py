"""Writing one token at a time, every step kept: the token taken, its probability, the ones passed over.

The writing itself is `anatomy.generation.generation_steps`, the loop `anatomy.generation.generate` runs too,
with the same choice and the same generator, so the tokens are the ones `generate` writes (a test holds them
equal). What this adds is the record of each step, for the page to show: `generate` keeps only the tokens.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass

import torch

from anatomy.generation import Sampling, choosing, filtered_scores, generation_steps
from anatomy.models import DecoderOnlyLM
from lessons.common.decoder_attention import as_batch

MAX_NEW_TOKENS = 40  # a few seconds on two CPU cores, with the KV cache
SHOWN_ALTERNATIVES = 5


@dataclass(frozen=True)
class Step:
    """One token written: the distribution it was drawn from, at a glance."""

    token_id: int
    probability: float  # of the token taken, in the distribution it was drawn from (after temperature, top-k, top-p)
    model_probability: float  # of the same token in the model's own softmax (temperature 1, nothing cut)
    candidates: tuple[int, ...]  # the best tokens of that distribution, best first (the one taken among them or not)
    candidate_probabilities: tuple[float, ...]
    kept: int  # how many tokens had a chance at all (the vocabulary, or what top-k and top-p left)


def write(
    model: DecoderOnlyLM,
    prompt_ids: tuple[int, ...],
    max_new_tokens: int,
    sampling: Sampling | None = None,
    seed: int = 0,
    stop_token_ids: Collection[int] = (),
) -> tuple[Step, ...]:
    """Up to max_new_tokens steps after the prompt, greedy unless `sampling` is given (drawn with `seed`).

    The prompt is read once; each later step feeds only the newest token, whose query reads the keys and
    values of every earlier token from the cache. Stops after writing a token of `stop_token_ids`."""
    prompt = as_batch(prompt_ids, model)
    generator = None if sampling is None else torch.Generator(device=prompt.device).manual_seed(seed)
    steps = generation_steps(
        model,
        prompt,
        max_new_tokens,
        choose=choosing(sampling, generator),
        cache=model.new_cache(),
        stop_token_ids=stop_token_ids,
    )
    return tuple(_record(step.logits.float()[0], int(step.chosen_ids), sampling) for step in steps)


def _record(logits: torch.Tensor, token_id: int, sampling: Sampling | None) -> Step:
    """(V,) logits and the token taken -> the Step the page shows."""
    model_probabilities = logits.softmax(dim=-1)  # (V,)
    drawn_from = model_probabilities if sampling is None else filtered_scores(logits[None], sampling)[0].softmax(-1)
    best = drawn_from.topk(min(SHOWN_ALTERNATIVES, int((drawn_from > 0).sum())))  # no token that had no chance
    return Step(
        token_id=token_id,
        probability=float(drawn_from[token_id]),
        model_probability=float(model_probabilities[token_id]),
        candidates=tuple(best.indices.tolist()),
        candidate_probabilities=tuple(best.values.double().tolist()),
        kept=int((drawn_from > 0).sum()),
    )


def written_ids(steps: tuple[Step, ...]) -> list[int]:
    return [step.token_id for step in steps]


def end_of_turn(steps: tuple[Step, ...], stop_token_ids: Collection[int]) -> int | None:
    """The step at which the model first wrote a stop token (ending its turn), or None if it never did."""
    return next((index for index, step in enumerate(steps) if step.token_id in stop_token_ids), None)
