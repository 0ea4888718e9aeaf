"""One attention head's steps, whatever the queries, keys and values came from.

The attention lesson walks through Q, K, V → QKᵀ → ÷√dₖ → softmax → ·V on three kinds of input: the small
worked examples (see `lessons.common.examples.single_head_steps`), a text's embeddings used directly as
Q, K and V, and one head of a traced model. All three end up as the same `SingleHeadSteps`, so one page and one
set of figures can show any of them. This module also takes a single score apart, feature by feature
(the "neuron view"), and chooses the window of tokens a long text is shown through.
"""

from __future__ import annotations

from dataclasses import dataclass

from torch import Tensor

from anatomy.attention import AttentionTrace, apply_mask, attention_scores, scaled_dot_product_attention
from anatomy.devices import float64_on_the_cpu
from lessons.common.examples import SingleHeadSteps


def embedding_self_attention(tokens, embeddings: Tensor) -> SingleHeadSteps:
    """Attention with no learned projections: Q = K = V = the embeddings (T, D) themselves.

    This is the simplest attention there is: a token's score with another is the dot product of their
    embeddings, divided by √D. Different tokens' embeddings point in nearly unrelated directions, so a token
    usually looks mostly at itself.
    """
    inputs = float64_on_the_cpu(embeddings)  # (T, D)
    output, weights = scaled_dot_product_attention(inputs, inputs, inputs)
    raw_scores = inputs @ inputs.T  # (T, T)
    scaled_scores = attention_scores(inputs, inputs)  # (T, T)
    return SingleHeadSteps(
        tuple(tokens), inputs, inputs, inputs, inputs, raw_scores, scaled_scores, scaled_scores, weights, output
    )


def traced_head_steps(tokens, attention: AttentionTrace, head: int, layer_input: Tensor) -> SingleHeadSteps:
    """Head `head` of one traced attention sublayer (batch item 0), every step in float64 on the CPU.

    The weights and outputs are the ones the model computed; the scores are recomputed from its recorded
    queries and keys by the functions the model ran, one head only (in float64, so that the neuron view's sum
    of products matches the score to the last printed digit).
    """
    query, key, value = (
        float64_on_the_cpu(part[0, head]) for part in (attention.query, attention.key, attention.value)
    )  # (T, d_head), (S, d_head), (S, d_head)
    raw_scores = query @ key.T  # (T, S)
    scaled_scores = attention_scores(query, key)  # (T, S)
    allowed = None
    if attention.mask is not None:
        allowed = attention.mask.expand(*attention.query.shape[:-1], attention.key.size(-2))[0, head].cpu()  # (T, S)
    masked_scores = apply_mask(scaled_scores, allowed)
    return SingleHeadSteps(
        tuple(tokens),
        float64_on_the_cpu(layer_input[0]),  # (T, D) what the head projected
        query,
        key,
        value,
        raw_scores,
        scaled_scores,
        masked_scores,
        float64_on_the_cpu(attention.weights[0, head]),  # (T, S)
        float64_on_the_cpu(attention.head_outputs[0, head]),  # (T, d_head)
    )


@dataclass(frozen=True)
class ScoreAnatomy:
    """One entry of QKᵀ taken apart: query i and key j multiplied feature by feature."""

    query_index: int
    key_index: int
    query: Tensor  # (d,) row i of Q
    key: Tensor  # (d,) row j of K
    products: Tensor  # (d,) query * key, feature by feature
    sum_of_products: float  # Σ products: the dot product q·k
    raw_score: float  # QKᵀ[i, j] as the matrix holds it (equal to the sum, up to rounding)
    scaled_score: float  # raw_score / √dₖ
    weight: float  # after the softmax over row i


def score_anatomy(steps: SingleHeadSteps, query_index: int, key_index: int) -> ScoreAnatomy:
    """Why QKᵀ[i, j] is what it is: the feature-by-feature products of query i with key j."""
    query, key = steps.query[query_index], steps.key[key_index]
    products = query * key
    return ScoreAnatomy(
        query_index,
        key_index,
        query,
        key,
        products,
        sum_of_products=float(products.sum()),
        raw_score=float(steps.raw_scores[query_index, key_index]),
        scaled_score=float(steps.scaled_scores[query_index, key_index]),
        weight=float(steps.weights[query_index, key_index]),
    )


def output_contributions(steps: SingleHeadSteps, query_index: int) -> Tensor:
    """(S, d) what each token adds to query i's output: weight_ij · v_j. The rows sum to output row i."""
    return steps.weights[query_index, :, None] * steps.value


@dataclass(frozen=True)
class HeadLesson:
    """The steps of one head, ready to show: the numbers and how to name their rows and columns."""

    steps: SingleHeadSteps
    labels: tuple[str, ...]  # one unique name per token, "3: flies" (`lessons.common.labels.token_labels`)
    features: tuple[str, ...]  # names of the columns of Q, K and V
    projection: str  # LaTeX: how Q, K and V were made
    shared_qkv: bool  # Q = K = V (no projections): show the matrix once
    file_stem: str  # for CSV file names
    about: str  # markdown naming where the steps come from, after "In": "layer 2, head 5 of the model"

    @property
    def head_width(self) -> int:
        return self.steps.query.size(-1)


def feature_labels(width: int) -> tuple[str, ...]:
    """'0', '1', ...: features are counted from 0 too."""
    return tuple(str(index) for index in range(width))
