"""The three families of transformer: their attention patterns, and a model table whose every parameter count
is computed from a configuration and equals the tensors of the module that configuration builds."""

from __future__ import annotations

import pytest
import torch

from anatomy.checkpoints.pretrained import load_pretrained
from anatomy.config import PRESETS, parameter_count
from anatomy.training.recipes import RECIPES
from lessons.decoder import families

# Computed by parameter_count and by Σ numel; the README and the encoder page quote the same numbers.
EXPECTED = {
    "BERT-base (uncased)": 109_482_240,
    "all-MiniLM-L6-v2 (embedded)": 22_713_216,
    "GPT-2 small": 124_439_808,
    "sorter (trained here)": 103_232,
    "sorter-cheater (trained here)": 103_232,
    "reverser (trained here)": 89_088,
}


@pytest.fixture(scope="module")
def table():
    return {row.name: row for row in families.model_table()}


def test_the_table_holds_bert_gpt2_minilm_and_the_three_models_trained_here(table):
    assert list(table) == list(EXPECTED)
    assert [table[name].family for name in EXPECTED] == [
        "encoder-only",
        "encoder-only",
        "decoder-only",
        "decoder-only",
        "decoder-only",
        "encoder-decoder",
    ]
    assert (table["reverser (trained here)"].encoder_layers, table["reverser (trained here)"].decoder_layers) == (1, 1)
    assert (table["GPT-2 small"].encoder_layers, table["GPT-2 small"].decoder_layers) == (0, 12)


@pytest.mark.parametrize("name", list(EXPECTED))
def test_each_count_comes_from_the_config_and_equals_the_numel_of_the_built_module(table, name):
    _, config = families.model_configs()[name]
    assert table[name].parameters == parameter_count(config) == EXPECTED[name]
    assert families.counted_parameters(config) == EXPECTED[name]


def test_the_minilm_row_is_read_from_the_embedded_checkpoints_own_config(table, embedded):
    _, config = families.model_configs()["all-MiniLM-L6-v2 (embedded)"]
    assert config == embedded.config and config != PRESETS["bert-base-uncased"]
    assert (
        sum(parameter.numel() for parameter in embedded.model.parameters())
        == table["all-MiniLM-L6-v2 (embedded)"].parameters
    )


@pytest.mark.parametrize("name", sorted(RECIPES))
def test_the_rows_of_the_trained_models_equal_their_shipped_weights(table, name):
    shipped = load_pretrained(str(RECIPES[name].folder), device="cpu")
    shipped_count = sum(parameter.numel() for parameter in shipped.model.parameters())
    assert shipped_count == table[f"{name} (trained here)"].parameters


def test_building_on_the_meta_device_allocates_nothing():
    model = families.build_on_meta(PRESETS["gpt2"])
    assert {parameter.device.type for parameter in model.parameters()} == {"meta"}


def test_encoder_only_reads_everything_decoder_only_reads_the_past():
    encoder, decoder, _ = families.family_masks(num_source=4, num_target=3)
    assert encoder.family == "encoder-only" and encoder.mask.all() and encoder.mask.shape == (4, 4)
    assert decoder.family == "decoder-only" and torch.equal(decoder.mask, torch.ones(4, 4, dtype=torch.bool).tril())
    assert int(decoder.mask.sum()) == 10  # 1 + 2 + 3 + 4 of 16


def test_encoder_decoder_is_three_blocks_and_the_source_never_reads_the_target():
    pattern = families.family_masks(num_source=4, num_target=3)[2]
    mask = pattern.mask
    assert pattern.family == "encoder-decoder" and pattern.source_length == 4
    assert pattern.row_labels == ("x0", "x1", "x2", "x3", "y0", "y1", "y2") == pattern.column_labels
    assert mask[:4, :4].all()  # encoder self-attention: no mask
    assert not mask[:4, 4:].any()  # the source never reads the target
    assert mask[4:, :4].all()  # cross-attention: no mask
    assert torch.equal(mask[4:, 4:], torch.ones(3, 3, dtype=torch.bool).tril())  # decoder: causal
    assert int(mask.sum()) == 16 + 12 + 6  # 34 of 49 pairs allowed
