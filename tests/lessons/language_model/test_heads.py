"""Sinks, induction, previous-token and duplicate-token heads: each score as the papers define it, checked on
maps whose answer is known by construction and recomputed on SmolLM2 by a plain loop over heads and positions;
then the two experiments that switch something off."""

from __future__ import annotations

import pytest
import torch

from anatomy.attention import AttentionEdit
from lessons.common import attention_sinks, decoder_attention
from lessons.common.decoder_attention import as_batch, each_layer_attention, head_maps, layer_attention
from lessons.common.llm import readable
from lessons.language_model import heads, reading
from tests.lessons.common.test_decoder_attention import tiny_decoder

SHORT_COPY = 8


def causal_pattern(rows: list[int], tokens: int) -> torch.Tensor:
    """(1, T, T) a head whose query i puts all its weight on key rows[i]."""
    weights = torch.zeros(1, tokens, tokens)
    for query, key in enumerate(rows):
        weights[0, query, key] = 1.0
    return weights


def importance_by_loops(weights: torch.Tensor, position: int) -> list[float]:
    """The definition read aloud: for each head, the weight on `position` averaged over the queries that see it."""
    num_heads, tokens, _ = weights.shape
    found = []
    for head in range(num_heads):
        total = 0.0
        for query in range(position, tokens):
            total += float(weights[head, query, position])
        found.append(total / (tokens - position))
    return found


def score_by_loops(weights: torch.Tensor, key_of_query) -> list[float]:
    """For each head, the mean weight from every query to key_of_query(query), over the queries with such a key."""
    num_heads, tokens, _ = weights.shape
    found = []
    for head in range(num_heads):
        values = [
            float(weights[head, query, key_of_query(query)])
            for query in range(tokens)
            if 0 <= key_of_query(query) < tokens
        ]
        found.append(sum(values) / len(values))
    return found


# --- Known by construction --------------------------------------------------------------------------------------


def test_a_head_that_puts_everything_on_the_first_token_has_importance_1_and_is_a_sink():
    resting = causal_pattern([0] * 6, 6)
    assert heads.importance(resting).tolist() == [1.0]
    assert attention_sinks.sink_rate(heads.importance(resting)) == 1.0


def test_an_even_head_gives_the_first_token_the_mean_of_one_over_i_plus_one():
    tokens = 6
    even = torch.tril(torch.ones(tokens, tokens)) / torch.arange(1, tokens + 1).unsqueeze(1)  # row i: 1 / (i + 1)
    expected = sum(1 / (query + 1) for query in range(tokens)) / tokens  # 0.408 at 6 tokens
    assert heads.importance(even).item() == pytest.approx(expected)
    assert heads.importance(even, position=5).item() == pytest.approx(1 / 6)  # the last key: one query sees it
    assert heads.even_importance(tokens) == pytest.approx(heads.importance(even).item())


def test_an_even_head_clears_epsilon_up_to_nine_tokens_and_not_from_ten_on():
    assert heads.even_importance(1) == 1.0 and heads.even_importance(2) == 0.75
    assert heads.even_importance(9) > attention_sinks.SINK_THRESHOLD > heads.even_importance(10)  # 0.314, 0.293


def test_a_synthetic_induction_pattern_scores_1_and_is_no_previous_token_head():
    length = 5
    # Query i reads the token after the first occurrence of its own token, i + 1 − L, when there is one.
    induction = causal_pattern([max(0, query + 1 - length) for query in range(2 * length)], 2 * length)
    assert heads.induction_score(induction, length).item() == pytest.approx(1.0)
    assert heads.previous_token_score(induction).item() < 0.2
    assert heads.duplicate_token_score(induction, length).item() == 0.0


def test_previous_token_and_duplicate_token_patterns_score_1_on_their_own_diagonals():
    length = 5
    previous = causal_pattern([max(0, query - 1) for query in range(2 * length)], 2 * length)
    duplicate = causal_pattern([max(0, query - length) for query in range(2 * length)], 2 * length)
    assert heads.previous_token_score(previous).item() == pytest.approx(1.0)
    assert heads.duplicate_token_score(duplicate, length).item() == pytest.approx(1.0)
    assert heads.induction_score(duplicate, length).item() < 0.2


def test_ranked_names_the_best_heads_by_layer_and_head():
    scores = torch.tensor([[0.1, 0.9, 0.2], [0.8, 0.0, 0.95]])
    assert heads.ranked(scores, 2) == [(1, 2, pytest.approx(0.95)), (0, 1, pytest.approx(0.9))]


def test_a_scan_gives_the_same_scores_whether_a_layers_maps_are_derived_together_or_one_head_at_a_time(monkeypatch):
    model, ids = tiny_decoder(), tuple(range(3, 40))
    measures = {"sink": heads.importance, "previous": heads.previous_token_score}
    together = heads.scan(model, ids, measures)
    monkeypatch.setattr(decoder_attention, "WHOLE_LAYER_MAP_BYTES", 0)  # as every layer of a long text is
    one_by_one = heads.scan(model, ids, measures)
    for name in measures:
        assert together[name].shape == (3, 6) and together[name].dtype == torch.float64
        assert torch.equal(together[name], one_by_one[name])


# --- On SmolLM2, against plain loops --------------------------------------------------------------------------


