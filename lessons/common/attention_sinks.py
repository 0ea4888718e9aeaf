"""Heads that rest: which of a model's heads give one token more than a set share of their attention.

Gu et al. (2024, "When Attention Sink Emerges in Language Models") call a head a sink head when its
*importance* of the first token, the weight A[i, 0] averaged over the queries, exceeds ε = 0.3, and the sink
rate is the share of heads that are. The same rule counts the heads of an encoder that rest on [CLS] or [SEP]
(Clark et al. 2019, "What Does BERT Look At?"). Both the language-model and the multi-head lessons count with
it, so the threshold and the count live here, once. Torch only.
"""

from __future__ import annotations

from torch import Tensor

SINK_THRESHOLD = 0.3  # ε of Gu et al. 2024


def sink_heads(importance: Tensor, threshold: float = SINK_THRESHOLD) -> Tensor:
    """(L, H) importances -> (L, H) booleans: True where a head gives the token more than the threshold
    (strictly: a head at exactly ε does not count)."""
    return importance > threshold


def sink_rate(importance: Tensor, threshold: float = SINK_THRESHOLD) -> float:
    """The share of heads whose importance of the token exceeds the threshold."""
    return float(sink_heads(importance, threshold).double().mean())


def sink_count(importance: Tensor, threshold: float = SINK_THRESHOLD) -> int:
    """How many heads give the token more than the threshold."""
    return int(sink_heads(importance, threshold).sum())
