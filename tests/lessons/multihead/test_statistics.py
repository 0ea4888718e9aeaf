"""Head statistics and pooled maps, checked on small attention matrices whose answers are known by hand."""

from __future__ import annotations

import math

import pytest
import torch

from lessons.multihead import statistics as head_stats

T = 4


def uniform(tokens: int = T) -> torch.Tensor:
    """Every query spreads its weight evenly: each entry 1/T."""
    return torch.full((tokens, tokens), 1.0 / tokens)


def previous_token_head(tokens: int = T) -> torch.Tensor:
    """Query i puts all its weight on token i − 1; token 0, which has no previous token, looks at token 1."""
    weights = torch.zeros(tokens, tokens)
    weights[0, 1] = 1.0
    for query in range(1, tokens):
        weights[query, query - 1] = 1.0
    return weights


def test_a_uniform_row_has_entropy_log_t_and_a_one_hot_row_has_entropy_zero():
    assert torch.allclose(head_stats.row_entropy(uniform()), torch.full((T,), math.log(4)))  # 1.3863 nats
    assert torch.equal(head_stats.row_entropy(torch.eye(T)), torch.zeros(T))  # 0·log 0 counts as 0, not NaN


def test_attention_distance_weighs_each_key_by_how_far_it_is():
    # A uniform row of 4 keys: query 0 sees distances 0,1,2,3 -> 1.5; query 1 sees 1,0,1,2 -> 1.0.
    assert head_stats.attention_distance(uniform()).tolist() == [1.5, 1.0, 1.0, 1.5]
    assert head_stats.attention_distance(torch.eye(T)).tolist() == [0.0] * T


def test_a_previous_token_head_has_previous_share_one_distance_one_and_no_self_attention():
    statistics = head_stats.head_statistics(
        previous_token_head()[None, None],  # (L=1, H=1, T, T)
        cls_keys=torch.tensor([True, False, False, False]),
        sep_keys=torch.tensor([False, False, False, True]),
    )
    assert statistics.previous_share.item() == 1.0
    assert statistics.distance.item() == 1.0
    assert statistics.self_share.item() == 0.0
    assert statistics.entropy.item() == 0.0
    # Only query 1 looks at [CLS] (token 0), and nobody looks at [SEP] (token 3): 1/4 and 0.
    assert statistics.cls_share.item() == 0.25
    assert statistics.sep_share.item() == 0.0


def test_shares_on_cls_sep_and_self_add_the_weights_of_those_keys():
    row = torch.tensor([[0.5, 0.2, 0.2, 0.1]])  # one query (token 0) over four keys
    assert head_stats.share_on_keys(row, torch.tensor([True, False, False, False])).item() == 0.5
    assert head_stats.share_on_keys(row, torch.tensor([False, False, False, True])).item() == pytest.approx(0.1)
    weights = torch.tensor([[0.7, 0.3], [0.4, 0.6]])
    assert head_stats.self_share(weights).tolist() == pytest.approx([0.7, 0.6])
    assert head_stats.previous_share(weights).tolist() == pytest.approx([0.4])  # token 1 -> token 0 only


def test_statistics_of_a_stack_keep_each_layer_and_head_in_its_own_cell():
    # Layer 0: head 0 uniform, head 1 identity; layer 1: head 0 previous-token, head 1 uniform.
    stack = torch.stack([torch.stack([uniform(), torch.eye(T)]), torch.stack([previous_token_head(), uniform()])])
    marks = torch.tensor([True, False, False, False]), torch.tensor([False, False, False, True])
    statistics = head_stats.head_statistics(stack, *marks)
    assert statistics.entropy.shape == (2, 2)
    log4 = math.log(4)
    assert torch.allclose(statistics.entropy, torch.tensor([[log4, 0.0], [0.0, log4]]))
    assert torch.allclose(statistics.self_share, torch.tensor([[0.25, 1.0], [0.0, 0.25]]))
    assert torch.allclose(statistics.previous_share, torch.tensor([[0.25, 0.0], [1.0, 0.25]]))
    rows = statistics.rows()
    assert [(row["layer"], row["head"]) for row in rows] == [(0, 0), (0, 1), (1, 0), (1, 1)]
    assert rows[2]["previous_share"] == 1.0 and rows[1]["self_share"] == 1.0
    assert set(rows[0]) == {"layer", "head", *head_stats.STATISTICS}