@pytest.mark.slow
def test_each_layers_maps_in_a_scan_are_the_forwards_own(chat):
    model = reading.decoder_of(chat)
    ids = readable.text_tokens(chat, "The capital of France is Paris.").ids
    scanned = [torch.stack(list(head_maps(attention))) for attention in each_layer_attention(model, ids)]
    assert len(scanned) == model.config.num_layers
    # layer_attention runs the blocks below untraced (torch's fused kernel), the scan traced: rounding apart.
    for layer in (0, 13, 29):
        torch.testing.assert_close(scanned[layer], layer_attention(model, ids, layer).weights[0], rtol=1e-4, atol=1e-5)


@pytest.mark.slow
def test_every_smollm2_heads_scores_equal_a_loop_over_heads_and_positions(chat):
    model = reading.decoder_of(chat)
    copy = heads.random_token_ids(SHORT_COPY, model.config.vocab_size, chat.tokenizer.get_added_tokens_decoder())
    ids = copy + copy
    scores = heads.scan(
        model,
        ids,
        {
            "sink": heads.importance,
            "induction": lambda weights: heads.induction_score(weights, SHORT_COPY),
            "previous": heads.previous_token_score,
            "duplicate": lambda weights: heads.duplicate_token_score(weights, SHORT_COPY),
        },
    )
    for layer, attention in enumerate(each_layer_attention(model, ids)):
        weights = torch.stack(list(head_maps(attention)))  # (H, T, T)
        assert scores["sink"][layer].tolist() == pytest.approx(importance_by_loops(weights, 0), abs=1e-6)
        induction = score_by_loops(weights, lambda query: query + 1 - SHORT_COPY)
        assert scores["induction"][layer].tolist() == pytest.approx(induction, abs=1e-6)
        previous = score_by_loops(weights, lambda query: query - 1)
        assert scores["previous"][layer].tolist() == pytest.approx(previous, abs=1e-6)
        duplicate = score_by_loops(weights, lambda query: query - SHORT_COPY)
        assert scores["duplicate"][layer].tolist() == pytest.approx(duplicate, abs=1e-6)


def test_random_tokens_are_the_same_for_a_seed_and_never_special(chat):
    special = set(chat.tokenizer.get_added_tokens_decoder())
    drawn = heads.random_token_ids(200, 49_152, special)
    assert drawn == heads.random_token_ids(200, 49_152, special)
    assert drawn != heads.random_token_ids(200, 49_152, special, seed=1)
    assert not special & set(drawn)


# --- Losses and experiments -----------------------------------------------------------------------------------


def test_token_losses_average_to_the_models_cross_entropy_on_the_text(chat):
    model = reading.decoder_of(chat)
    ids = readable.text_tokens(chat, "The capital of France is Paris.").ids
    logits = model(as_batch(ids, model)).logits[0]
    by_hand = [-float(logits[position].log_softmax(-1)[ids[position + 1]]) for position in range(len(ids) - 1)]
    assert heads.token_losses(model, ids).tolist() == pytest.approx(by_hand, abs=1e-4)


def test_copy_losses_take_each_copy_from_its_second_token_on():
    length = 4  # token t's loss at index t - 1: tokens 1..3 are the first copy's, 5..7 the second's
    losses = torch.tensor([1.0, 1.0, 1.0, 100.0, 2.0, 2.0, 2.0])
    assert heads.copy_losses(losses, length) == heads.CopyLosses(first=1.0, second=2.0)


def test_without_the_first_token_every_later_row_sums_to_1_and_keeps_its_proportions():
    weights = torch.tensor([[1.0, 0.0, 0.0], [0.5, 0.5, 0.0], [0.6, 0.1, 0.3]])
    removed = heads.without_first_token(weights)
    expected = torch.tensor([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.25, 0.75]])
    torch.testing.assert_close(removed, expected)


def test_switching_heads_off_groups_them_by_layer():
    assert heads.heads_off([(17, 4), (18, 6), (17, 3)]) == {
        17: AttentionEdit(heads_off=(3, 4)),
        18: AttentionEdit(heads_off=(6,)),
    }


def test_removing_a_layers_sink_changes_the_loss_and_leaves_the_model_as_it_was(chat):
    model = reading.decoder_of(chat)
    ids = readable.text_tokens(chat, "time flies like an arrow").ids
    removal = heads.remove_sink(model, ids, layer=3)
    assert removal.loss_before == pytest.approx(float(heads.token_losses(model, ids).mean()), abs=1e-5)
    assert removal.loss_after > removal.loss_before + 0.5  # 6.74 -> 7.78 nats per token in layer 3
    assert heads.remove_sink(model, ids, layer=3).loss_before == removal.loss_before  # nothing was kept


@pytest.mark.slow
def test_smollm2_predicts_a_repeated_copy_and_not_once_its_induction_heads_are_off(chat):
    test = heads.induction_test(reading.decoder_of(chat), chat.tokenizer.get_added_tokens_decoder())
    assert test.losses.second < test.losses.first / 3  # 2.6 against 14.5 nats per token
    assert test.losses_without_them.second > 2 * test.losses.second  # 11.5 with the five best switched off
    assert test.switched_off[0] == (18, 6)  # score 0.91
