"""Average pooling of attention maps, on small maps whose answers are known by hand."""

from __future__ import annotations

import pytest
import torch

from lessons.common import pooling


def test_average_pooling_takes_the_mean_of_each_block():
    weights = torch.arange(16, dtype=torch.float32).view(4, 4)
    pooled = pooling.average_pool(weights, max_size=2)
    # Top-left block holds 0, 1, 4, 5 -> mean 2.5; the others follow by +2 across and +8 down.
    assert pooled.values.tolist() == [[2.5, 4.5], [10.5, 12.5]]
    assert pooled.row_bins == ((0, 2), (2, 4)) and pooled.pooled


def test_average_pooling_divides_a_short_last_block_by_its_own_size():
    weights = torch.arange(25, dtype=torch.float32).view(5, 5)
    pooled = pooling.average_pool(weights, max_size=2)  # blocks of 3 tokens: (0, 3) and (3, 5)
    assert pooled.row_bins == ((0, 3), (3, 5)) and pooled.row_block == 3
    assert pooled.values[1, 1].item() == pytest.approx((18 + 19 + 23 + 24) / 4)  # a 2 × 2 corner block
    assert pooled.values[0, 0].item() == pytest.approx(weights[:3, :3].mean().item())


def test_average_pooling_shrinks_512_tokens_to_64_and_keeps_short_maps_as_they_are():
    long = torch.softmax(torch.randn(2, 512, 512), dim=-1)
    pooled = pooling.average_pool(long)
    assert pooled.values.shape == (2, 64, 64) and len(pooled.column_bins) == 64
    assert pooled.values.mean().item() == pytest.approx(long.mean().item(), rel=1e-5)  # equal blocks keep the mean
    short = torch.softmax(torch.randn(3, 10, 10), dim=-1)
    kept = pooling.average_pool(short)
    assert torch.equal(kept.values, short) and not kept.pooled


def test_a_pooled_block_is_labelled_by_its_first_and_last_token():
    assert pooling.bin_labels([(0, 8), (8, 16), (16, 17)]) == ["0–7", "8–15", "16"]


def test_balanced_bins_keep_one_token_each_for_a_short_text():
    assert pooling.balanced_bins(7, 32) == tuple((index, index + 1) for index in range(7))


def test_512_tokens_make_32_balanced_bins_of_16():
    bins = pooling.balanced_bins(512, 32)
    assert len(bins) == 32
    assert {stop - start for start, stop in bins} == {16}


def test_balanced_bins_cover_every_token_once_and_differ_in_length_by_at_most_one():
    bins = pooling.balanced_bins(100, 32)
    assert len(bins) == 32
    assert bins[0][0] == 0 and bins[-1][1] == 100
    assert all(previous[1] == following[0] for previous, following in zip(bins, bins[1:]))
    assert {stop - start for start, stop in bins} == {3, 4}


def test_balanced_pooling_averages_each_block_of_queries_and_keys():
    weights = torch.rand(2, 3, 70, 70).softmax(dim=-1)
    pooled = pooling.average_pool(weights, 32, balanced=True)
    assert pooled.values.shape == (2, 3, 32, 32) and pooled.pooled
    assert pooled.row_bins == pooled.column_bins == pooling.balanced_bins(70, 32)
    for row, (q_start, q_stop) in enumerate(pooled.row_bins[:5]):
        for column, (k_start, k_stop) in enumerate(pooled.column_bins[-5:], start=27):
            by_hand = weights[..., q_start:q_stop, k_start:k_stop].mean(dim=(-2, -1))
            torch.testing.assert_close(pooled.values[..., row, column], by_hand)
