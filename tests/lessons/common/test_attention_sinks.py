"""The one rule that counts resting heads, shared by the language-model lesson (sinks on the first token) and
the multi-head lesson (heads resting on [CLS] or [SEP]): strictly above ε = 0.3."""

from __future__ import annotations

import pytest
import torch

from lessons.common import attention_sinks


def test_the_threshold_is_gu_et_al_s_epsilon():
    assert attention_sinks.SINK_THRESHOLD == 0.3


def test_the_sink_rate_counts_only_heads_above_the_threshold():
    importance = torch.tensor([[0.9, 0.3, 0.31], [0.0, 0.29, 0.5]])
    assert attention_sinks.sink_heads(importance).tolist() == [[True, False, True], [False, False, True]]
    assert attention_sinks.sink_rate(importance) == pytest.approx(3 / 6)


def test_a_head_at_exactly_the_threshold_is_not_a_sink_and_another_threshold_can_be_asked_for():
    assert attention_sinks.sink_rate(torch.tensor([0.3])) == 0.0
    assert attention_sinks.sink_rate(torch.tensor([0.3, 0.1]), threshold=0.2) == 0.5
