"""Scaled dot-product attention, one head at a time and all heads at once.

Attention lets every token build its new vector as a weighted average of the other tokens' value vectors.
The weights come from comparing the token's *query* with every token's *key*: a dot product, divided by
√d_head so that wide vectors do not push the softmax into a corner, then a softmax per row
("Attention Is All You Need", §3.2.1). A mask M adds −∞ to the scores a query may not see:

    weights = softmax(QKᵀ / √d_k + M),    output = weights · V

That arithmetic is written once, in `attention_scores`, `apply_mask`, `masked_softmax` and `attention_weights`.
The models, their traces (`AttentionTrace`) and the lessons all call these, so the weights a page shows are the
weights the model used, bit for bit.

This file holds the mechanism around them twice, on purpose:

* `AttentionHead` and `MultiHeadAttentionLoop` are the form textbooks draw (Natural Language Processing with
  Transformers, ch. 3, builds it this way): each head owns its three projections, the heads run one after
  another in a loop, and their outputs are concatenated. Read these first. No model runs them.
* `MultiHeadAttention` computes all heads with one matrix multiply per projection and a reshape, as torch's
  `nn.MultiheadAttention` and every real model do. It is what the models here run. Both forms give the same
  numbers from the same weights (tests/anatomy/test_attention.py, `test_loop_of_heads_equals_batched_attention`).

`MultiHeadAttention` also carries the two switches of modern LLMs (Llama, SmolLM2): grouped-query attention,
where groups of query heads share one key head and one value head, and rotary positions, which turn every
query and key by an angle set by its position (see `anatomy.rotary`). With neither, it is GPT-2's and BERT's.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal, overload

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from anatomy.cache import LayerCache
from anatomy.masks import causal_mask, combine_masks
from anatomy.rotary import Rotation


def attention_scores(query: Tensor, key: Tensor) -> Tensor:
    """QKᵀ / √d_k: (..., T, S) how well every query matches every key, a tensor made for the call.

    query (..., T, d_k), key (..., S, d_k). Dividing by √d_k keeps the scores' variance near 1 whatever the
    head's width, so that wide heads do not push the softmax into a corner (§3.2.1).
    """
    scores = query @ key.transpose(-2, -1)  # (..., T, S) every query against every key
    return scores.div_(math.sqrt(query.size(-1)))  # in place: the product is ours, so no second (T, S) buffer


def apply_mask(scores: Tensor, mask: Tensor | None, *, in_place: bool = False) -> Tensor:
    """scores + M: the scores where the mask allows attending, −∞ where it forbids (mask True = allowed,
    broadcastable to the scores). e^−∞ = 0, so after the softmax a forbidden key gets exactly no weight.

    A new tensor unless in_place, which writes the −∞ into `scores` themselves: only for scores made for the call.
    """
    if mask is None:
        return scores
    if in_place:
        return scores.masked_fill_(~mask, float("-inf"))
    return scores.masked_fill(~mask, float("-inf"))


def masked_softmax(scores: Tensor, mask: Tensor | None = None, *, in_place: bool = False) -> Tensor:
    """softmax(scores + M), row by row: (..., T, S) weights, each row summing to 1.

    A row whose every key is masked would be a softmax over nothing (all −∞, hence NaN); such a row gets zero
    weights instead. `in_place` as in `apply_mask`.
    """
    weights = torch.softmax(apply_mask(scores, mask, in_place=in_place), dim=-1)  # each row now sums to 1
    if mask is not None:
        no_key_allowed = ~mask.any(dim=-1, keepdim=True)  # (..., T, 1)
        if no_key_allowed.any():
            weights = weights.masked_fill(no_key_allowed, 0.0)
    return weights


def attention_weights(query: Tensor, key: Tensor, mask: Tensor | None = None) -> Tensor:
    """softmax(QKᵀ / √d_k + M): (..., T, S) how much each query takes from each key.

    The one place attention weights are computed: the traced forward and the lessons both call it, which is why
    a trace can promise the forward's weights bit for bit. (The untraced forward's fused kernel, in
    `fused_attention`, computes no weights that anyone sees.)
    """
    return masked_softmax(attention_scores(query, key), mask, in_place=True)  # the scores are made here: no copy


def shares_heads(query: Tensor, key: Tensor) -> bool:
    """Whether (B, H, T, d_k) queries meet (B, H_kv, S, d_k) keys with fewer heads (grouped-query attention)."""
    return query.dim() == key.dim() == 4 and key.size(1) < query.size(1)


def per_query_head(shared: Tensor, num_heads: int) -> Tensor:
    """(B, H_kv, S, d_head) keys or values -> (B, H, S, d_head), one block per query head: with grouped-query
    attention query head h reads key/value head h // (H / H_kv). A copy only when heads are shared."""
    group = num_heads // shared.size(1)
    return shared if group == 1 else shared.repeat_interleave(group, dim=1)


