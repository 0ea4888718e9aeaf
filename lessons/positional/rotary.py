"""Rotary positions (RoPE) measured on a real model's queries and keys: how each pair of coordinates turns with
the position, how fast each pair turns, and why the score of a query with a key depends only on how far apart
the two tokens are.

A rotary model (SmolLM2, Llama) adds no position vector to its embeddings. Instead, in every layer, each head's
query and key are split into pairs of coordinates, and pair k is turned by the angle position · ω_k, where
ω_k = θ^(−2k/d_head) (`anatomy.rotary`). Turning q by m·ω and k by n·ω, then taking their dot product, gives the
dot product of q with k turned by (n − m)·ω: only the distance n − m is left. This module takes a layer's own
queries and keys *before* they are turned (the projections of the learner's text), places them at chosen
positions with the model's own rotation, and scores them as the forward does.

Torch only: the figures are in `lessons.positional.figures`, the page in `lessons.positional.ui`.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor

from anatomy.attention import attention_scores, split_heads
from anatomy.rotary import Rotation, rotation_angles


def rotary_frequencies(head_width: int, theta: float) -> Tensor:
    """(d_head/2,) ω_k = θ^(−2k/d_head): how many radians pair k turns per position (pair 0 fastest).

    Read off the model's own angles at position 1, so this is the rotation the forward applies, not a second
    formula for it."""
    return rotation_angles(torch.tensor([1]), head_width, theta)[0, : head_width // 2]


def sinusoidal_frequencies(width: int, base: float) -> Tensor:
    """(d/2,) the frequency of columns 2i and 2i + 1 of the sinusoidal table: 1 / base^(2i/d), the same form."""
    return 1.0 / (base ** (torch.arange(0, width, 2, dtype=torch.float32) / width))


@dataclass(frozen=True)
class QueriesAndKeys:
    """One layer's queries and keys of a text, as projected and before any rotation.

    query: (H, T, d_head); key: (H_kv, T, d_head). Query head h reads key head h // (H / H_kv) (grouped-query
    attention shares each key head among consecutive query heads)."""

    query: Tensor
    key: Tensor
    theta: float

    @property
    def head_width(self) -> int:
        return self.query.size(-1)

    def key_head_of(self, head: int) -> int:
        return head // (self.query.size(0) // self.key.size(0))

    def score(self, head: int, query_token: int, key_token: int, query_position: int, key_position: int) -> float:
        """q·k/√d_head for the query of `query_token` turned as if at `query_position` and the key of
        `key_token` turned as if at `key_position`: the forward's score when the positions are the tokens' own."""
        return float(self.scores(head, query_token, key_token, [(query_position, key_position)])[0])

    def scores(self, head: int, query_token: int, key_token: int, positions: list[tuple[int, int]]) -> Tensor:
        """(len(positions),) the scores of one query and one key placed at each (query, key) position pair."""
        query_positions = torch.tensor([query for query, _ in positions])
        key_positions = torch.tensor([key for _, key in positions])
        query = self.query[head, query_token].expand(len(positions), -1)  # (P, d_head) the same vector P times
        key = self.key[self.key_head_of(head), key_token].expand(len(positions), -1)
        turned_query = Rotation.at(query_positions, self.head_width, self.theta).apply(query)
        turned_key = Rotation.at(key_positions, self.head_width, self.theta).apply(key)
        # attention_scores on (P, 1, d) · (P, d, 1): each placement scored alone, as the forward scores a pair
        return attention_scores(turned_query[:, None, :], turned_key[:, None, :])[:, 0, 0]


def layer_inputs(model, input_ids: Tensor) -> tuple[Tensor, ...]:
    """What each layer reads for `input_ids` (1, T): L tensors (1, T, D), the embeddings and then every block's
    output but the last. One forward pass serves every layer, so that another layer costs only its own
    projections (at 512 tokens SmolLM2's 30 inputs take 35 MB; the forward, over a second on two cores)."""
    with torch.inference_mode():
        # last_logits_only: the LM head scores one position, not the T × 49,152 (100 MB at 512 tokens) unread
        return model(input_ids, last_logits_only=True).hidden_states[:-1]


def queries_and_keys(model, layer_input: Tensor, layer: int) -> QueriesAndKeys:
    """Layer `layer`'s queries and keys, unrotated: what the layer reads (`layer_inputs(...)[layer]`, the hidden
    state the layers before it wrote, (1, T, D)), through the layer's attention norm and its W_Q and W_K."""
    config = model.config
    if config.positions != "rotary":
        raise ValueError(f"{type(model).__name__} has {config.positions} positions, not rotary ones")
    with torch.inference_mode():
        block = model.layers[layer]
        normed = block.attention_norm(layer_input)
        query = split_heads(block.attention.query(normed), config.num_heads)[0]  # (H, T, d_head)
        key = split_heads(block.attention.key(normed), config.num_kv_heads)[0]  # (H_kv, T, d_head)
    return QueriesAndKeys(query.float().cpu(), key.float().cpu(), config.rope_theta)


@dataclass(frozen=True)
class ShiftStudy:
    """One query and one key of the text, placed at shifted positions.

    `same_distance[s]`: both moved s places along (the tokens' own positions + s): the score stays put.
    `other_distance[s]`: the key left at its own position, the query moved s places: the distance changes,
    and so does the score."""

    shifts: list[int]
    same_distance: Tensor
    other_distance: Tensor
    own_score: float  # the score at the tokens' own positions: the forward's

    @property
    def largest_change(self) -> float:
        """How far the score moves when both tokens are moved together (float32 rounding only)."""
        return float((self.same_distance - self.own_score).abs().max())


def shift_study(
    queries_and_keys: QueriesAndKeys, head: int, query_token: int, key_token: int, shifts: list[int]
) -> ShiftStudy:
    same = [(query_token + shift, key_token + shift) for shift in shifts]
    other = [(query_token + shift, key_token) for shift in shifts]
    return ShiftStudy(
        shifts,
        queries_and_keys.scores(head, query_token, key_token, same),
        queries_and_keys.scores(head, query_token, key_token, other),
        queries_and_keys.score(head, query_token, key_token, query_token, key_token),
    )


def pair_arrows(queries_and_keys: QueriesAndKeys, head: int, token: int, pair: int, positions: int) -> Tensor:
    """(positions, 2) pair `pair` of the token's query (coordinates k and k + d_head/2) as it would be turned
    at positions 0, 1, …: the arrow the rotation turns by ω_k a step."""
    width = queries_and_keys.head_width
    query = queries_and_keys.query[head, token].expand(positions, -1)
    turned = Rotation.at(torch.arange(positions), width, queries_and_keys.theta).apply(query)
    return torch.stack((turned[:, pair], turned[:, pair + width // 2]), dim=-1)
