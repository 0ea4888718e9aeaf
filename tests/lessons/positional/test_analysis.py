"""Measuring position tables: similarity, its dependence on distance, and the paper's three promises
(bounded, unique, deterministic), checked on tables whose answers are known by hand."""

from __future__ import annotations

import math
from types import SimpleNamespace

import pytest
import torch

from anatomy.positional import sinusoidal_positional_encoding
from lessons.positional.analysis import (
    MAX_WIDTH,
    MIN_WIDTH,
    describe_encoding,
    encoding_settings_problem,
    learned_position_table,
    offset_profile,
    rebuilds_identically,
    similarity_matrix,
    slowest_period,
    study_table,
)


def test_sinusoidal_dot_product_is_a_sum_of_cosines_of_the_distance():
    width, base = 8, 10_000.0
    dots = similarity_matrix(sinusoidal_positional_encoding(40, width, base), "dot")
    for p, q in [(0, 0), (3, 10), (25, 18), (39, 0)]:
        expected = sum(math.cos(base ** (-k / width) * (p - q)) for k in range(0, width, 2))
        assert dots[p, q].item() == pytest.approx(expected, abs=1e-5), (p, q)


def test_every_sinusoidal_row_has_length_sqrt_half_d_so_cosine_is_dot_over_half_d():
    encoding = sinusoidal_positional_encoding(30, 16)
    dots, cosines = similarity_matrix(encoding, "dot"), similarity_matrix(encoding, "cosine")
    assert torch.allclose(dots.diagonal(), torch.full((30,), 8.0, dtype=torch.float64), atol=1e-5)
    assert torch.allclose(cosines, dots / 8, atol=1e-6)


def test_an_unknown_measure_is_refused():
    with pytest.raises(ValueError, match="cosine"):
        similarity_matrix(torch.eye(3), "manhattan")


def test_offset_profile_groups_pairs_by_distance():
    similarities = torch.tensor([[1.0, 0.5, 0.1], [0.5, 1.0, 0.3], [0.1, 0.3, 1.0]])
    profile = offset_profile(similarities)
    assert profile.mean.tolist() == pytest.approx([1.0, 0.4, 0.1])  # distance 1: pairs (0,1), (1,2)
    assert profile.lowest.tolist() == pytest.approx([1.0, 0.3, 0.1])
    assert profile.highest.tolist() == pytest.approx([1.0, 0.5, 0.1])
    assert profile.largest_spread == pytest.approx(0.2)


def test_sinusoidal_similarity_depends_on_distance_only_and_a_random_table_does_not():
    sinusoidal = offset_profile(similarity_matrix(sinusoidal_positional_encoding(128, 64)))
    random_rows = torch.randn(128, 64, generator=torch.Generator().manual_seed(0))
    random = offset_profile(similarity_matrix(random_rows))
    assert sinusoidal.largest_spread < 1e-6
    assert random.largest_spread > 0.3


def test_describe_finds_the_largest_value_and_the_nearest_pair():
    table = torch.tensor([[0.0, 0.0], [3.0, -4.0], [0.0, 1.0], [6.0, 8.0]])
    found = describe_encoding(table)
    assert (found.num_positions, found.width) == (4, 2)
    assert found.largest_magnitude == 8.0 and not found.bounded_by_one
    assert found.closest_pair == (0, 2) and found.closest_distance == 1.0
    assert found.rows_unique


def test_two_equal_rows_are_caught_at_distance_exactly_zero():
    table = sinusoidal_positional_encoding(64, 6).clone()
    table[50] = table[9]
    found = describe_encoding(table)
    assert found.closest_pair == (9, 50) and found.closest_distance == 0.0
    assert not found.rows_unique


def test_sinusoidal_table_is_bounded_by_one_and_its_rows_are_unique():
    found = describe_encoding(sinusoidal_positional_encoding(512, 384))
    assert found.largest_magnitude == 1.0 and found.bounded_by_one  # cos(0) = 1 at position 0
    assert found.closest_distance > 3.0  # far from any collision
    assert found.closest_pair == (0, 1)  # every pair of neighbours ties; the first is named
    narrow = describe_encoding(sinusoidal_positional_encoding(512, 2))  # one pair: sin t, cos t
    assert narrow.rows_unique and narrow.closest_distance < 0.01  # 2π is irrational, so only near-misses
    assert narrow.closest_pair[1] - narrow.closest_pair[0] == 333  # 333 ≈ 53 · 2π


def test_a_table_of_equal_rows_names_the_first_pair():
    found = describe_encoding(torch.zeros(300, 64))  # 44 850 tied pairs
    assert found.closest_pair == (0, 1) and found.closest_distance == 0.0


def test_a_single_row_has_no_pair():
    found = describe_encoding(torch.ones(1, 4))
    assert found.closest_pair is None and found.closest_distance == math.inf


def test_rebuilding_tells_a_formula_from_a_random_draw():
    assert rebuilds_identically(lambda: sinusoidal_positional_encoding(100, 32))
    assert not rebuilds_identically(lambda: torch.randn(100, 32))


@pytest.mark.parametrize("width, base", [(MIN_WIDTH, 10_000.0), (384, 10_000.0), (MAX_WIDTH, 1.0001)])
def test_usable_settings_have_no_problem(width, base):
    assert encoding_settings_problem(width, base) is None


@pytest.mark.parametrize(
    "width, base, complaint",
    [
        (1, 10_000.0, "width d"),
        (MAX_WIDTH + 1, 10_000.0, "width d"),
        (7, 10_000.0, "an even whole number"),  # the last sine would have no cosine
        (64, 1.0, "greater than 1"),
        (64, 0.5, "greater than 1"),
        (64, -3.0, "greater than 1"),
        (64, math.nan, "finite"),
        (64, math.inf, "finite"),
    ],
)
def test_unusable_settings_are_explained(width, base, complaint):
    assert complaint in encoding_settings_problem(width, base)


def test_slowest_period_is_one_turn_of_the_last_pair():
    assert slowest_period(2, 10_000.0) == pytest.approx(2 * math.pi)  # the only pair: ω = 1
    assert slowest_period(4, 10_000.0) == pytest.approx(2 * math.pi * 100)  # ω_2 = 10000^(−2/4)
    assert slowest_period(5, 10_000.0) == pytest.approx(2 * math.pi * 10_000**0.8)  # last even k = 4


def test_learned_table_is_the_models_position_weight(embedded):
    table = learned_position_table(embedded.model)
    assert table.shape == (512, 384)
    assert torch.equal(table, embedded.model.embeddings.position.weight)
    assert not table.requires_grad


def test_a_model_with_sinusoidal_positions_has_no_learned_table():
    assert learned_position_table(SimpleNamespace(embeddings=SimpleNamespace(position=None))) is None


def test_study_table_bundles_the_same_numbers():
    table = sinusoidal_positional_encoding(32, 8)
    study = study_table(table, "dot")
    assert torch.equal(study.table, table)
    assert torch.equal(study.similarities, similarity_matrix(table, "dot"))
    assert study.properties == describe_encoding(table)
    assert torch.equal(study.by_offset.mean, offset_profile(study.similarities).mean)
