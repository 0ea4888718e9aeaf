"""What each attention head does, summed up in a few numbers, and head maps small enough to draw.

A layer's heads all read the same tokens, yet they learn to look in very different ways: some spread
their attention evenly, some stare at the previous token, many park most of their weight on [CLS] or
[SEP] when they have nothing better to do (a "no-op" pattern first described for BERT by Clark et al.,
2019, "What Does BERT Look At?"). The statistics below turn each head's (T, S) weight matrix into one
number per property, so that all L × H heads of a model can be compared in one table.

Every statistic is first computed per query row, then averaged over the rows of one text, so the numbers
describe how a head behaved *on that text*, not a property fixed in its weights.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch import Tensor

from lessons.common.attention_sinks import SINK_THRESHOLD, sink_heads
from lessons.common.runs import EncoderRun


def row_entropy(weights: Tensor) -> Tensor:
    """(..., T, S) -> (..., T): −Σ_j p_j log p_j of each row, in nats.

    0 for a head that puts all its weight on one key; log S for one that spreads it evenly.
    xlogy takes 0 · log 0 as 0, the limit, where a plain log would give NaN.
    """
    return -torch.special.xlogy(weights, weights).sum(dim=-1)


def attention_distance(weights: Tensor) -> Tensor:
    """(..., T, S) -> (..., T): how far each query looks on average, Σ_j w_ij · |i − j| in tokens."""
    queries, keys = weights.shape[-2:]
    positions_i = torch.arange(queries, device=weights.device).unsqueeze(1)  # (T, 1)
    positions_j = torch.arange(keys, device=weights.device).unsqueeze(0)  # (1, S)
    distance = (positions_i - positions_j).abs().to(weights.dtype)  # (T, S)
    return (weights * distance).sum(dim=-1)


def share_on_keys(weights: Tensor, keys: Tensor) -> Tensor:
    """(..., T, S) and a (S,) boolean selection of keys -> (..., T): the weight each row gives them."""
    return weights[..., keys.to(weights.device)].sum(dim=-1)  # picking the few columns beats a full product


def self_share(weights: Tensor) -> Tensor:
    """(..., T, T) -> (..., T): the weight each token gives to itself, the diagonal."""
    return weights.diagonal(dim1=-2, dim2=-1)


def previous_share(weights: Tensor) -> Tensor:
    """(..., T, T) -> (..., T − 1): the weight token i gives to token i − 1, for i = 1 … T − 1.

    Token 0 has no previous token, so it has no entry (rather than a 0 that would drag the mean down).
    """
    return weights.diagonal(offset=-1, dim1=-2, dim2=-1)


# Column names and what they mean, in the order the page shows them.
STATISTICS = {
    "entropy": "entropy of each row (nats): 0 = one key only, log T = evenly spread",
    "distance": "mean attention distance (tokens): Σ_j w_ij·|i − j|",
    "cls_share": "share of attention on [CLS]",
    "sep_share": "share of attention on [SEP]",
    "self_share": "share of attention on the token itself",
    "previous_share": "share of attention on the previous token",
}


@dataclass(frozen=True)
class HeadStatistics:
    """One number per head for each statistic, every tensor (L, H), averaged over the query tokens."""

    entropy: Tensor
    distance: Tensor
    cls_share: Tensor
    sep_share: Tensor
    self_share: Tensor
    previous_share: Tensor

    def rows(self) -> list[dict[str, float | int]]:
        """One record per head, {"layer", "head", <statistic>…}, ready to become a table."""
        layers, heads = self.entropy.shape
        return [
            {"layer": layer, "head": head, **{name: float(getattr(self, name)[layer, head]) for name in STATISTICS}}
            for layer in range(layers)
            for head in range(heads)
        ]


def head_statistics(attention_weights: Tensor, cls_keys: Tensor, sep_keys: Tensor) -> HeadStatistics:
    """(L, H, T, T) weights of one text, and (T,) booleans marking its [CLS] and [SEP] tokens."""
    return HeadStatistics(
        entropy=row_entropy(attention_weights).mean(dim=-1),
        distance=attention_distance(attention_weights).mean(dim=-1),
        cls_share=share_on_keys(attention_weights, cls_keys).mean(dim=-1),
        sep_share=share_on_keys(attention_weights, sep_keys).mean(dim=-1),
        self_share=self_share(attention_weights).mean(dim=-1),
        previous_share=_mean_or_zero(previous_share(attention_weights)),
    )


def statistics_of_run(run: EncoderRun, cls_token: str | None, sep_token: str | None) -> HeadStatistics:
    """Every head's statistics on a traced run, [CLS] and [SEP] being the tokens so spelt; computed one layer at
    a time (a 512-token stack holds 19 million weights, 75 MB, and each statistic needs as much again in passing)."""
    tokens = run.tokenized.tokens
    cls_keys, sep_keys = token_marks(tokens, cls_token), token_marks(tokens, sep_token)
    return run.over_layers(lambda weights: head_statistics(weights, cls_keys, sep_keys))


@dataclass(frozen=True)
class RestingHeads:
    """How many heads of each layer rest on [CLS], on [SEP], and on either one: give it more than ε of their
    attention, averaged over the queries.

    In an encoder every query sees every key, so the importance of a token in Gu et al.'s sense (the mean
    over the queries that can see it) is that token's share, and the rule that counts a decoder's sink heads
    counts these. On a text of T ≤ 3 tokens even a head that spreads its weight evenly gives each token
    1/T > 0.3: `even_spread_counts` says so.
    """

    cls: Tensor  # (L,) heads of each layer whose [CLS] share exceeds the threshold
    sep: Tensor  # (L,) the same for [SEP]
    either: Tensor  # (L,) heads that rest on [CLS] or on [SEP] (or both)
    heads: int  # every head of the stack, L × H
    threshold: float
    even_spread_counts: bool

    def rows(self) -> list[dict[str, int]]:
        """One record per layer, {"layer", "[CLS]", "[SEP]", "either"}, ready to become a table."""
        return [
            {"layer": layer, "[CLS]": int(cls), "[SEP]": int(sep), "either": int(either)}
            for layer, (cls, sep, either) in enumerate(zip(self.cls, self.sep, self.either, strict=True))
        ]


def resting_heads(statistics: HeadStatistics, tokens: int, threshold: float = SINK_THRESHOLD) -> RestingHeads:
    """Count, layer by layer, the heads whose [CLS] or [SEP] share exceeds `threshold`, on a text of `tokens`."""
    on_cls, on_sep = sink_heads(statistics.cls_share, threshold), sink_heads(statistics.sep_share, threshold)
    return RestingHeads(
        cls=on_cls.sum(dim=-1),
        sep=on_sep.sum(dim=-1),
        either=(on_cls | on_sep).sum(dim=-1),
        heads=on_cls.numel(),
        threshold=threshold,
        even_spread_counts=1 / max(tokens, 1) > threshold,
    )


def token_marks(tokens, marked: str | None) -> Tensor:
    """(T,) booleans: True where the token is `marked` (e.g. the tokenizer's "[CLS]")."""
    return torch.tensor([token == marked for token in tokens], dtype=torch.bool)


def _mean_or_zero(values: Tensor) -> Tensor:
    """Mean over the last axis; 0 when it is empty (a one-token text has no previous tokens)."""
    if values.size(-1) == 0:
        return values.new_zeros(values.shape[:-1])
    return values.mean(dim=-1)


def statistic_range(name: str, length: int) -> tuple[float, float]:
    """The values a statistic can take on a text of `length` tokens, for a colour scale that means the
    same thing on every text: entropy up to log T, distance up to T − 1, shares up to 1."""
    if name == "entropy":
        return 0.0, math.log(max(length, 2))
    if name == "distance":
        return 0.0, float(max(length - 1, 1))
    return 0.0, 1.0
