"""How long a text the decoder lessons read, by device; one layer's attention kept as what makes it."""

from __future__ import annotations

from dataclasses import replace

import pytest
import torch

from anatomy.attention import one_head_weights
from anatomy.models import DecoderOnlyLM
from lessons.common import decoder_attention
from lessons.common.decoder_attention import CPU_MAX_TOKENS, token_limit_on
from tests.anatomy.test_attention_edits import LLAMA_LIKE


@pytest.mark.parametrize("device", ["cpu", "mps", "meta"])
def test_off_a_cuda_gpu_the_lessons_read_at_most_the_cpu_cap(device):
    assert token_limit_on(torch.device(device), 8192) == CPU_MAX_TOKENS == 512
    assert token_limit_on(torch.device(device), 128) == 128  # a model with fewer positions reads what it can


@pytest.mark.parametrize("device", ["cuda", "cuda:1"])
def test_on_a_cuda_gpu_the_lessons_read_every_position_the_model_has(device):
    assert token_limit_on(torch.device(device), 8192) == 8192
    assert token_limit_on(torch.device(device), 1024) == 1024


def tiny_decoder() -> DecoderOnlyLM:
    """SmolLM2's parts (rotary positions, 6 query heads sharing 2 key/value heads), small, with 2,048 positions."""
    torch.manual_seed(0)
    return DecoderOnlyLM(replace(LLAMA_LIKE, max_positions=2048)).eval()


def test_a_model_on_the_cpu_is_read_up_to_the_cpu_cap():
    assert decoder_attention.max_tokens(tiny_decoder()) == 512


def test_one_layers_attention_gives_each_heads_map_as_the_fully_traced_forward_does():
    model = tiny_decoder()
    ids = tuple(range(3, 40))
    with torch.no_grad():
        traced = model(decoder_attention.as_batch(ids, model), trace=True).recorded_trace
    for layer in range(3):
        kept = decoder_attention.layer_attention(model, ids, layer)
        full = traced.layers[layer].attention.weights[0]  # (H, T, T)
        for head in range(6):
            torch.testing.assert_close(kept.head_weights(head)[0], full[head], atol=1e-6, rtol=0)
        assert kept.query.shape == (1, 6, 37, 4) and kept.shared_key.shape == (1, 2, 37, 4)  # no (T, T) map kept


@pytest.mark.parametrize("layer_bytes", [decoder_attention.WHOLE_LAYER_MAP_BYTES, 0], ids=["together", "one_by_one"])
def test_each_heads_map_in_a_scan_is_the_fully_traced_forwards_own_bit_for_bit(layer_bytes, monkeypatch):
    monkeypatch.setattr(decoder_attention, "WHOLE_LAYER_MAP_BYTES", layer_bytes)  # 0: every layer counts as long
    model = tiny_decoder()
    ids = tuple(range(3, 40))
    with torch.no_grad():
        traced = model(decoder_attention.as_batch(ids, model), trace=True).recorded_trace
    scanned = list(decoder_attention.each_layer_attention(model, ids))
    assert len(scanned) == 3
    for attention, layer in zip(scanned, traced.layers):
        maps = list(decoder_attention.head_maps(attention))
        assert len(maps) == 6 and maps[0].shape == (37, 37)
        assert torch.equal(torch.stack(maps), layer.attention.weights[0])


def test_a_layers_maps_are_derived_together_while_small_and_one_head_at_a_time_when_long(monkeypatch):
    model = tiny_decoder()
    (attention, *_) = decoder_attention.each_layer_attention(model, tuple(range(3, 40)))
    derived_alone = []

    def counted(query, key, mask, head):
        derived_alone.append(head)
        return one_head_weights(query, key, mask, head)

    monkeypatch.setattr(decoder_attention, "one_head_weights", counted)
    list(decoder_attention.head_maps(attention))  # 6 heads × 37 × 37 floats: far below the size
    assert derived_alone == []
    monkeypatch.setattr(decoder_attention, "WHOLE_LAYER_MAP_BYTES", 6 * 37 * 37 * 4 - 1)  # one float above it
    list(decoder_attention.head_maps(attention))
    assert derived_alone == [0, 1, 2, 3, 4, 5]
