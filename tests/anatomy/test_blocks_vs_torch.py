"""The anatomy blocks compute what torch's own Transformer layers compute, given the same weights.

The block of "Attention Is All You Need" is multi-head attention, a ReLU feed-forward network and post-LN; torch's
nn.TransformerEncoderLayer / nn.TransformerDecoderLayer are that block. nn.MultiheadAttention keeps W_Q, W_K
and W_V stacked in one `in_proj_weight` of shape (3·D, D): rows [W_Q; W_K; W_V]. Torch's boolean masks
mean True = *masked*; ours mean True = *allowed*, so every mask handed to torch is negated.
"""

from __future__ import annotations

import dataclasses

import pytest
import torch
from torch import nn

from anatomy.attention import MultiHeadAttention
from anatomy.blocks import DecoderLayer, EncoderLayer
from anatomy.config import DecoderConfig, EncoderConfig
from anatomy.masks import causal_mask, padding_mask

pytestmark = pytest.mark.usefixtures("no_autograd")

WIDTH, HEADS, FF_WIDTH = 16, 4, 32
TOLERANCE = 1e-5


def encoder_config(norm: str) -> EncoderConfig:
    return EncoderConfig(
        width=WIDTH,
        num_heads=HEADS,
        ff_width=FF_WIDTH,
        activation="relu",
        norm_placement=norm,
        layer_norm_eps=1e-5,
        dropout=0.0,
        num_layers=1,
    )


def copy_attention(ours: MultiHeadAttention, theirs: nn.MultiheadAttention) -> None:
    """Our four D×D projections into torch's fused in_proj (rows [W_Q; W_K; W_V]) and out_proj."""
    theirs.in_proj_weight.copy_(torch.cat([ours.query.weight, ours.key.weight, ours.value.weight]))
    theirs.in_proj_bias.copy_(torch.cat([ours.query.bias, ours.key.bias, ours.value.bias]))
    theirs.out_proj.load_state_dict(ours.output.state_dict())


def copy_sublayers(ours, theirs) -> None:
    """Self-attention, feed-forward and the norms of one of our blocks into a torch layer."""
    copy_attention(ours.attention, theirs.self_attn)
    theirs.linear1.load_state_dict(ours.feed_forward.expand.state_dict())
    theirs.linear2.load_state_dict(ours.feed_forward.contract.state_dict())
    theirs.norm1.load_state_dict(ours.attention_norm.state_dict())
    last_norm = theirs.norm3 if isinstance(theirs, nn.TransformerDecoderLayer) else theirs.norm2
    last_norm.load_state_dict(ours.feed_forward_norm.state_dict())


def randomize_layer_norms(module: nn.Module) -> None:
    """LayerNorms start as the identity (γ=1, β=0); random ones make a swapped norm detectable."""
    for norm in (m for m in module.modules() if isinstance(m, nn.LayerNorm)):
        norm.weight.uniform_(0.5, 1.5)
        norm.bias.uniform_(-0.5, 0.5)


def encoder_pair(norm: str):
    torch.manual_seed(0)
    ours = EncoderLayer(encoder_config(norm)).eval()
    randomize_layer_norms(ours)
    theirs = nn.TransformerEncoderLayer(
        d_model=WIDTH,
        nhead=HEADS,
        dim_feedforward=FF_WIDTH,
        dropout=0.0,
        activation="relu",
        batch_first=True,
        norm_first=(norm == "pre"),
    ).eval()
    copy_sublayers(ours, theirs)
    return ours, theirs


@pytest.fixture
def hidden():
    return torch.randn(2, 6, WIDTH, generator=torch.Generator().manual_seed(1))  # (B, T, D)


def largest_difference(left, right) -> float:
    return (left - right).abs().max().item()


def test_our_causal_mask_is_the_negation_of_torchs_square_subsequent_mask():
    for tokens in (1, 4, 9):
        torch_mask = nn.Transformer.generate_square_subsequent_mask(tokens)  # 0 allowed, −∞ forbidden
        assert torch.equal(~causal_mask(tokens), torch_mask == float("-inf"))


@pytest.mark.parametrize("norm", ["post", "pre"])
def test_encoder_layer_equals_torch_transformer_encoder_layer(norm, hidden):
    ours, theirs = encoder_pair(norm)
    output, _ = ours(hidden)
    expected = theirs(hidden)
    assert output.shape == expected.shape == (2, 6, WIDTH)
    assert largest_difference(output, expected) <= TOLERANCE


def test_post_and_pre_norm_layers_differ_so_the_placement_is_really_tested(hidden):
    post, _ = encoder_pair("post")
    pre, _ = encoder_pair("pre")
    assert largest_difference(post(hidden)[0], pre(hidden)[0]) > 0.1


@pytest.mark.parametrize("norm", ["post", "pre"])
def test_encoder_layer_with_causal_mask_equals_torch_with_negated_mask(norm, hidden):
    ours, theirs = encoder_pair(norm)
    allowed = causal_mask(6)  # True = may attend (ours)
    output, layer_trace = ours(hidden, allowed, trace=True)
    expected = theirs(hidden, src_mask=~allowed)  # True = masked (torch)
    assert largest_difference(output, expected) <= TOLERANCE
    assert largest_difference(output, ours(hidden)[0]) > 1e-3  # the mask changed the answer
    assert torch.all(layer_trace.attention.weights.triu(diagonal=1) == 0.0)


