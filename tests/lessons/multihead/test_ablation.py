"""Recombining heads and switching them off: on the real MiniLM, and on a small pre-LN encoder."""

from __future__ import annotations

import copy
import hashlib

import pytest
import torch

from anatomy.config import EncoderConfig
from anatomy.models import Encoder
from lessons.common.runs import run_encoder
from lessons.multihead import ablation

TEXT = "time flies like an arrow"


def state_hash(model: torch.nn.Module) -> str:
    """A fingerprint of every weight, bit for bit."""
    digest = hashlib.sha256()
    for name, tensor in model.state_dict().items():
        digest.update(name.encode())
        digest.update(tensor.detach().cpu().contiguous().numpy().tobytes())
    return digest.hexdigest()


@pytest.fixture(scope="module")
def run(embedded):
    return run_encoder(embedded.model, embedded.tokenizer, TEXT)


def with_output_columns_zeroed(model: Encoder, layer: int, heads, head_width: int) -> Encoder:
    """An independent copy whose W_O ignores the given heads: the slow, obviously-right way to ablate."""
    copied = copy.deepcopy(model)
    with torch.no_grad():
        for head in heads:
            copied.layers[layer].attention.output.weight[:, head * head_width : (head + 1) * head_width] = 0.0
    return copied


@pytest.mark.slow
def test_switching_heads_off_leaves_the_shared_model_bit_identical(embedded, run):
    before = state_hash(embedded.model)
    ablation.ablate_heads(embedded.model, run.output.trace, layer=1, heads_off=[0, 5, 11])
    assert state_hash(embedded.model) == before
    again = run_encoder(embedded.model, embedded.tokenizer, TEXT)
    assert torch.equal(again.output.last_hidden_state, run.output.last_hidden_state)


@pytest.mark.slow
def test_switching_nothing_off_reproduces_the_original_outputs(embedded, run):
    for layer in (0, 3, 5):
        result = ablation.ablate_heads(embedded.model, run.output.trace, layer=layer, heads_off=[])
        assert (result.ablated_states - result.original_states).abs().max().item() <= 1e-6
        assert (result.ablated_final - run.output.last_hidden_state[0]).abs().max().item() <= 1e-6
        assert result.attention_shift.abs().max().item() <= 1e-6
        assert torch.allclose(result.token_similarity, torch.ones(7, 7), atol=1e-6)  # (L + 1, T) = (7, 7)


def test_switching_a_head_off_changes_its_layer_and_everything_after_it(embedded, run):
    result = ablation.ablate_heads(embedded.model, run.output.trace, layer=2, heads_off=[7])
    difference = (result.ablated_states - result.original_states).abs().amax(dim=(1, 2))  # (L + 1,)
    assert difference[:3].max().item() == 0.0  # embeddings and layers 0, 1 come before the ablation
    assert difference[3:].min().item() > 1e-3  # the outputs of layers 2 … 5 all moved
    assert result.attention_shift[:3].max().item() == 0.0  # layers 0–2 attend exactly as before
    assert result.attention_shift[3:].min().item() > 0.0  # every later head attends a little differently
    assert result.final_similarity[0].item() < 1.0  # the final [CLS] vector changed direction
    assert result.heads_off == (7,) and result.layer == 2


@pytest.mark.slow
def test_switching_heads_off_equals_zeroing_their_columns_of_w_o_in_a_copy(embedded, run):
    heads, layer = [2, 9], 1
    result = ablation.ablate_heads(embedded.model, run.output.trace, layer=layer, heads_off=heads)
    copied = with_output_columns_zeroed(embedded.model, layer, heads, embedded.config.head_width)
    reference = copied(torch.tensor([run.tokenized.input_ids]), torch.tensor([run.tokenized.token_type_ids]))
    assert torch.allclose(result.ablated_final, reference.last_hidden_state[0], atol=1e-5)


def test_a_pre_ln_stack_is_ablated_through_its_final_norm_too():
    torch.manual_seed(0)
    config = EncoderConfig(
        vocab_size=40, max_positions=16, width=16, num_layers=3, num_heads=4, ff_width=32, norm_placement="pre"
    )
    model = Encoder(config).eval()
    ids = torch.randint(0, 40, (1, 9))
    traced = model(ids, trace=True)
    untouched = ablation.ablate_heads(model, traced.trace, layer=0, heads_off=[])
    assert torch.equal(untouched.ablated_final, traced.last_hidden_state[0])
    result = ablation.ablate_heads(model, traced.trace, layer=0, heads_off=[1])
    reference = with_output_columns_zeroed(model, 0, [1], config.head_width)(ids)
    assert torch.allclose(result.ablated_final, reference.last_hidden_state[0], atol=1e-5)
    assert not torch.allclose(result.ablated_final, traced.last_hidden_state[0], atol=1e-3)


def test_concatenating_the_heads_is_exactly_the_traced_concatenation(embedded, run):
    layer, token = 3, 2  # "flies"
    attention = embedded.model.layers[layer].attention
    result = ablation.recombine_heads(attention, run.output.trace.layers[layer].attention, token)
    assert result.head_outputs.shape == (12, 32) and result.concatenated.shape == (384,)
    assert result.concatenation_gap == 0.0
    assert torch.equal(result.concatenated[32:64], result.head_outputs[1])  # head 1 fills features 32 … 63
    assert result.output_gap < 1e-5  # concat · W_Oᵀ + b, recomputed here, matches the traced output
    assert result.sum_gap < 1e-5  # and so does the sum of the twelve per-head contributions plus b
    assert result.contribution_norms.shape == (12,) and result.contribution_norms.min().item() > 0.0


def test_cosine_similarity_and_attention_shift_on_hand_made_numbers():
    assert ablation.cosine_similarity(torch.tensor([1.0, 0.0]), torch.tensor([0.0, 2.0])).item() == 0.0
    assert ablation.cosine_similarity(torch.tensor([1.0, 1.0]), torch.tensor([3.0, 3.0])).item() == pytest.approx(1.0)
    # Rows: identical (shift 0), opposite one-hots (shift 1); the mean over the two rows is 0.5.
    before = torch.tensor([[0.5, 0.5], [1.0, 0.0]])
    after = torch.tensor([[0.5, 0.5], [0.0, 1.0]])
    assert ablation.attention_shift(before, after).item() == 0.5


def test_states_by_depth_stacks_the_embeddings_and_each_layer_output(run):
    states = ablation.states_by_depth(run.output.trace)
    assert states.shape == (7, 7, 384)  # (L + 1, T, D)
    assert torch.equal(states[0], run.output.trace.embeddings.output[0])
    assert torch.equal(states[-1], run.output.last_hidden_state[0])
