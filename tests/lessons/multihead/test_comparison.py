"""One word in two sentences: the words they share, and how the same head and stack read such a word in each."""

from __future__ import annotations

import pytest
import torch

from lessons.common.runs import run_encoder, tokenize
from lessons.multihead import ablation, comparison

TIME_FLIES, FRUIT_FLIES = "time flies like an arrow", "fruit flies like a banana"


def test_shared_words_are_the_first_sentences_ordinary_tokens_found_in_the_second_each_once(embedded):
    first = tokenize(embedded.tokenizer, "the cat saw the dog and the cat ran")
    second = tokenize(embedded.tokenizer, "a dog ran after the cat")
    assert comparison.shared_words(first, second) == ["the", "cat", "dog", "ran"]  # no [CLS], no [SEP]


def test_two_sentences_with_no_word_in_common_share_nothing_not_even_their_special_tokens(embedded):
    first, second = (tokenize(embedded.tokenizer, text) for text in ("time flies", "the cat sat"))
    assert comparison.shared_words(first, second) == []


@pytest.fixture(scope="module")
def flies(embedded):
    """Both sentences through the model; "flies" is token 2 of each (after [CLS] and the first word)."""
    runs = [run_encoder(embedded.model, embedded.tokenizer, text) for text in (TIME_FLIES, FRUIT_FLIES)]
    assert [run.tokenized.tokens.index("flies") for run in runs] == [2, 2]
    return runs


@pytest.mark.slow
def test_the_attention_shift_of_a_word_is_half_the_l1_distance_of_its_rows_in_every_head(flies):
    weights = [run.output.trace.layers[3].attention.weights[0] for run in flies]  # (H, T, T) each
    shift = comparison.word_attention_shift(*weights, (2, 2))
    assert shift.shape == (12,)
    torch.testing.assert_close(shift, 0.5 * (weights[0][:, 2] - weights[1][:, 2]).abs().sum(dim=-1))
    assert comparison.word_attention_shift(weights[0], weights[0], (2, 2)).max() == 0  # a row against itself


def test_a_word_at_the_same_position_starts_identical_and_drifts_apart_layer_by_layer(flies):
    similarity = comparison.word_similarity_by_depth(*(run.output.trace for run in flies), (2, 2))
    assert similarity.shape == (7,)  # the embeddings, then six layers
    assert float(similarity[0]) == pytest.approx(1.0)  # same token, same position, same embedding
    assert float(similarity[-1]) < 0.99  # its neighbours have changed it
    states = [ablation.states_by_depth(run.output.trace)[:, 2] for run in flies]
    torch.testing.assert_close(similarity, torch.nn.functional.cosine_similarity(*states, dim=-1))
