"""What SmolLM2's heads do, measured the way the papers measure it, on every layer at once.

* **Attention sinks** (Gu et al. 2024, "When Attention Sink Emerges in Language Models"): the importance of
  position k to a head is the mean over the queries i ≥ k of A[i, k]; a head is a sink head when the first
  token's importance exceeds ε = 0.3, and the sink rate is the share of (query) heads that are.
* **Induction heads** (Olsson et al. 2022, "In-context Learning and Induction Heads"): on random tokens
  repeated twice, a head that reads, from each token of the second copy, the token that followed the same
  token in the first copy. Its score is the mean of the attention map's diagonal at offset 1 − L (L the
  length of one copy), as TransformerLens computes it; previous-token heads (offset −1) and duplicate-token
  heads (offset −L, the earlier copy of the token itself) are scored on the same diagonals.
* Two experiments, each a change passed with one call (`AttentionEdit`), never set on the shared model:
  remove one layer's sink, or switch the best induction heads off, and compare the losses.

Torch only, pure functions of the model and the token ids.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import Tensor

from anatomy.attention import AttentionEdit
from anatomy.models import DecoderOnlyLM
from lessons.common.decoder_attention import as_batch, each_layer_attention, head_maps

COPY_LENGTH = 50  # tokens in each copy of the induction test (TransformerLens's tutorial repeats 50)
RANDOM_TOKENS = 128  # random tokens the sink rate is measured on, beside the learner's text
SEED = 0  # random tokens are drawn with this seed, so that every page shows the same numbers

HeadMeasure = Callable[[Tensor], Tensor]  # (..., T, T) maps -> (...) one number per map


# --- Scores of one head's map -------------------------------------------------------------------------------


def importance(weights: Tensor, position: int = 0) -> Tensor:
    """(..., T, T) -> (...): the mean over queries i ≥ position of A[i, position], the weight a head gives that
    position on average over every query that can see it (Gu et al. 2024)."""
    return weights[..., position:, position].mean(dim=-1)


def even_importance(num_tokens: int) -> float:
    """The first token's importance to a head whose every query spreads its weight evenly over the tokens it
    sees: query i gives it 1/(i + 1), so (1 + 1/2 + … + 1/T) / T. Above ε up to 9 tokens: on a short text even a
    head that reads everything alike counts as a sink head."""
    return sum(1 / (query + 1) for query in range(num_tokens)) / num_tokens


def diagonal_score(weights: Tensor, offset: int) -> Tensor:
    """(..., T, T) -> (...): the mean weight from each query to the key `offset` places away (key − query)."""
    return weights.diagonal(offset, dim1=-2, dim2=-1).mean(dim=-1)


def induction_score(weights: Tensor, copy_length: int) -> Tensor:
    """From token i of the second copy to the token after its first occurrence, i + 1 − L."""
    return diagonal_score(weights, 1 - copy_length)


def previous_token_score(weights: Tensor) -> Tensor:
    return diagonal_score(weights, -1)


def duplicate_token_score(weights: Tensor, copy_length: int) -> Tensor:
    """From token i of the second copy to the same token in the first, i − L."""
    return diagonal_score(weights, -copy_length)


def scan(model: DecoderOnlyLM, ids: tuple[int, ...], measures: Mapping[str, HeadMeasure]) -> dict[str, Tensor]:
    """Each measure on every head of every layer: name -> (L, H), from the forward's own weights. The maps stay
    on the model's device and a long text's are derived one head at a time (`head_maps`); only scores leave."""
    layers = [
        [{name: measure(weights).double().cpu() for name, measure in measures.items()} for weights in head_maps(layer)]
        for layer in each_layer_attention(model, ids)
    ]
    return {name: torch.stack([torch.stack([head[name] for head in layer]) for layer in layers]) for name in measures}


def ranked(scores: Tensor, k: int) -> list[tuple[int, int, float]]:
    """The k best heads of an (L, H) map, best first, as (layer, head, score)."""
    best = scores.flatten().topk(k)
    num_heads = scores.size(1)
    return [
        (index // num_heads, index % num_heads, float(value))
        for index, value in zip(best.indices.tolist(), best.values)
    ]


# --- Random tokens ------------------------------------------------------------------------------------------


def random_token_ids(count: int, vocabulary: int, avoid: Iterable[int] = (), seed: int = SEED) -> tuple[int, ...]:
    """`count` token ids drawn uniformly (with this seed) from the vocabulary, none of them in `avoid` (the
    special tokens: markers of a chat, not text)."""
    avoided = set(avoid)
    allowed = torch.tensor([index for index in range(vocabulary) if index not in avoided])
    drawn = torch.randint(0, len(allowed), (count,), generator=torch.Generator().manual_seed(seed))
    return tuple(allowed[drawn].tolist())


# --- Losses, and the experiments ------------------------------------------------------------------------------


@torch.no_grad()
def token_losses(
    model: DecoderOnlyLM, ids: tuple[int, ...], attention_edits: Mapping[int, AttentionEdit] | None = None
) -> Tensor:
    """(T − 1,) −log p(token t | tokens before it) for t = 1 … T − 1, in nats: how surprised the model is by
    each token it could have predicted."""
    logits = model(as_batch(ids, model), keep_hidden_states=False, attention_edits=attention_edits).logits[0]
    return F.cross_entropy(logits[:-1].float(), as_batch(ids, model)[0, 1:], reduction="none").double().cpu()


def without_first_token(weights: Tensor) -> Tensor:
    """(..., T, T) the weights with the first token taken out of every row but the first (which has nothing else
    to read), each row renormalised to sum to 1: the layer as it would attend with no sink."""
    kept = weights.clone()
    kept[..., 1:, 0] = 0.0
    # A row whose every other weight underflowed to 0 reads nothing rather than dividing 0 by 0.
    return kept / kept.sum(dim=-1, keepdim=True).clamp_min(torch.finfo(kept.dtype).tiny)


@dataclass(frozen=True)
class Prediction:
    token_id: int
    probability: float


@dataclass(frozen=True)
class SinkRemoval:
    """The learner's text read as the model reads it, and again with one layer's sink removed."""

    layer: int
    loss_before: float  # mean nats per token over the text
    loss_after: float
    next_before: Prediction  # the most probable token after the text
    next_after: Prediction


@torch.no_grad()
def remove_sink(model: DecoderOnlyLM, ids: tuple[int, ...], layer: int) -> SinkRemoval:
    edits = {layer: AttentionEdit(reweight=without_first_token)}
    before, after = (_read(model, ids, edited) for edited in (None, edits))
    return SinkRemoval(layer, before[0], after[0], before[1], after[1])


def _read(model: DecoderOnlyLM, ids: tuple[int, ...], edits) -> tuple[float, Prediction]:
    logits = model(as_batch(ids, model), keep_hidden_states=False, attention_edits=edits).logits[0].float()  # (T, V)
    loss = F.cross_entropy(logits[:-1], as_batch(ids, model)[0, 1:]) if len(ids) > 1 else torch.tensor(float("nan"))
    best = logits[-1].softmax(dim=-1).max(dim=-1)
    return float(loss), Prediction(int(best.indices), float(best.values))


def heads_off(heads: Iterable[tuple[int, int]]) -> dict[int, AttentionEdit]:
    """(layer, head) pairs as the edits that switch them off, layer by layer."""
    by_layer: dict[int, list[int]] = {}
    for layer, head in heads:
        by_layer.setdefault(layer, []).append(head)
    return {layer: AttentionEdit(heads_off=tuple(sorted(found))) for layer, found in by_layer.items()}


@dataclass(frozen=True)
class CopyLosses:
    """Mean nats per token on each copy, each from its second token on (the first token of a copy follows
    nothing the model could have learned from)."""

    first: float
    second: float


def copy_losses(losses: Tensor, copy_length: int) -> CopyLosses:
    """`token_losses` of a sequence that is one copy repeated, split into the two copies: index t − 1 holds
    token t's loss, so the first copy's tokens 1 … L − 1 are [0, L − 1) and the second's L + 1 … 2L − 1 are
    [L, 2L − 1)."""
    return CopyLosses(float(losses[: copy_length - 1].mean()), float(losses[copy_length : 2 * copy_length - 1].mean()))


@dataclass(frozen=True)
class InductionTest:
    """Random tokens repeated twice, every head scored, and the best induction heads switched off."""

    ids: tuple[int, ...]  # the copy, then the same copy again
    copy_length: int
    induction: Tensor  # (L, H)
    previous_token: Tensor  # (L, H)
    duplicate_token: Tensor  # (L, H)
    losses: CopyLosses
    switched_off: tuple[tuple[int, int], ...]  # the best induction heads, best first
    losses_without_them: CopyLosses


def induction_test(
    model: DecoderOnlyLM, avoid: Iterable[int] = (), copy_length: int = COPY_LENGTH, k: int = 5, seed: int = SEED
) -> InductionTest:
    copy = random_token_ids(copy_length, model.config.vocab_size, avoid, seed)
    ids = copy + copy
    scores = scan(
        model,
        ids,
        {
            "induction": lambda weights: induction_score(weights, copy_length),
            "previous": previous_token_score,
            "duplicate": lambda weights: duplicate_token_score(weights, copy_length),
        },
    )
    best = tuple((layer, head) for layer, head, _ in ranked(scores["induction"], k))
    return InductionTest(
        ids=ids,
        copy_length=copy_length,
        induction=scores["induction"],
        previous_token=scores["previous"],
        duplicate_token=scores["duplicate"],
        losses=copy_losses(token_losses(model, ids), copy_length),
        switched_off=best,
        losses_without_them=copy_losses(token_losses(model, ids, heads_off(best)), copy_length),
    )


def first_token_importance(model: DecoderOnlyLM, ids: tuple[int, ...]) -> Tensor:
    """(L, H) every head's importance of the first token on these ids."""
    return scan(model, ids, {"sink": importance})["sink"]
