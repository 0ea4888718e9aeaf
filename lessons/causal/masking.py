"""One attention head under different masks, with every step kept, for the causal-masking lesson.

A mask never changes how scores are computed; it only decides which of them survive. Forbidden scores are
replaced by −∞ before the softmax, and because e^−∞ = 0 those keys receive a weight of exactly zero while
the allowed keys share the whole row among themselves. The functions here apply the package's own masks
(`anatomy.masks`) to one head of a real model or to a worked 4×4 example, and keep the scores before
and after masking so that a page can show all three stages side by side.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor

from anatomy.attention import AttentionTrace, apply_mask, attention_scores, attention_weights, masked_softmax
from anatomy.devices import float64_on_the_cpu
from anatomy.masks import causal_mask, combine_masks, padding_mask
from anatomy.trace import ModelTrace
from lessons.common.runs import EncoderRun, TokenizedText


@dataclass(frozen=True)
class MaskedAttention:
    """One head's attention under one mask, all (T, S): the three stages the lesson shows."""

    mask: Tensor  # True where query t may attend to key s
    scores: Tensor  # QKᵀ / √d_head, before masking
    masked_scores: Tensor  # the same with −∞ wherever the mask forbids
    weights: Tensor  # softmax of each row of masked_scores

    @property
    def row_sums(self) -> Tensor:
        """(T,) each row's total weight: 1 for every query that may attend to anything."""
        return self.weights.sum(dim=-1)

    @property
    def row_sum_range(self) -> tuple[float, float]:
        """The smallest and the largest row sum (both 1 up to float rounding)."""
        smallest, largest = torch.aminmax(self.row_sums)
        return float(smallest), float(largest)

    @property
    def num_forbidden(self) -> int:
        """How many (query, key) pairs the mask forbids."""
        return int((~self.mask).sum())

    @property
    def largest_forbidden_weight(self) -> float:
        """The biggest weight any forbidden key received (0.0 when the mask did its job)."""
        return float(self.weights.masked_fill(self.mask, 0.0).max()) if self.weights.numel() else 0.0


@dataclass(frozen=True)
class HeadInputs:
    """The query, key and value vectors of one head for one text, each (T, d_head)."""

    query: Tensor
    key: Tensor
    value: Tensor


def mask_scores(scores: Tensor, mask: Tensor) -> MaskedAttention:
    """The mask on a ready-made score matrix: −∞ where forbidden, then a softmax per row."""
    return MaskedAttention(mask, scores, apply_mask(scores, mask), masked_softmax(scores, mask))


def head_inputs(attention: AttentionTrace, head: int) -> HeadInputs:
    """Head `head` of the first sentence in a traced attention sublayer ((B, H, T, d_head) -> (T, d_head))."""
    return HeadInputs(attention.query[0, head], attention.key[0, head], attention.value[0, head])


def attend(inputs: HeadInputs, mask: Tensor | None) -> MaskedAttention:
    """Recompute one head's attention with `mask` ((T, S), None = every key allowed).

    The weights come from the same `attention_weights` the models run; the scores are kept beside them only
    so that the page can show what the mask did to them.
    """
    query, key = inputs.query, inputs.key
    allowed = torch.ones(query.size(0), key.size(0), dtype=torch.bool, device=query.device)
    if mask is not None:
        allowed = allowed & mask  # (T, S) whatever shape the mask broadcast from
    scores = attention_scores(query, key)  # (T, S)
    return MaskedAttention(allowed, scores, apply_mask(scores, allowed), attention_weights(query, key, mask))


def causal(inputs: HeadInputs) -> MaskedAttention:
    """The head as a decoder would run it: query t sees keys 0..t only."""
    return attend(inputs, causal_mask(inputs.query.size(0), device=inputs.query.device))


def unmasked(inputs: HeadInputs) -> MaskedAttention:
    """The head as the encoder ran it: every query sees every key."""
    return attend(inputs, None)


