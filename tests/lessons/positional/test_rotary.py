"""Rotary positions measured on a model's own queries and keys (lessons/positional/rotary.py): the scores are
the forward's, moving both tokens together leaves them alone, moving one changes them, and the frequencies and
arrows are the rotation the forward applies."""

from __future__ import annotations

import math

import pytest
import torch

from anatomy.config import DecoderConfig
from anatomy.models import DecoderOnlyLM
from lessons.positional.rotary import (
    QueriesAndKeys,
    layer_inputs,
    pair_arrows,
    queries_and_keys,
    rotary_frequencies,
    shift_study,
    sinusoidal_frequencies,
)

pytestmark = pytest.mark.usefixtures("no_autograd")


@pytest.fixture(scope="module")
def tiny_rotary_model():
    """Two layers, four query heads sharing two key heads, rotary positions: SmolLM2's parts, small."""
    torch.manual_seed(0)
    config = DecoderConfig(
        vocab_size=50,
        max_positions=64,
        width=16,
        num_heads=4,
        num_kv_heads=2,
        ff_width=24,
        num_layers=2,
        positions="rotary",
        rope_theta=10_000.0,
        norm_kind="rms",
        feed_forward="gated",
        bias=False,
    )
    return DecoderOnlyLM(config).eval()


INPUT_IDS = torch.tensor([[3, 14, 15, 9, 26, 5, 35, 8]])


def found_at(model: DecoderOnlyLM, layer: int) -> QueriesAndKeys:
    return queries_and_keys(model, layer_inputs(model, INPUT_IDS)[layer], layer)


def test_the_layer_inputs_are_the_forwards_own_states_between_blocks_bit_for_bit(tiny_rotary_model):
    """One forward serves every layer: what it keeps for layer l is exactly what layer l read."""
    states = tiny_rotary_model(INPUT_IDS).hidden_states
    kept = layer_inputs(tiny_rotary_model, INPUT_IDS)
    assert len(kept) == tiny_rotary_model.config.num_layers
    assert all(torch.equal(mine, theirs) for mine, theirs in zip(kept, states[:-1], strict=True))


def test_every_score_at_the_tokens_own_positions_is_the_forwards_score(tiny_rotary_model):
    traced = tiny_rotary_model(INPUT_IDS, trace=True).recorded_trace
    for layer in range(2):
        found = found_at(tiny_rotary_model, layer)
        forward_scores = traced.layers[layer].attention.scaled_scores[0]  # (H, T, T)
        for head in range(4):
            for query_token in range(INPUT_IDS.size(1)):
                for key_token in range(INPUT_IDS.size(1)):
                    mine = found.score(head, query_token, key_token, query_token, key_token)
                    assert mine == pytest.approx(float(forward_scores[head, query_token, key_token]), abs=1e-6)


def test_moving_both_tokens_together_keeps_the_score_and_moving_one_changes_it(tiny_rotary_model):
    found = found_at(tiny_rotary_model, 1)
    study = shift_study(found, head=3, query_token=6, key_token=2, shifts=list(range(0, 40, 3)))
    assert study.same_distance[0] == pytest.approx(study.own_score, abs=1e-6)
    assert study.largest_change < 1e-4
    assert float((study.other_distance - study.own_score).abs().max()) > 100 * study.largest_change


def test_a_score_is_recomputed_by_hand_as_the_dot_product_of_two_turned_vectors(tiny_rotary_model):
    found = found_at(tiny_rotary_model, 0)
    head, query_token, key_token, m, n = 1, 5, 2, 17, 9
    query, key = found.query[head, query_token], found.key[found.key_head_of(head), key_token]
    half = found.head_width // 2

    def turned(vector, position):  # each pair (k, k + d/2) turned by position · θ^(−2k/d), written out
        out = vector.clone()
        for k in range(half):
            angle = position * found.theta ** (-2 * k / found.head_width)
            x, y = float(vector[k]), float(vector[k + half])
            out[k], out[k + half] = x * math.cos(angle) - y * math.sin(angle), x * math.sin(angle) + y * math.cos(angle)
        return out

    by_hand = float(turned(query, m) @ turned(key, n)) / math.sqrt(found.head_width)
    assert found.score(head, query_token, key_token, m, n) == pytest.approx(by_hand, abs=1e-5)


def test_query_heads_share_key_heads_in_consecutive_groups(tiny_rotary_model):
    found = found_at(tiny_rotary_model, 0)
    assert [found.key_head_of(head) for head in range(4)] == [0, 0, 1, 1]


def test_pair_k_turns_by_theta_to_the_minus_2k_over_d_a_position_and_keeps_its_length(tiny_rotary_model):
    found = found_at(tiny_rotary_model, 0)
    frequencies = rotary_frequencies(found.head_width, found.theta)
    assert frequencies.tolist() == pytest.approx([10_000.0 ** (-2 * k / 4) for k in range(2)], rel=1e-6)
    for pair in range(2):
        arrows = pair_arrows(found, head=0, token=4, pair=pair, positions=6)
        lengths = arrows.norm(dim=-1)
        assert torch.allclose(lengths, lengths[0].expand(6), rtol=1e-5)
        angles = torch.atan2(arrows[:, 1], arrows[:, 0])
        steps = torch.remainder(angles.diff(), 2 * math.pi)
        assert torch.allclose(steps, torch.full((5,), float(frequencies[pair])), atol=1e-5)


def test_rotary_and_sinusoidal_frequencies_are_one_formula_when_base_and_width_agree():
    assert torch.equal(rotary_frequencies(64, 10_000.0), sinusoidal_frequencies(64, 10_000.0))
    assert rotary_frequencies(64, 100_000.0)[-1] < sinusoidal_frequencies(64, 10_000.0)[-1]


def test_a_model_without_rotary_positions_is_refused_by_name():
    model = DecoderOnlyLM(DecoderConfig(vocab_size=50, max_positions=16, width=16, num_heads=4, ff_width=24))
    with pytest.raises(ValueError, match="not rotary"):
        found_at(model, 0)