def with_causal_mask(mask: Tensor | None, num_queries: int, num_keys: int, device: torch.device) -> Tensor | None:
    """`mask` and the causal mask together: the T queries are the last T of the S key positions (the ones before
    are a cache's), and each may read its own position and those before it."""
    return combine_masks(causal_mask(num_queries, device, num_keys - num_queries), mask)


# Two signatures for the type checker: with need_weights left at True, the weights are never None.
@overload
def scaled_dot_product_attention(
    query: Tensor,
    key: Tensor,
    value: Tensor,
    mask: Tensor | None = None,
    need_weights: Literal[True] = True,
    *,
    causal: bool = False,
) -> tuple[Tensor, Tensor]: ...
@overload
def scaled_dot_product_attention(
    query: Tensor, key: Tensor, value: Tensor, mask: Tensor | None = None, *, need_weights: bool, causal: bool = False
) -> tuple[Tensor, Tensor | None]: ...
def scaled_dot_product_attention(
    query: Tensor,
    key: Tensor,
    value: Tensor,
    mask: Tensor | None = None,
    need_weights: bool = True,
    *,
    causal: bool = False,
) -> tuple[Tensor, Tensor | None]:
    """softmax(QKᵀ / √d_k + M) · V.

    query (..., T, d_k), key and value (..., S, d_k), mask broadcastable to (..., T, S) with True where
    attending is allowed; `causal` adds the causal mask to it. Keys and values may have fewer heads than the
    queries (grouped-query attention: (B, H_kv, S, d_k) against (B, H, T, d_k); see `per_query_head`).
    Returns the output (..., T, d_k) and the weights (..., T, S); a query that may attend to nothing gets zero
    weights and a zero output.

    With need_weights=False the same computation runs through torch's fused kernel (`fused_attention`), which never
    materialises the (T, S) matrix: faster, but there are no weights to show, so None is returned.
    """
    if not need_weights:
        return fused_attention(query, key, value, mask, causal=causal), None
    if causal:
        mask = with_causal_mask(mask, query.size(-2), key.size(-2), query.device)
    if shares_heads(query, key):
        key, value = per_query_head(key, query.size(1)), per_query_head(value, query.size(1))  # (B, H, S, d_k)
    weights = attention_weights(query, key, mask)  # (..., T, S)
    return weights @ value, weights  # (..., T, d_k), (..., T, S)


def fused_attention(
    query: Tensor, key: Tensor, value: Tensor, mask: Tensor | None = None, *, causal: bool = False
) -> Tensor:
    """The output of `scaled_dot_product_attention` through torch's fused kernel, which never materialises the
    (T, S) weights: faster, for the untraced forward every page runs, and no weight a learner sees comes from it.

    Told that a mask is only causal (is_causal), the kernel skips the key blocks after each query's block instead
    of reading a mask; told that heads are shared (enable_gqa), it reads each key/value head without copying it.
    Both give the same numbers, bit for bit, as the explicit mask and the copies (tests/anatomy/test_attention.py
    holds them equal).
    """
    num_queries, num_keys = query.size(-2), key.size(-2)
    only_causal = causal and mask is None and num_queries == num_keys  # torch's causal mask starts top left
    if causal and not only_causal:
        mask = with_causal_mask(mask, num_queries, num_keys, query.device)
    # Keys and values laid out head by head (a copy of the (B, S, H_kv, d_k) projection, as transformers'
    # KV cache makes them): the CPU kernel reads them in blocks of positions, 15 % faster at 4,096 tokens.
    key, value = key.contiguous(), value.contiguous()
    reads_shared_heads = shares_heads(query, key) and fused_kernel_reads_shared_heads(query.device)
    if shares_heads(query, key) and not reads_shared_heads:
        key, value = per_query_head(key, query.size(1)), per_query_head(value, query.size(1))
    output = F.scaled_dot_product_attention(
        query, key, value, attn_mask=mask, is_causal=only_causal, enable_gqa=reads_shared_heads
    )
    if mask is not None:
        output = output.masked_fill(~mask.any(dim=-1, keepdim=True), 0.0)  # zero, whatever the backend gives
    return output