def padded(inputs: HeadInputs, attention_mask: Tensor, also_causal: bool = False) -> MaskedAttention:
    """The head over a padded sequence, with BERT's padding mask (and optionally the causal mask too).

    `attention_mask` is the tokenizer's (S,) row of 1s (real tokens) and 0s ([PAD]).
    """
    hide_padding = padding_mask(attention_mask[None])[0, 0]  # (1, S): a [PAD] key is hidden from every query
    future = causal_mask(inputs.query.size(0), device=inputs.query.device) if also_causal else None
    return attend(inputs, combine_masks(hide_padding, future))


@dataclass(frozen=True)
class PaddedText:
    """A text followed by [PAD] tokens, as it sits in a batch beside a longer sentence, run through the
    model with the padding mask. Only each layer's Q, K and V are kept (a few megabytes at 512 tokens,
    where the full trace with its (H, T, T) matrices would take over a hundred)."""

    tokens: tuple[str, ...]
    attention_mask: Tensor  # (T + P,) 1 for real tokens, 0 for [PAD]
    query: Tensor  # (L, H, T + P, d_head)
    key: Tensor  # (L, H, T + P, d_head)
    value: Tensor  # (L, H, T + P, d_head)

    @property
    def num_real(self) -> int:
        return int(self.attention_mask.sum())

    def head(self, layer: int, head: int) -> HeadInputs:
        return HeadInputs(self.query[layer, head], self.key[layer, head], self.value[layer, head])


def room_for_padding(num_tokens: int, max_positions: int) -> int:
    """How many [PAD] tokens fit after the text before the model runs out of position embeddings."""
    return max(0, max_positions - num_tokens)


def run_padded(model, tokenizer, tokenized: TokenizedText, num_pads: int) -> PaddedText:
    """Run the model on the text plus `num_pads` [PAD] tokens with a padding mask, as a batch would.

    With the mask, the real tokens never see the padding, so their vectors (and their attention) are
    those of the unpadded run up to float rounding; only the [PAD] rows are new.
    """
    device = next(model.parameters()).device
    real = len(tokenized)
    input_ids = torch.tensor([list(tokenized.input_ids) + [tokenizer.pad_token_id] * num_pads], device=device)
    token_type_ids = torch.tensor([list(tokenized.token_type_ids) + [0] * num_pads], device=device)
    attention_mask = torch.tensor([[1] * real + [0] * num_pads], device=device)  # (1, T + P)
    with torch.inference_mode():
        output = model(input_ids, token_type_ids, attention_mask, trace=True)
    return _kept_projections(tokenized.tokens + (tokenizer.pad_token,) * num_pads, attention_mask[0], output.trace)


def unpadded(run: EncoderRun) -> PaddedText:
    """The text with no [PAD] added, from the run the page already has: no second forward pass (at 512
    tokens, where no [PAD] fits, that pass would cost half a second and a second trace's memory)."""
    mask = torch.ones(len(run.tokenized), dtype=torch.long, device=run.output.last_hidden_state.device)
    return _kept_projections(run.tokenized.tokens, mask, run.trace)


def _kept_projections(tokens: tuple[str, ...], attention_mask: Tensor, trace: ModelTrace) -> PaddedText:
    attentions = [layer.attention for layer in trace.layers]
    query = torch.stack([attention.query[0] for attention in attentions])  # (L, H, T + P, d_head)
    key = torch.stack([attention.key[0] for attention in attentions])  # (L, H, T + P, d_head)
    value = torch.stack([attention.value[0] for attention in attentions])  # (L, H, T + P, d_head)
    return PaddedText(tokens, attention_mask, query, key, value)


def largest_difference(first: Tensor, second: Tensor) -> float:
    """max |first − second|: how far two computations of the same numbers drifted apart."""
    return float((float64_on_the_cpu(first) - float64_on_the_cpu(second)).abs().max()) if first.numel() else 0.0
