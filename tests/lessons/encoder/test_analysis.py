"""The encoder-stack measurements: each one equals the same number computed by hand from a traced forward pass."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from anatomy.config import PRESETS, parameter_count
from anatomy.models import SequenceClassifier
from lessons.common.block_parameters import block_parameters
from lessons.common.runs import run_encoder, tokenize
from lessons.encoder import analysis as stack_analysis

pytestmark = pytest.mark.usefixtures("no_autograd")

TEXT = "time flies like an arrow"


@pytest.fixture(scope="module")
def traced(embedded):
    return run_encoder(embedded.model, embedded.tokenizer, TEXT)


@pytest.fixture(scope="module")
def fruit(embedded):
    return run_encoder(embedded.model, embedded.tokenizer, "fruit flies like a banana")


# ---------------------------------------------------------------------------------------------------------
# Attention overview


def test_a_short_text_is_not_pooled_at_all(traced):
    pooled = stack_analysis.pool_overview(traced.attention_weights)
    assert not pooled.pooled
    torch.testing.assert_close(pooled.values, traced.attention_weights)


# ---------------------------------------------------------------------------------------------------------
# Hidden states


def test_norms_are_the_lengths_of_the_returned_hidden_states(traced):
    norms = stack_analysis.hidden_state_norms(traced.output.hidden_states)
    assert norms.shape == (7, len(traced.tokenized))
    for depth, state in enumerate(traced.output.hidden_states):
        torch.testing.assert_close(norms[depth], state[0].pow(2).sum(-1).sqrt())
    # "flies" (position 2) after the embedding layer norm, and after the last block
    assert norms[0, 2].item() == pytest.approx(11.2296, abs=1e-3)
    assert norms[-1, 2].item() == pytest.approx(11.5065, abs=1e-3)


def test_similarity_to_the_previous_layer_is_the_cosine_of_consecutive_states(traced):
    states = traced.output.hidden_states
    similarity = stack_analysis.similarity_to_previous_layer(states)
    assert similarity.shape == (6, len(traced.tokenized))
    above, below = states[3][0, 2], states[2][0, 2]
    assert similarity[2, 2].item() == pytest.approx((above @ below / (above.norm() * below.norm())).item(), abs=1e-6)
    # in MiniLM the last block turns the vectors most (here 0.658 on average, against >= 0.879 for the others)
    row, mean = stack_analysis.least_similar_row(similarity)
    assert (row, round(mean, 3)) == (5, 0.658)
    assert similarity.mean(dim=-1)[:5].min().item() > 0.87


def test_similarity_to_the_embeddings_starts_at_one(traced):
    similarity = stack_analysis.similarity_to_embeddings(traced.output.hidden_states)
    torch.testing.assert_close(similarity[0], torch.ones(len(traced.tokenized)))
    last, first = traced.output.hidden_states[-1][0, 4], traced.output.hidden_states[0][0, 4]
    assert similarity[-1, 4].item() == pytest.approx(F.cosine_similarity(last, first, dim=0).item(), abs=1e-6)


# ---------------------------------------------------------------------------------------------------------
# A word in two contexts


def test_a_word_is_found_with_its_token_position(traced):
    location = stack_analysis.locate_word(TEXT, traced.tokenized, "flies")
    assert (location.start, location.end, location.token_indices) == (5, 10, (2,))
    assert location.whole_word and location.occurrences == 1


def test_case_and_surrounding_spaces_do_not_matter(traced):
    assert stack_analysis.locate_word(TEXT, traced.tokenized, "  FLIES ").token_indices == (2,)


def test_a_missing_or_empty_word_is_not_found(traced):
    assert stack_analysis.locate_word(TEXT, traced.tokenized, "banana") is None
    assert stack_analysis.locate_word(TEXT, traced.tokenized, "   ") is None


def test_a_word_split_into_pieces_keeps_all_of_them(embedded):
    sentence = "the tokenizer splits unbelievably long words"
    tokenized = tokenize(embedded.tokenizer, sentence)
    location = stack_analysis.locate_word(sentence, tokenized, "unbelievably")
    assert [tokenized.tokens[index] for index in location.token_indices] == ["un", "##bel", "##ie", "##va", "##bly"]


def test_a_word_inside_a_longer_word_is_found_as_a_fallback(embedded):
    sentence = "butterflies like flowers"
    location = stack_analysis.locate_word(sentence, tokenize(embedded.tokenizer, sentence), "flies")
    assert location.token_indices == (1,) and not location.whole_word


def test_the_first_of_several_occurrences_is_used(embedded):
    sentence = "flies flies everywhere"
    location = stack_analysis.locate_word(sentence, tokenize(embedded.tokenizer, sentence), "flies")
    assert location.token_indices == (1,) and location.occurrences == 2


def test_a_word_cut_off_by_truncation_has_no_tokens(embedded):
    sentence = "a b c d e f flies"
    location = stack_analysis.locate_word(sentence, tokenize(embedded.tokenizer, sentence, max_tokens=5), "flies")
    assert location.token_indices == ()


def test_a_word_vector_is_the_mean_of_its_pieces(traced):
    vectors = stack_analysis.word_vectors(traced.output.hidden_states, (1, 2))
    torch.testing.assert_close(
        vectors[4], (traced.output.hidden_states[4][0, 1] + traced.output.hidden_states[4][0, 2]) / 2
    )


def test_flies_drifts_apart_between_the_verb_and_the_noun(traced, fruit):
    similarity = stack_analysis.contextual_similarity(
        traced.output.hidden_states, (2,), fruit.output.hidden_states, (2,)
    )
    assert similarity.shape == (7,)
    # Same token at the same position: the embeddings are identical.
    assert similarity[0].item() == pytest.approx(1.0, abs=1e-6)
    assert [round(value, 3) for value in similarity.tolist()] == [1.0, 0.917, 0.903, 0.871, 0.807, 0.808, 0.631]
    assert similarity[0] > similarity[-1]


def test_at_different_positions_the_embeddings_already_differ(embedded, traced):
    shifted = run_encoder(embedded.model, embedded.tokenizer, "the fruit flies like a banana")
    similarity = stack_analysis.contextual_similarity(
        traced.output.hidden_states, (2,), shifted.output.hidden_states, (3,)
    )
    assert 0.9 < similarity[0].item() < 0.999


# ---------------------------------------------------------------------------------------------------------
# Layer norm placement


def test_main_path_norms_read_the_trace_of_a_block(traced):
    layer = traced.output.trace.layers[1]
    norms = stack_analysis.main_path_norms(layer)
    assert norms.shape == (5, len(traced.tokenized))
    torch.testing.assert_close(norms[1], layer.attention_residual[0].norm(dim=-1))
    torch.testing.assert_close(norms[2], layer.norm_outputs["attention_norm"][0].norm(dim=-1))
    torch.testing.assert_close(norms[3], layer.feed_forward_residual[0].norm(dim=-1))
    # post-LN: the second LayerNorm's output is the block's output, the next hidden state
    torch.testing.assert_close(norms[4], traced.output.hidden_states[2][0].norm(dim=-1))
    # [CLS] after the first block's feed-forward sum, before its LayerNorm: a spike
    assert stack_analysis.main_path_norms(traced.output.trace.layers[0])[3, 0].item() == pytest.approx(
        220.405, abs=0.01
    )


def test_the_whole_main_path_has_four_checkpoints_per_block(traced):
    norms = stack_analysis.stack_main_path_norms(traced.output.trace)
    labels = stack_analysis.stack_main_path_labels(6)
    assert norms.shape == (25, len(traced.tokenized)) and len(labels) == 25
    assert labels[:5] == ["embeddings", "L0 x+Attn", "L0 LN₁", "L0 h+FFN", "L0 LN₂"]
    for depth in range(7):  # every fourth checkpoint is a hidden state
        torch.testing.assert_close(norms[4 * depth], traced.output.hidden_states[depth][0].norm(dim=-1))


def test_each_block_owns_the_four_rows_of_the_main_path_labelled_with_its_number():
    labels = stack_analysis.stack_main_path_labels(6)
    assert stack_analysis.stack_main_path_rows(2) == (9, 13)
    for layer in range(6):
        start, end = stack_analysis.stack_main_path_rows(layer)
        assert [label.split()[0] for label in labels[start:end]] == [f"L{layer}"] * 4
    assert stack_analysis.stack_main_path_rows(5)[1] == len(labels)


def test_the_same_seed_gives_pre_and_post_ln_the_same_weights_whatever_the_global_generator():
    torch.manual_seed(1)
    pre = nn.ModuleList(stack_analysis.untrained_layers(PRESETS["all-MiniLM-L6-v2"], "pre"))
    torch.manual_seed(2)
    post = nn.ModuleList(stack_analysis.untrained_layers(PRESETS["all-MiniLM-L6-v2"], "post"))
    assert len(pre) == 6 and pre[0].norm_placement == "pre" and post[0].norm_placement == "post"
    for (name, mine), (_, theirs) in zip(pre.state_dict().items(), post.state_dict().items(), strict=True):
        assert torch.equal(mine, theirs), name
    other_seed = list(stack_analysis.untrained_layers(PRESETS["all-MiniLM-L6-v2"], "pre", seed=1))
    assert not torch.equal(other_seed[0].attention.query.weight, pre[0].attention.query.weight)
    bound = 1 / math.sqrt(384)
    assert pre[0].feed_forward.expand.weight.abs().max().item() <= bound


@pytest.mark.slow
def test_pre_ln_grows_the_main_path_while_post_ln_holds_it_at_root_d(embedded, traced):
    embeddings = traced.output.trace.embeddings.output
    pre = stack_analysis.main_path_growth(embeddings, embedded.config, "pre")
    post = stack_analysis.main_path_growth(embeddings, embedded.config, "post")
    pre_means, post_means = pre.norms.mean(dim=1), post.norms.mean(dim=1)
    assert pre.norms.shape == post.norms.shape == (7, 7)
    assert pre_means[0].item() == post_means[0].item() == pytest.approx(8.958, abs=1e-3)
    # pre-LN: every block adds to the sum; 8.96 -> 17.26 over six blocks
    assert all(later > earlier for earlier, later in zip(pre_means, pre_means[1:]))
    assert [round(value, 2) for value in pre_means.tolist()] == [8.96, 10.26, 11.67, 12.74, 14.32, 16.06, 17.26]
    # post-LN: every block ends in a LayerNorm with γ = 1, β = 0, so every token has length √384 = 19.596
    torch.testing.assert_close(post.norms[1:], torch.full((6, 7), math.sqrt(384)), atol=1e-3, rtol=0)
    assert post.final_norms is None
    torch.testing.assert_close(pre.final_norms, torch.full((7,), math.sqrt(384)), atol=1e-3, rtol=0)


# ---------------------------------------------------------------------------------------------------------
# Feed-forward


def test_positive_fraction_counts_activations_above_zero():
    activation = torch.tensor([[-0.1, 0.0, 2.0, 3.0], [1.0, -0.2, -0.3, -0.4]])
    torch.testing.assert_close(stack_analysis.positive_fraction(activation), torch.tensor([0.5, 0.25]))


def test_positive_fraction_by_layer_reads_every_layers_gelu_output(traced):
    fractions = stack_analysis.positive_fraction_by_layer(traced.output.trace)
    by_hand = [
        (layer.feed_forward.hidden_activation > 0).double().mean().item() for layer in traced.output.trace.layers
    ]
    assert fractions.tolist() == pytest.approx(by_hand, abs=1e-6)
    assert [round(value, 3) for value in fractions.tolist()] == [0.246, 0.172, 0.176, 0.193, 0.213, 0.188]


def test_most_active_neurons_are_sorted_by_mean_activation():
    activation = torch.tensor([[1.0, 5.0, -1.0, 2.0], [3.0, 1.0, 0.0, 1.0]])  # means 2, 3, -0.5, 1.5
    assert stack_analysis.most_active_neurons(activation, 2).tolist() == [1, 0]
    assert stack_analysis.most_active_neurons(activation, 10).tolist() == [1, 0, 3, 2]


# ---------------------------------------------------------------------------------------------------------
# Classification head


def test_an_untrained_head_is_seeded_and_shaped_num_labels_by_width():
    head = stack_analysis.untrained_classifier(384, 3)
    assert head.weight.shape == (3, 384) and head.bias.shape == (3,)
    assert torch.equal(head.weight, stack_analysis.untrained_classifier(384, 3).weight)
    assert not torch.equal(head.weight, stack_analysis.untrained_classifier(384, 3, seed=1).weight)


@pytest.mark.slow
def test_the_head_computes_what_a_sequence_classifier_built_on_the_same_weights_computes(embedded, traced):
    before = {name: tensor.clone() for name, tensor in embedded.model.state_dict().items()}
    head = stack_analysis.untrained_classifier(384, 4)
    result = stack_analysis.apply_classifier_head(embedded.model, traced.output.last_hidden_state, head)
    assert result.cls_vector.shape == result.summary.shape == (384,)
    assert result.logits.shape == result.probabilities.shape == (4,)
    assert result.probabilities.sum().item() == pytest.approx(1.0, abs=1e-6)
    torch.testing.assert_close(result.cls_vector, traced.output.last_hidden_state[0, 0])
    # MiniLM's checkpoint has a pooler: the head reads tanh(W_p h[CLS] + b_p)
    pooler = embedded.model.pooler
    torch.testing.assert_close(result.summary, torch.tanh(pooler(result.cls_vector)))

    classifier = SequenceClassifier(embedded.model.config, num_labels=4).eval()
    classifier.encoder.load_state_dict(embedded.model.state_dict())
    classifier.classifier.load_state_dict(head.state_dict())
    ids = torch.tensor([traced.tokenized.input_ids])
    torch.testing.assert_close(classifier(ids).logits[0], result.logits, atol=1e-5, rtol=1e-5)
    assert all(torch.equal(before[name], tensor) for name, tensor in embedded.model.state_dict().items())


def test_the_body_of_a_fine_tuned_classifier_is_its_encoder(embedded):
    classifier = SequenceClassifier(PRESETS["all-MiniLM-L6-v2"], num_labels=2)
    assert stack_analysis.encoder_body(classifier) is classifier.encoder
    assert stack_analysis.encoder_body(embedded.model) is embedded.model


# ---------------------------------------------------------------------------------------------------------
# Parameters


def test_parameter_names_map_to_the_components_of_parameter_breakdown():
    assert stack_analysis.component_of("layers.3.attention.query.weight") == "attention (all layers)"
    assert stack_analysis.component_of("layers.3.attention_norm.bias") == "layer norms (all layers)"
    assert stack_analysis.component_of("layers.0.feed_forward.expand.weight") == "feed-forward (all layers)"
    assert stack_analysis.component_of("encoder.embeddings.token.weight") == "token embeddings"
    assert stack_analysis.component_of("classifier.weight") == "classifier"
    assert stack_analysis.component_of("something.else") == "other"


def test_the_table_adds_up_to_every_parameter_of_the_loaded_model(embedded):
    rows = stack_analysis.parameter_table(embedded.config, embedded.model)
    by_hand = sum(parameter.numel() for parameter in embedded.model.parameters())
    assert sum(row.in_model for row in rows) == stack_analysis.total_parameters(embedded.model) == by_hand
    assert by_hand == 22_713_216
    # every component the configuration predicts is exactly what the loaded module holds
    assert [(row.component, row.from_config) for row in rows] == [(row.component, row.in_model) for row in rows]
    assert {row.component: row.in_model for row in rows}["feed-forward (all layers)"] == 6 * (
        2 * 384 * 1536 + 1536 + 384
    )


def test_a_classifier_head_appears_as_a_row_the_configuration_does_not_predict():
    classifier = SequenceClassifier(PRESETS["all-MiniLM-L6-v2"], num_labels=3)
    rows = {row.component: row for row in stack_analysis.parameter_table(PRESETS["all-MiniLM-L6-v2"], classifier)}
    assert (rows["classifier"].from_config, rows["classifier"].in_model) == (0, 384 * 3 + 3)
    assert sum(row.in_model for row in rows.values()) == sum(p.numel() for p in classifier.parameters())


def test_the_zoo_computes_the_published_sizes():
    zoo = {entry.name: entry for entry in stack_analysis.model_zoo()}
    assert set(zoo) == set(PRESETS)
    assert (zoo["bert-base-uncased"].parameters, stack_analysis.in_millions(zoo["bert-base-uncased"].parameters)) == (
        109_482_240,
        "109.5M",
    )
    # often quoted as 340M
    assert stack_analysis.in_millions(zoo["bert-large-uncased"].parameters) == "335.1M"
    assert zoo["gpt2"].family == "decoder" and stack_analysis.in_millions(zoo["gpt2"].parameters) == "124.4M"
    bert_large = zoo["bert-large-uncased"]
    assert (bert_large.num_layers, bert_large.width, bert_large.num_heads, bert_large.ff_width) == (24, 1024, 16, 4096)
    assert bert_large.parameters == parameter_count(PRESETS["bert-large-uncased"])


def test_one_block_holds_an_equal_share_of_every_part_counted_over_all_blocks():
    assert block_parameters(PRESETS["bert-base-uncased"]) == {
        "attention": 4 * (768 * 768 + 768),  # 2,362,368
        "feed-forward": 768 * 3072 + 3072 + 3072 * 768 + 768,  # 4,722,432
        "layer norms": 2 * 2 * 768,  # 3,072
    }


def test_every_token_is_compared_with_the_chosen_one_at_its_own_depth(traced):
    similarity = stack_analysis.similarity_to_token(traced.output.hidden_states, 2)
    states = stack_analysis.stacked_hidden_states(traced.output.hidden_states)
    assert similarity.shape == (7, 7)
    assert torch.allclose(similarity[:, 2], torch.ones(7), atol=1e-6)  # "flies" with itself
    assert similarity[6, 4] == pytest.approx(F.cosine_similarity(states[6, 4], states[6, 2], dim=0).item(), abs=1e-6)


def test_the_others_are_ranked_most_similar_first_without_the_token_itself():
    cosines = torch.tensor([0.2, 1.0, 0.5, 0.5, -0.3])
    assert stack_analysis.others_by_similarity(cosines, 1) == [2, 3, 0, 4]  # of two equals, the earlier first