def fused_kernel_reads_shared_heads(device: torch.device) -> bool:
    """Whether torch's fused attention on this device should read shared key/value heads in place (enable_gqa).

    On the CPU it should: the same numbers as copies, bit for bit, and faster. On CUDA, no fused kernel takes
    shared heads in float32 (torch 2.11: "both fused kernels require query, key and value to have the same
    num_heads"), so torch falls back to its plain kernel, which writes every (T, S) score: 5 GB at 8,192 tokens
    for SmolLM2. Copies of the 3 shared heads (6 MB each) let the memory-efficient kernel run instead.
    """
    return device.type != "cuda"


# Up to this size (every head's (T, S) map together, in bytes) a traced or edited forward weighs all its heads
# in one product: a short text's many small per-head calls cost more than the arithmetic (a traced MiniLM run
# of 8 tokens took 16 ms of CPU against 23 ms head by head, on two threads; 29 tokens 23 against 31). Beyond it
# one head at a time, which keeps a single head's map alive (at 8,192 tokens SmolLM2's nine maps are 2.4 GB)
# and is also the faster way from about 250 MiniLM tokens on (482 tokens: 210 ms against 296 ms).
ALL_HEADS_AT_ONCE_BYTES = 2 * 2**20


def attention_written_out(
    query: Tensor, key: Tensor, value: Tensor, mask: Tensor | None, reweight: Callable[[Tensor], Tensor] | None = None
) -> Tensor:
    """softmax(QKᵀ / √d_k + M) · V with its weights made explicit, for (B, H, T, d_k) queries and (B, H_kv, S, d_k)
    keys and values (H_kv dividing H): (B, H, T, d_k) head outputs. What a traced forward runs, and an edited
    one, whose `reweight` changes each head's (B, 1, T, S) weights before they read the values.

    Small maps are weighed for all heads at once (`scaled_dot_product_attention`), large ones one head at a time
    (`attention_one_head_at_a_time`): see ALL_HEADS_AT_ONCE_BYTES. The weights are the same numbers either way,
    bit for bit (a head's map alone is its slice of all of them); the products with the values are two different
    computations, which some CPUs round apart in the last bit, so a trace and an edit of the same call always
    take the same way, chosen here by size alone.
    """
    batch, heads, queries, _ = query.shape
    if batch * heads * queries * key.size(-2) * query.element_size() > ALL_HEADS_AT_ONCE_BYTES:
        return attention_one_head_at_a_time(query, key, value, mask, reweight)
    if reweight is None:
        head_outputs, _ = scaled_dot_product_attention(query, key, value, mask)
        return head_outputs
    key, value = per_query_head(key, heads), per_query_head(value, heads)  # (B, H, S, d_k)
    weights = attention_weights(query, key, mask)  # (B, H, T, S)
    reweighted = torch.cat([reweight(head_weights) for head_weights in weights.split(1, dim=1)], dim=1)
    return reweighted @ value


