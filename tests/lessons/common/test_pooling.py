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
