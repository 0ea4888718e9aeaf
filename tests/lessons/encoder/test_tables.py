"""The encoder lesson's labels and tables: each row says what it claims, with numbers small enough to check by hand."""

from __future__ import annotations

import pytest
import torch

from lessons.encoder import analysis, tables
from lessons.encoder.analysis import NormGrowth, ParameterRow, WordLocation, ZooEntry


def test_each_hidden_state_is_named_for_the_layer_that_produced_it():
    assert tables.depth_labels(2) == ["embeddings", "after layer 0", "after layer 1"]


def test_self_similarity_names_each_row_by_the_two_depths_it_compares():
    hidden_states = [torch.randn(1, 3, 4, generator=torch.Generator().manual_seed(depth)) for depth in range(3)]
    depths = tables.depth_labels(2)

    previous, rows = tables.self_similarity(hidden_states, depths, "previous")
    assert rows == ["after layer 0 vs embeddings", "after layer 1 vs after layer 0"]
    torch.testing.assert_close(previous, analysis.similarity_to_previous_layer(hidden_states))

    embeddings, rows = tables.self_similarity(hidden_states, depths, "embeddings")
    assert rows == ["embeddings vs embeddings", "after layer 0 vs embeddings", "after layer 1 vs embeddings"]
    torch.testing.assert_close(embeddings, analysis.similarity_to_embeddings(hidden_states))


def test_block_sizes_are_the_distinct_lengths_smallest_first():
    assert tables.block_sizes(((0, 5), (5, 10), (10, 14), (14, 18))) == [4, 5]


def test_the_word_pieces_table_lists_the_pieces_their_positions_and_the_occurrences():
    tokens = ["[CLS]", "un", "##bel", "good", "un", "##bel", "[SEP]"]
    found = [tables.FoundWord("A", tokens, WordLocation(0, 5, (1, 2), True, 2))]
    row = tables.word_pieces_table(found).iloc[0].to_dict()
    assert row == {"sentence": "A", "word pieces used": "un ##bel", "positions": "1, 2", "occurrences": 2}


def test_a_layer_norm_output_without_gamma_and_beta_is_root_d_long():
    assert tables.unit_norm(384) == pytest.approx(19.5959, abs=1e-4)
    assert torch.nn.functional.layer_norm(torch.randn(384), (384,)).norm().item() == pytest.approx(384**0.5, rel=1e-4)


def test_the_growth_summary_reads_the_mean_length_at_the_input_and_after_each_block():
    pre = NormGrowth("pre", torch.tensor([[2.0, 4.0], [5.0, 7.0], [8.0, 10.0]]), torch.tensor([1.0, 1.0]))
    post = NormGrowth("post", torch.tensor([[3.0, 3.0], [4.0, 4.0], [5.0, 6.0]]), None)
    summary = tables.growth_summary({"pre": pre, "post": post})
    assert (summary.pre_start, summary.pre_end, summary.pre_ratio) == (3.0, 9.0, 3.0)
    assert summary.post_range == (4.0, 5.5)  # the input, at 3.0, is left out
    table = summary.table()
    assert list(table.index) == ["input", "after block 0", "after block 1"]
    assert table["pre-LN mean ‖h‖"].tolist() == [3.0, 6.0, 9.0]


def test_the_classifier_table_has_one_row_per_label():
    logits = torch.tensor([2.0, 0.0])
    head = analysis.ClassifierHeadOutput(
        torch.zeros(4), torch.zeros(4), torch.zeros(2, 4), torch.zeros(2), logits, logits.softmax(dim=-1)
    )
    table = tables.classifier_table(head)
    assert table["label"].tolist() == [0, 1]
    assert table["probability"].tolist() == pytest.approx([0.8808, 0.1192], abs=1e-4)


def test_the_parameter_table_totals_each_column_and_gives_each_row_its_share():
    rows = (ParameterRow("embeddings", 10, 10), ParameterRow("classifier head", 0, 30))
    frame = tables.parameter_frame(rows, total=40).set_index("component")
    assert frame.loc["total", "from the configuration"] == 10 and frame.loc["total", "in the loaded model"] == 40
    assert frame["share of the loaded model"].tolist() == ["25.0%", "75.0%", "100.0%"]
    assert tables.mismatched_components(rows) == ["classifier head"]


def test_the_zoo_table_renames_the_shape_numbers_and_adds_millions():
    entry = ZooEntry("bert-base-uncased", "encoder", 12, 768, 12, 3072, 109_482_240)
    row = tables.zoo_frame([entry]).iloc[0].to_dict()
    assert row == {
        "model": "bert-base-uncased",
        "family": "encoder",
        "layers": 12,
        "width D": 768,
        "heads": 12,
        "FF width": 3072,
        "parameters": 109_482_240,
        "≈": "109.5M",
    }