def attention_one_head_at_a_time(
    query: Tensor, key: Tensor, value: Tensor, mask: Tensor | None, reweight: Callable[[Tensor], Tensor] | None = None
) -> Tensor:
    """softmax(QKᵀ / √d_k + M) · V written out, as `scaled_dot_product_attention` does, for (B, H, T, d_k) queries
    and (B, H_kv, S, d_k) keys and values (H_kv dividing H), one head at a time: (B, H, T, d_k) head outputs.

    `attention_written_out` runs this for long texts, with `reweight` changing each head's (B, 1, T, S) weights
    before they read the values. Only one head's (T, S) weights exist at once: for SmolLM2's 9 heads at 8,192
    tokens, 270 MB instead of 2.4 GB. Each head's weights are those `attention_weights` gives for all heads
    together, which is what a trace derives (tests/anatomy/test_attention.py holds them equal).
    """
    group = query.size(1) // key.size(1)  # query heads per key/value head
    outputs = []
    for head in range(query.size(1)):
        shared = slice(head // group, head // group + 1)  # the key/value head this query head reads
        weights = one_head_weights(query, key, mask, head)  # (B, 1, T, S)
        if reweight is not None:
            weights = reweight(weights)
        outputs.append(weights @ value[:, shared])  # (B, 1, T, d_k)
    return torch.cat(outputs, dim=1)  # (B, H, T, d_k)


def one_head_weights(query: Tensor, key: Tensor, mask: Tensor | None, head: int) -> Tensor:
    """(B, 1, T, S) the weights of query head `head` alone, from (B, H, T, d_k) queries and (B, H_kv, S, d_k)
    keys: what the traced forward computes for that head, and what a page derives when it shows one head of a
    long text (at 8,192 tokens one head's map is 270 MB, all nine of SmolLM2's 2.4 GB)."""
    one_head = slice(head, head + 1)
    group = query.size(1) // key.size(1)
    shared = slice(head // group, head // group + 1)  # the key/value head this query head reads
    head_mask = mask if mask is None or mask.dim() < 4 or mask.size(1) == 1 else mask[:, one_head]
    return attention_weights(query[:, one_head], key[:, shared], head_mask)


class AttentionHead(nn.Module):
    """One head: its own query, key and value projections from width D down to d_head."""

    def __init__(self, width: int, head_width: int):
        super().__init__()
        self.query = nn.Linear(width, head_width)
        self.key = nn.Linear(width, head_width)
        self.value = nn.Linear(width, head_width)

    def forward(self, hidden: Tensor, mask: Tensor | None = None) -> tuple[Tensor, Tensor]:
        """(B, T, D) -> output (B, T, d_head) and weights (B, T, T)."""
        output, weights = scaled_dot_product_attention(self.query(hidden), self.key(hidden), self.value(hidden), mask)
        return output, weights


class MultiHeadAttentionLoop(nn.Module):
    """H heads in a loop, their outputs concatenated and mixed by the output projection W_O."""

    def __init__(self, width: int, num_heads: int):
        super().__init__()
        head_width = width // num_heads
        self.heads = nn.ModuleList(AttentionHead(width, head_width) for _ in range(num_heads))
        self.output = nn.Linear(width, width)

    def forward(self, hidden: Tensor, mask: Tensor | None = None) -> tuple[Tensor, Tensor]:
        """(B, T, D) -> output (B, T, D) and weights (B, H, T, T)."""
        if mask is not None and mask.dim() == 4:
            mask = mask[:, 0]  # (B, 1, T, S) -> (B, T, S): one head at a time has no head axis
        results = [head(hidden, mask) for head in self.heads]
        concatenated = torch.cat([output for output, _ in results], dim=-1)  # (B, T, H * d_head)
        weights = torch.stack([weights for _, weights in results], dim=1)  # (B, H, T, T)
        return self.output(concatenated), weights

    @classmethod
    def from_batched(cls, batched: MultiHeadAttention) -> MultiHeadAttentionLoop:
        """The loop form holding exactly the weights of a batched `MultiHeadAttention`: head h owns rows
        h·d_head … (h+1)·d_head − 1 of each of W_Q, W_K and W_V."""
        width, num_heads = batched.query.in_features, batched.num_heads
        looped = cls(width, num_heads).to(batched.query.weight.device, batched.query.weight.dtype)
        head_width = width // num_heads
        with torch.no_grad():
            for index, head in enumerate(looped.heads):
                rows = slice(index * head_width, (index + 1) * head_width)
                for name in ("query", "key", "value"):
                    getattr(head, name).weight.copy_(getattr(batched, name).weight[rows])
                    getattr(head, name).bias.copy_(getattr(batched, name).bias[rows])
            looped.output.load_state_dict(batched.output.state_dict())
        return looped


def split_heads(hidden: Tensor, num_heads: int) -> Tensor:
    """(B, T, D) -> (B, H, T, d_head): the D features are H consecutive blocks of d_head."""
    batch, tokens, width = hidden.shape
    return hidden.view(batch, tokens, num_heads, width // num_heads).transpose(1, 2)


def merge_heads(hidden: Tensor) -> Tensor:
    """(B, H, T, d_head) -> (B, T, D): the concatenation of the heads."""
    batch, num_heads, tokens, head_width = hidden.shape
    return hidden.transpose(1, 2).reshape(batch, tokens, num_heads * head_width)


@dataclass(frozen=True)
class AttentionTrace:
    """One multi-head attention sublayer, every step of softmax(QKᵀ/√d_k + M)·V and the output projection.

    What `MultiHeadAttention` returns when asked to trace, instead of storing it on itself: one model object
    serves every browser session. It keeps what cannot be had more cheaply (the queries, the keys and values
    once per key/value head, the head outputs) and derives the rest on each call, by the functions the forward
    ran, so that it gets the forward's numbers bit for bit: the scores and weights (at 512 tokens, 12.6 MB a
    MiniLM layer), the mask, the keys and values per query head, the output projection.
    """

    query: Tensor  # (B, H, T, d_head), as compared: rotated, with rotary positions
    shared_key: Tensor  # (B, H_kv, S, d_head), as compared; each read by H / H_kv query heads
    shared_value: Tensor  # (B, H_kv, S, d_head)
    given_mask: Tensor | None  # the mask the sublayer was given (padding), broadcastable to (B, H, T, S)
    causal: bool  # whether the causal mask was added to it
    head_outputs: Tensor  # (B, H, T, d_head) weights @ value, one block per head
    project: Callable[[Tensor], Tensor]  # W_O (and b_O): the output projection the forward applied

    @property
    def key(self) -> Tensor:
        """(B, H, S, d_head) the keys each query head compared itself with (shared ones repeated)."""
        return per_query_head(self.shared_key, self.query.size(1))

    @property
    def value(self) -> Tensor:
        """(B, H, S, d_head) the values each query head averaged."""
        return per_query_head(self.shared_value, self.query.size(1))

    @property
    def mask(self) -> Tensor | None:
        """Broadcastable to (B, H, T, S), True where attending was allowed: the given mask, and the causal one."""
        if not self.causal:
            return self.given_mask
        return with_causal_mask(self.given_mask, self.query.size(-2), self.shared_key.size(-2), self.query.device)

    @property
    def scale(self) -> float:
        """√d_head, the divisor that keeps dot products of wide vectors from saturating the softmax."""
        return math.sqrt(self.query.size(-1))

    @property
    def concatenated(self) -> Tensor:
        """(B, T, D) the heads laid side by side: each token's H head outputs joined into one row, as the forward
        joins them before W_O. Only a reshuffle of `head_outputs`, so the trace need not keep a copy."""
        return merge_heads(self.head_outputs)

    @property
    def output(self) -> Tensor:
        """(B, T, D) concatenated @ W_O + b_O, the sublayer's output, recomputed as the forward computed it."""
        with torch.inference_mode(self.head_outputs.is_inference()):  # as the forward ran (see FeedForwardTrace)
            return self.project(self.concatenated)

    @property
    def raw_scores(self) -> Tensor:
        """(B, H, T, S) every query dotted with every key: QKᵀ."""
        return self.query @ self.key.transpose(-2, -1)

    @property
    def scaled_scores(self) -> Tensor:
        """(B, H, T, S) QKᵀ / √d_head."""
        return attention_scores(self.query, self.key)

    @property
    def masked_scores(self) -> Tensor:
        """(B, H, T, S) scaled scores with −∞ wherever the mask forbids attending."""
        return apply_mask(self.scaled_scores, self.mask, in_place=True)  # the scaled scores are made for this call

    @property
    def weights(self) -> Tensor:
        """(B, H, T, S) softmax of the masked scores: each row sums to 1, or is all zero when every key is masked.
        Computed afresh on each call: keep the result, not the trace."""
        return attention_weights(self.query, self.key, self.mask)

    def head_weights(self, head: int) -> Tensor:
        """(B, T, S) the weights of one query head, derived alone: the traced forward's own numbers for that
        head (its slice of every head's weights, bit for bit), at a ninth of `weights`' memory for SmolLM2."""
        return one_head_weights(self.query, self.shared_key, self.mask, head)[:, 0]


@dataclass(frozen=True)
class AttentionEdit:
    """A change to one attention sublayer for one call: what an experiment asks of a part of the model ("what
    if this layer could not rest on its first token?", "what if these heads said nothing?").

    The change travels with the call instead of being set on the model, which every session shares.
    `reweight` turns one head's weights (B, 1, T, S) into the weights its values are read with (called for each
    head in turn); the heads in `heads_off` have their outputs zeroed before W_O, so they add nothing to the
    residual stream.
    """

    reweight: Callable[[Tensor], Tensor] | None = None
    heads_off: tuple[int, ...] = ()

    def attend(self, query: Tensor, key: Tensor, value: Tensor, mask: Tensor | None) -> Tensor:
        """(B, H, T, d_head) the heads' outputs with the change made, from (B, H, T, d_head) queries and
        (B, H_kv, S, d_head) keys and values: the traced forward's own arithmetic (`attention_written_out`), each
        head's weights reweighted before they read the values."""
        head_outputs = attention_written_out(query, key, value, mask, self.reweight)
        if self.heads_off:
            head_outputs[:, list(self.heads_off)] = 0.0
        return head_outputs


class MultiHeadAttention(nn.Module):
    """All heads at once: one projection each for Q, K and V, split into heads by a reshape.

    Self-attention when the keys and values come from the same sequence as the queries. In cross-attention
    (the decoder of an encoder-decoder) the queries come from the sequence being written and the keys and
    values from another one, the encoder's output, which makes each head's score matrix T × S.

    With `num_kv_heads` below `num_heads` (grouped-query attention), W_K and W_V project to H_kv heads only and
    query head h reads key/value head h // (H / H_kv): SmolLM2-135M's 9 query heads share 3 key/value heads,
    so its KV cache is a third of the size. `num_kv_heads=1` is multi-query attention. With `rope_theta`, queries
    and keys are turned by their positions (rotary embeddings) before they are compared.
    """

    def __init__(
        self,
        width: int,
        num_heads: int,
        *,
        num_kv_heads: int | None = None,
        bias: bool = True,
        rope_theta: float | None = None,
    ):
        super().__init__()
        self.num_heads = num_heads
        self.num_kv_heads = num_heads if num_kv_heads is None else num_kv_heads
        self.rope_theta = rope_theta
        key_value_width = self.num_kv_heads * (width // num_heads)  # H_kv · d_head
        self.query = nn.Linear(width, width, bias=bias)
        self.key = nn.Linear(width, key_value_width, bias=bias)
        self.value = nn.Linear(width, key_value_width, bias=bias)
        self.output = nn.Linear(width, width, bias=bias)

    def forward(
        self,
        queries_from: Tensor,
        keys_and_values_from: Tensor | None = None,
        *,
        mask: Tensor | None = None,
        causal: bool = False,
        trace: bool = False,
        rotation: Rotation | None = None,
        cache: LayerCache | None = None,
        edit: AttentionEdit | None = None,
    ) -> tuple[Tensor, AttentionTrace | None]:
        """(B, T, D) queries' source and (B, S, D) keys' and values' source (the same sequence when None)
        -> (B, T, D), plus every intermediate when trace=True.

        `causal` adds the causal mask to `mask` (self-attention of a decoder: each token reads those before it).
        `rotation` holds the angles of the queries' positions (`Rotation.at`), needed with rotary embeddings.
        `cache` holds the keys and values of earlier tokens: this call's are appended to it, and the queries
        attend to all of them. `edit` changes this call's weights or silences heads (an experiment); such a call
        records no trace, whose weights are recomputed unedited from Q and K.
        """
        if edit is not None and trace:
            raise ValueError("an edited attention records no trace: the trace would show the unedited weights")
        source = queries_from if keys_and_values_from is None else keys_and_values_from
        query = split_heads(self.query(queries_from), self.num_heads)  # (B, H, T, d_head)
        key = split_heads(self.key(source), self.num_kv_heads)  # (B, H_kv, S, d_head)
        value = split_heads(self.value(source), self.num_kv_heads)  # (B, H_kv, S, d_head)
        if self.rope_theta is not None:
            if rotation is None:
                raise ValueError("rotary attention needs the rotation of its tokens' positions (Rotation.at)")
            query = rotation.apply(query)  # a query's angle depends on its own position,
            key = rotation.apply(key)  # so does a key's: cached keys stay valid
        if cache is not None:
            key, value = cache.extend(key, value)  # (B, H_kv, S, d_head) the earlier tokens' and these
        if edit is None and not trace:  # torch's fused kernel: no weights to show
            head_outputs, _ = scaled_dot_product_attention(query, key, value, mask, need_weights=False, causal=causal)
            return self.output(merge_heads(head_outputs)), None  # (B, T, D) the heads side by side, through W_O
        # Edited or traced: softmax(QKᵀ/√d_k + M)·V written out, its weights made (all heads at once, or one by one).
        allowed = with_causal_mask(mask, query.size(-2), key.size(-2), query.device) if causal else mask
        if edit is not None:  # an experiment, for this call only: weights changed or heads silenced
            return self.output(merge_heads(edit.attend(query, key, value, allowed))), None
        head_outputs = attention_written_out(query, key, value, allowed)  # (B, H, T, d_head)
        output = self.output(merge_heads(head_outputs))  # (B, T, D)
        # The weights are not kept: the trace recomputes them from Q and K, bit for bit (see AttentionTrace).
        # Q and K are recorded as compared: rotated, K and V once per key/value head.
        return output, AttentionTrace(
            query=query,
            shared_key=key,
            shared_value=value,
            given_mask=mask,
            causal=causal,
            head_outputs=head_outputs,
            project=self.output,
        )