def test_attention_equals_nn_multihead_attention_outputs_and_per_head_weights(hidden):
    torch.manual_seed(2)
    ours = MultiHeadAttention(WIDTH, HEADS).eval()
    theirs = nn.MultiheadAttention(WIDTH, HEADS, batch_first=True).eval()
    copy_attention(ours, theirs)
    output, attention_trace = ours(hidden, trace=True)
    expected, expected_weights = theirs(hidden, hidden, hidden, need_weights=True, average_attn_weights=False)
    assert attention_trace.weights.shape == expected_weights.shape == (2, HEADS, 6, 6)
    assert largest_difference(output, expected) <= TOLERANCE
    assert largest_difference(attention_trace.weights, expected_weights) <= TOLERANCE


def test_attention_with_padding_equals_nn_multihead_attention_with_key_padding_mask(hidden):
    torch.manual_seed(3)
    ours = MultiHeadAttention(WIDTH, HEADS).eval()
    theirs = nn.MultiheadAttention(WIDTH, HEADS, batch_first=True).eval()
    copy_attention(ours, theirs)
    real_tokens = torch.tensor([[1, 1, 1, 1, 1, 1], [1, 1, 1, 0, 0, 0]])  # (B, S) tokenizer style
    output, attention_trace = ours(hidden, mask=padding_mask(real_tokens), trace=True)
    expected, expected_weights = theirs(
        hidden, hidden, hidden, key_padding_mask=~real_tokens.bool(), need_weights=True, average_attn_weights=False
    )
    assert largest_difference(output, expected) <= TOLERANCE
    assert largest_difference(attention_trace.weights, expected_weights) <= TOLERANCE
    assert torch.all(attention_trace.weights[1, :, :, 3:] == 0.0)  # padding keys get nothing


def decoder_pair():
    torch.manual_seed(4)
    config = DecoderConfig(
        width=WIDTH,
        num_heads=HEADS,
        ff_width=FF_WIDTH,
        activation="relu",
        norm_placement="post",
        layer_norm_eps=1e-5,
        dropout=0.0,
        cross_attention=True,
        num_layers=1,
        vocab_size=10,
        max_positions=8,
    )
    ours = DecoderLayer(config).eval()
    randomize_layer_norms(ours)
    theirs = nn.TransformerDecoderLayer(
        d_model=WIDTH,
        nhead=HEADS,
        dim_feedforward=FF_WIDTH,
        dropout=0.0,
        activation="relu",
        batch_first=True,
        norm_first=False,
    ).eval()
    copy_sublayers(ours, theirs)
    copy_attention(ours.cross_attention, theirs.multihead_attn)
    theirs.norm2.load_state_dict(ours.cross_attention_norm.state_dict())
    return ours, theirs


@pytest.fixture
def target_and_memory():
    generator = torch.Generator().manual_seed(5)
    target = torch.randn(2, 5, WIDTH, generator=generator)  # (B, T=5, D) decoder tokens
    memory = torch.randn(2, 7, WIDTH, generator=generator)  # (B, S=7, D) encoder output
    return target, memory


def test_decoder_layer_equals_torch_transformer_decoder_layer_with_causal_tgt_mask(target_and_memory):
    target, memory = target_and_memory
    ours, theirs = decoder_pair()
    output, _ = ours(target, memory=memory)
    expected = theirs(target, memory, tgt_mask=~causal_mask(5))
    assert output.shape == expected.shape == (2, 5, WIDTH)
    assert largest_difference(output, expected) <= TOLERANCE
    unmasked = theirs(target, memory)  # without the causal mask torch gives another answer
    assert largest_difference(output, unmasked) > 1e-3


def test_decoder_cross_attention_weights_are_rectangular_5_queries_by_7_keys(target_and_memory):
    target, memory = target_and_memory
    ours, _ = decoder_pair()
    _, layer_trace = ours(target, memory=memory, trace=True)
    cross = layer_trace.cross_attention
    assert cross.weights.shape == (2, HEADS, 5, 7)  # (B, H, T, S)
    assert cross.key.shape == cross.value.shape == (2, HEADS, 7, WIDTH // HEADS)
    assert torch.allclose(cross.weights.sum(dim=-1), torch.ones(2, HEADS, 5), atol=1e-6)
    assert layer_trace.attention.weights.shape == (2, HEADS, 5, 5)
    assert torch.all(layer_trace.attention.weights.triu(diagonal=1) == 0.0)


def test_decoder_layer_with_cross_attention_refuses_to_run_without_memory(target_and_memory):
    ours, _ = decoder_pair()
    with pytest.raises(ValueError, match="memory"):
        ours(target_and_memory[0])


@pytest.mark.parametrize("kind", ["encoder", "decoder"])
def test_in_training_the_feed_forward_output_passes_dropout_once_as_in_the_paper(kind, hidden):
    """ "Attention Is All You Need", §5.4: dropout on the output of each sub-layer, before it is added. An element
    dropout keeps is scaled by 1/(1 − p), so with p = 0.5 what the feed-forward adds to the stream is 0 or twice
    its contraction's output, element by element (4 times, had it passed dropout twice)."""
    torch.manual_seed(0)
    if kind == "encoder":
        layer = EncoderLayer(dataclasses.replace(encoder_config("pre"), dropout=0.5))
    else:
        layer = DecoderLayer(DecoderConfig(width=WIDTH, num_heads=HEADS, ff_width=FF_WIDTH, num_layers=1, dropout=0.5))
    layer.train()
    contracted = []
    layer.feed_forward.contract.register_forward_hook(lambda _module, _inputs, output: contracted.append(output))
    _, trace = layer(hidden, trace=True)
    added = trace.feed_forward_residual - trace.attention_residual  # pre-LN: the stream before and after
    ratios = (added / contracted[0]).flatten()
    kept = ratios[ratios.abs() > 1e-3]
    assert len(kept) > 0 and torch.allclose(kept, torch.full_like(kept, 2.0), atol=1e-4)
