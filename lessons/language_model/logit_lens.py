"""The logit lens (nostalgebraist 2020, "interpreting GPT: the logit lens"): read the model's guess at the next
token after every layer, not only after the last, by putting each layer's residual stream through the very
end of the model, the final norm and the (tied) output matrix.

How far each layer's guess is from the final one is measured by the KL divergence KL(final ‖ layer), in nats:
zero at the last layer, whose residual stream is exactly what the model's own head reads.
Torch only, a pure function of the model and the token ids.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import Tensor

from anatomy.models import DecoderOnlyLM
from lessons.common.decoder_attention import as_batch

TOP_TOKENS = 3  # kept per layer and position: enough for a table, far less than L × T × V
POSITIONS = 8  # positions read through the lens at once: each costs L + 1 products with the 49,152 rows


@dataclass(frozen=True)
class LogitLens:
    """The lens at every depth and at some positions: row 0 is the embeddings, row l the output of layer l − 1
    (L + 1 rows); column j is position `positions[j]`."""

    positions: tuple[int, ...]
    top_ids: Tensor  # (L + 1, P, k) the most probable next tokens, best first
    top_probabilities: Tensor  # (L + 1, P, k)
    divergence: Tensor  # (L + 1, P) KL(final ‖ this depth) in nats


def output_matrix(model: DecoderOnlyLM) -> Tensor:
    """(V, D) the rows that score every vocabulary token: the embedding table itself when tied (SmolLM2)."""
    return model.embeddings.token.weight if model.lm_head is None else model.lm_head.weight


@torch.no_grad()
def logit_lens(
    model: DecoderOnlyLM, ids: tuple[int, ...], positions: range | None = None, k: int = TOP_TOKENS
) -> LogitLens:
    """The lens at `positions` (the last POSITIONS by default). Scoring every position at every depth would
    cost (L + 1) × T × 49,152 dot products: at 512 tokens, most of a minute on two CPU cores."""
    if positions is None:
        positions = range(max(0, len(ids) - POSITIONS), len(ids))
    read = list(positions)
    # Only the last position's logits from the model itself: the final distribution at the positions read is the
    # lens at the last depth, the very computation of the model's head (tests/lessons/language_model/
    # test_logit_lens.py holds them equal).
    states = model(as_batch(ids, model), last_logits_only=True).hidden_states
    lenses = [read_as_the_head_does(model, state[0, read]) for state in states]  # (P, V) each
    final = lenses[-1]
    top_ids, top_probabilities, divergence = [], [], []
    for lens in lenses:
        best = lens.topk(k, dim=-1)
        top_ids.append(best.indices.cpu())
        top_probabilities.append(best.values.exp().double().cpu())
        divergence.append((final.exp() * (final - lens)).sum(dim=-1).double().cpu())
    return LogitLens(tuple(read), torch.stack(top_ids), torch.stack(top_probabilities), torch.stack(divergence))


def read_as_the_head_does(model: DecoderOnlyLM, state: Tensor) -> Tensor:
    """(P, D) residual stream -> (P, V) log-probabilities of the next token: the final norm, then the output
    matrix, as the model's own head reads its last layer."""
    return F.log_softmax(F.linear(model.final_norm(state), output_matrix(model)).float(), dim=-1)


def settled_depth(lens: LogitLens, column: int) -> int:
    """The first depth from which the lens's best token at `column` is the final one and stays so."""
    best = lens.top_ids[:, column, 0]
    depth = len(best) - 1
    while depth > 0 and best[depth - 1] == best[-1]:
        depth -= 1
    return depth