def test_a_one_token_text_has_no_previous_token_and_no_nan():
    statistics = head_stats.head_statistics(torch.ones(1, 1, 1, 1), torch.tensor([True]), torch.tensor([False]))
    assert statistics.previous_share.item() == 0.0
    assert statistics.cls_share.item() == 1.0 and statistics.entropy.item() == 0.0


def test_token_marks_find_the_special_tokens_by_name():
    assert head_stats.token_marks(["[CLS]", "hi", "[SEP]"], "[SEP]").tolist() == [False, False, True]
    assert head_stats.token_marks(["a", "b"], None).tolist() == [False, False]


def test_statistic_ranges_match_what_each_statistic_can_reach():
    assert head_stats.statistic_range("entropy", 7) == (0.0, pytest.approx(math.log(7)))
    assert head_stats.statistic_range("distance", 7) == (0.0, 6.0)
    assert head_stats.statistic_range("cls_share", 7) == (0.0, 1.0)


def test_real_heads_stay_within_the_bounds(embedded):
    from lessons.common.runs import run_encoder

    run = run_encoder(embedded.model, embedded.tokenizer, "time flies like an arrow")
    tokens = run.tokenized.tokens
    statistics = head_stats.head_statistics(
        run.attention_weights, head_stats.token_marks(tokens, "[CLS]"), head_stats.token_marks(tokens, "[SEP]")
    )
    assert statistics.entropy.shape == (6, 12)
    assert float(statistics.entropy.max()) <= math.log(len(tokens)) + 1e-6
    for name in ("cls_share", "sep_share", "self_share", "previous_share"):
        values = getattr(statistics, name)
        assert float(values.min()) >= 0.0 and float(values.max()) <= 1.0 + 1e-6, name
    # MiniLM's layer 0, head 2 reads the previous token almost exclusively on this sentence.
    assert statistics.previous_share[0, 2].item() > 0.99


def resting_statistics(sep_weight: float, tokens: int = 5) -> head_stats.HeadStatistics:
    """One layer of two heads on [CLS] … [SEP]: head 0 puts `sep_weight` of every row on [SEP] and the rest on
    token 1; head 1 puts every row wholly on [CLS]."""
    weights = torch.zeros(1, 2, tokens, tokens)  # (L, H, T, T)
    weights[0, 0, :, -1] = sep_weight
    weights[0, 0, :, 1] = 1 - sep_weight
    weights[0, 1, :, 0] = 1.0
    positions = torch.arange(tokens)
    return head_stats.head_statistics(weights, cls_keys=positions == 0, sep_keys=positions == tokens - 1)


def test_a_head_with_all_its_weight_on_sep_rests_there_and_one_on_cls_rests_on_cls():
    resting = head_stats.resting_heads(resting_statistics(sep_weight=1.0), tokens=5)
    assert (resting.sep.tolist(), resting.cls.tolist(), resting.either.tolist()) == ([1], [1], [2])
    assert resting.heads == 2 and resting.threshold == 0.3
    assert resting.rows() == [{"layer": 0, "[CLS]": 1, "[SEP]": 1, "either": 2}]


def test_a_head_at_exactly_the_threshold_does_not_rest_and_one_just_above_does():
    at_threshold = head_stats.resting_heads(resting_statistics(sep_weight=0.3), tokens=5)
    assert at_threshold.sep.tolist() == [0] and at_threshold.either.tolist() == [1]  # only the [CLS] head
    just_above = head_stats.resting_heads(resting_statistics(sep_weight=0.31), tokens=5)
    assert just_above.sep.tolist() == [1]


def test_an_even_spread_counts_as_resting_only_on_texts_of_three_tokens_or_fewer():
    # 1/3 = 0.33 > 0.3, 1/4 = 0.25 is not: [CLS] word [SEP] is too short to tell a resting head from an even one.
    assert head_stats.resting_heads(resting_statistics(1.0, tokens=3), tokens=3).even_spread_counts
    assert not head_stats.resting_heads(resting_statistics(1.0, tokens=4), tokens=4).even_spread_counts
