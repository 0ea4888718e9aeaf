"""An experiment's change to one layer's attention, passed with the call (`AttentionEdit`): it does what it says
in the layer it names, and nothing anywhere else."""

from __future__ import annotations

import copy

import pytest
import torch

import anatomy.attention
from anatomy.attention import AttentionEdit, MultiHeadAttention
from anatomy.config import DecoderConfig
from anatomy.models import DecoderOnlyLM

pytestmark = pytest.mark.usefixtures("no_autograd")

LLAMA_LIKE = DecoderConfig(
    vocab_size=60,
    max_positions=32,
    width=24,
    num_heads=6,
    num_kv_heads=2,
    ff_width=40,
    num_layers=3,
    positions="rotary",
    norm_kind="rms",
    feed_forward="gated",
    activation="silu",
    bias=False,
)


def tiny_model() -> DecoderOnlyLM:
    torch.manual_seed(0)
    return DecoderOnlyLM(LLAMA_LIKE).eval()


def some_ids() -> torch.Tensor:
    return torch.randint(0, 60, (1, 12), generator=torch.Generator().manual_seed(1))


def test_an_edit_that_changes_nothing_gives_the_models_own_logits():
    model, ids = tiny_model(), some_ids()
    plain = model(ids).logits
    edited = model(ids, attention_edits={layer: AttentionEdit() for layer in range(3)}).logits
    torch.testing.assert_close(edited, plain, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("heads_together_up_to", [anatomy.attention.ALL_HEADS_AT_ONCE_BYTES, 0], ids=["short", "long"])
def test_an_edit_that_changes_nothing_runs_the_traced_forwards_arithmetic_and_gives_its_logits_bit_for_bit(
    monkeypatch, heads_together_up_to
):
    """A short text's heads are weighed together, a long one's one at a time (set here by the size limit)."""
    monkeypatch.setattr(anatomy.attention, "ALL_HEADS_AT_ONCE_BYTES", heads_together_up_to)
    model, ids = tiny_model(), some_ids()
    traced = model(ids, trace=True).logits  # an edit takes the same way as the traced forward
    edited = model(ids, attention_edits={layer: AttentionEdit(reweight=lambda weights: weights) for layer in range(3)})
    assert torch.equal(edited.logits, traced)


@pytest.mark.parametrize("heads_together_up_to", [anatomy.attention.ALL_HEADS_AT_ONCE_BYTES, 0], ids=["short", "long"])
def test_a_reweighting_sees_one_heads_weights_at_a_time_each_head_once(monkeypatch, heads_together_up_to):
    monkeypatch.setattr(anatomy.attention, "ALL_HEADS_AT_ONCE_BYTES", heads_together_up_to)
    model, ids = tiny_model(), some_ids()
    seen = []

    def unchanged(weights):
        seen.append(weights.shape)
        return weights

    model(ids, attention_edits={1: AttentionEdit(reweight=unchanged)})
    assert seen == [(1, 1, 12, 12)] * 6  # 6 query heads of 12 tokens; not one (1, 6, 12, 12) block


def test_layers_before_the_edited_one_are_untouched_bit_for_bit():
    model, ids = tiny_model(), some_ids()
    plain = model(ids)
    edited = model(ids, attention_edits={2: AttentionEdit(heads_off=(0, 1, 2))})
    for depth in range(3):  # the embeddings and the outputs of layers 0 and 1
        assert torch.equal(edited.hidden_states[depth], plain.hidden_states[depth])
    assert not torch.allclose(edited.hidden_states[3], plain.hidden_states[3])


def test_switching_every_head_of_a_layer_off_equals_a_layer_whose_output_projection_is_zero():
    model, ids = tiny_model(), some_ids()
    silenced = copy.deepcopy(model)
    silenced.layers[1].attention.output.weight.zero_()  # no bias in a Llama-family layer: its attention adds 0
    edited = model(ids, attention_edits={1: AttentionEdit(heads_off=tuple(range(6)))}).logits
    torch.testing.assert_close(edited, silenced(ids).logits, rtol=1e-5, atol=1e-5)


def test_a_reweighting_that_puts_every_query_on_the_first_token_gives_every_token_the_first_tokens_value():
    torch.manual_seed(0)
    attention = MultiHeadAttention(16, 4, bias=False)
    hidden = torch.randn(1, 5, 16)
    on_first = torch.zeros(5, 5)
    on_first[:, 0] = 1.0
    output, _ = attention(hidden, edit=AttentionEdit(reweight=lambda weights: on_first.expand_as(weights)))
    for position in range(1, 5):
        torch.testing.assert_close(output[0, position], output[0, 0])


def test_an_edited_attention_refuses_to_record_a_trace_that_would_show_unedited_weights():
    attention = MultiHeadAttention(16, 4)
    with pytest.raises(ValueError, match="records no trace"):
        attention(torch.randn(1, 3, 16), trace=True, edit=AttentionEdit(heads_off=(0,)))
