"""The switches that turn the GPT-2 decoder into a Llama-family model (SmolLM2), each checked on its own:
RMSNorm, rotary positions, grouped-query attention, the gated feed-forward, the KV cache's causal mask, and
the parameter count of SmolLM2-135M from its configuration alone."""

from __future__ import annotations

import pytest
import torch

from anatomy.attention import MultiHeadAttention
from anatomy.blocks import DecoderLayer, rotation_of
from anatomy.config import PRESETS, SMOLLM2_135M, DecoderConfig, config_from_hf, parameter_breakdown, parameter_count
from anatomy.feedforward import FeedForward
from anatomy.masks import causal_mask
from anatomy.models import DecoderOnlyLM
from anatomy.norms import RMSNorm, make_norm
from anatomy.rotary import Rotation, rotate

pytestmark = pytest.mark.usefixtures("no_autograd")

# HuggingFaceTB/SmolLM2-135M-Instruct's config.json, the fields that shape the model.
SMOLLM2_CONFIG_JSON = {
    "architectures": ["LlamaForCausalLM"],
    "model_type": "llama",
    "hidden_act": "silu",
    "hidden_size": 576,
    "intermediate_size": 1536,
    "max_position_embeddings": 8192,
    "num_attention_heads": 9,
    "num_hidden_layers": 30,
    "num_key_value_heads": 3,
    "rms_norm_eps": 1e-05,
    "rope_theta": 100000,
    "rope_scaling": None,
    "tie_word_embeddings": True,
    "vocab_size": 49152,
}


def randn(*shape: int, seed: int = 0) -> torch.Tensor:
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed))


def test_rms_norm_equals_transformers_llama_rms_norm():
    from transformers.models.llama.modeling_llama import LlamaRMSNorm

    ours, theirs = RMSNorm(16, eps=1e-5), LlamaRMSNorm(16, eps=1e-5)
    gain = 1 + randn(16, seed=1) / 10
    ours.weight.copy_(gain)
    theirs.weight.copy_(gain)
    x = randn(2, 5, 16) * 3
    assert torch.equal(ours(x), theirs(x))
    # Every token's vector ends with a root mean square of 1 before the gain: divide the gain back out.
    assert torch.allclose((ours(x) / gain).pow(2).mean(-1), torch.ones(2, 5), atol=1e-4)


def test_make_norm_builds_the_kind_the_config_names():
    assert isinstance(make_norm("rms", 8, 1e-5), RMSNorm)
    layer_norm = make_norm("layer", 8, 1e-12)
    assert isinstance(layer_norm, torch.nn.LayerNorm) and layer_norm.eps == 1e-12


def test_rotated_query_and_key_dot_product_depends_only_on_their_distance():
    query, key = randn(1, 1, 1, 8, seed=2), randn(1, 1, 1, 8, seed=3)  # (B, H, T, d_head)

    def score(query_position: int, key_position: int) -> float:
        rotated_query = rotate(query, torch.tensor([query_position]), theta=10_000.0)
        rotated_key = rotate(key, torch.tensor([key_position]), theta=10_000.0)
        return (rotated_query * rotated_key).sum().item()

    for distance in (0, 1, 7, 100):
        scores = [score(start + distance, start) for start in (0, 3, 50, 1000)]
        assert max(scores) - min(scores) < 1e-4, f"distance {distance}: {scores}"
    by_distance = [score(distance, 0) for distance in (0, 1, 7, 100)]
    assert max(by_distance) - min(by_distance) > 0.5, by_distance  # ... and it does change with the distance


def test_rotation_keeps_every_vector_length_and_leaves_position_0_unchanged():
    x = randn(2, 3, 6, 16, seed=4)
    rotated = rotate(x, torch.arange(6), theta=500.0)
    assert torch.allclose(rotated.norm(dim=-1), x.norm(dim=-1), atol=1e-5)
    assert torch.equal(rotated[:, :, 0], x[:, :, 0])
    assert not torch.allclose(rotated[:, :, 1:], x[:, :, 1:])


def test_grouped_query_attention_is_multi_head_attention_with_each_key_value_head_copied_per_group():
    """4 query heads on 2 key/value heads: query heads 0 and 1 read KV head 0, heads 2 and 3 read KV head 1."""
    grouped = MultiHeadAttention(32, 4, num_kv_heads=2, bias=False, rope_theta=100.0)
    for parameter in grouped.parameters():
        parameter.copy_(randn(*parameter.shape, seed=parameter.numel()) / 4)
    assert grouped.key.weight.shape == grouped.value.weight.shape == (16, 32)  # H_kv · d_head rows
    full = MultiHeadAttention(32, 4, bias=False, rope_theta=100.0)
    full.query.weight.copy_(grouped.query.weight)
    full.output.weight.copy_(grouped.output.weight)
    for name in ("key", "value"):  # rows of KV head g, repeated for each of its 2 query heads
        heads = getattr(grouped, name).weight.view(2, 8, 32)
        getattr(full, name).weight.copy_(heads.repeat_interleave(2, dim=0).reshape(32, 32))
    x = randn(2, 7, 32, seed=5)
    mask = causal_mask(7)
    rotation = Rotation.at(torch.arange(7), head_width=8, theta=100.0)
    grouped_output, trace = grouped(x, mask=mask, trace=True, rotation=rotation)
    full_output, full_trace = full(x, mask=mask, trace=True, rotation=rotation)
    assert torch.allclose(grouped_output, full_output, atol=1e-6)
    assert trace is not None and full_trace is not None
    assert trace.weights.shape == (2, 4, 7, 7)  # one attention map per query head
    assert torch.allclose(trace.weights, full_trace.weights, atol=1e-6)
    assert torch.equal(trace.key[:, 0], trace.key[:, 1]) and not torch.equal(trace.key[:, 1], trace.key[:, 2])


def test_multi_query_attention_has_one_key_and_one_value_head():
    single = MultiHeadAttention(32, 4, num_kv_heads=1, bias=False)
    assert single.key.weight.shape == (8, 32)
    output, trace = single(randn(1, 5, 32), trace=True)
    assert output.shape == (1, 5, 32) and trace is not None
    assert all(torch.equal(trace.key[:, 0], trace.key[:, head]) for head in range(4))


def test_rotary_attention_refuses_to_run_without_the_rotation_of_its_positions():
    with pytest.raises(ValueError, match="rotation of its tokens' positions"):
        MultiHeadAttention(16, 2, rope_theta=10.0)(randn(1, 3, 16))


def test_a_rotary_layer_computes_the_rotation_a_model_hands_it_once_per_forward():
    config = DecoderConfig(vocab_size=50, max_positions=16, width=16, num_heads=4, ff_width=24, positions="rotary")
    layer = DecoderLayer(config).eval()
    x = randn(1, 5, 16, seed=3)
    handed = rotation_of(config, x)
    assert handed is not None
    assert torch.equal(layer(x)[0], layer(x, rotation=handed)[0])
    after_three = rotation_of(config, x, num_cached=3)  # the 5 tokens sit at positions 3..7
    assert after_three is not None
    assert torch.equal(after_three.cos, Rotation.at(torch.arange(3, 8), 4, config.rope_theta).cos)
    assert rotation_of(DecoderConfig(vocab_size=50, max_positions=16, width=16, num_heads=4), x) is None


def test_gated_feed_forward_equals_transformers_llama_mlp():
    from transformers import LlamaConfig
    from transformers.models.llama.modeling_llama import LlamaMLP

    theirs = LlamaMLP(LlamaConfig(hidden_size=16, intermediate_size=40, num_attention_heads=2, hidden_act="silu"))
    ours = FeedForward(16, 40, "silu", gated=True, bias=False)
    ours.gate.weight.copy_(theirs.gate_proj.weight)
    ours.expand.weight.copy_(theirs.up_proj.weight)
    ours.contract.weight.copy_(theirs.down_proj.weight)
    x = randn(2, 5, 16, seed=6)
    output, trace = ours(x, trace=True)
    assert torch.equal(output, theirs(x))
    assert trace is not None
    expected_hidden = torch.nn.functional.silu(theirs.gate_proj(x)) * theirs.up_proj(x)  # (B, T, F)
    assert torch.equal(trace.hidden_activation, expected_hidden)


def test_causal_mask_after_cached_tokens_lets_new_tokens_read_every_cached_one():
    mask = causal_mask(2, num_cached=3)  # tokens at positions 3 and 4, after 3 cached ones
    assert mask.tolist() == [[True, True, True, True, False], [True, True, True, True, True]]
    assert torch.equal(causal_mask(4, num_cached=0), torch.ones(4, 4, dtype=torch.bool).tril())


def test_smollm2_config_json_becomes_the_smollm2_preset():
    assert config_from_hf(SMOLLM2_CONFIG_JSON) == SMOLLM2_135M == PRESETS["SmolLM2-135M"]
    transformers_5_layout = {**SMOLLM2_CONFIG_JSON, "rope_theta": None}
    transformers_5_layout["rope_parameters"] = {"rope_theta": 100000.0, "rope_type": "default"}
    assert config_from_hf(transformers_5_layout) == SMOLLM2_135M


def test_llama_configs_with_rope_scaling_or_biases_are_refused():
    with pytest.raises(ValueError, match="rotary scaling"):
        config_from_hf({**SMOLLM2_CONFIG_JSON, "rope_scaling": {"rope_type": "llama3", "factor": 8.0}})
    with pytest.raises(ValueError, match="biases"):
        config_from_hf({**SMOLLM2_CONFIG_JSON, "attention_bias": True})


def test_smollm2_135m_has_134_515_008_parameters_counted_from_its_config_and_built():
    """The number transformers reports for SmolLM2-135M (the tied LM head counted once)."""
    assert parameter_count(SMOLLM2_135M) == 134_515_008
    parts = parameter_breakdown(SMOLLM2_135M)
    assert parts["attention (all layers)"] == 30 * (2 * 576 * 576 + 2 * 576 * 192)  # W_K, W_V: 3 heads of 64
    assert parts["feed-forward (all layers)"] == 30 * 3 * 576 * 1536  # gate, up, down
    assert parts["layer norms (all layers)"] == 30 * 2 * 576  # RMSNorm: a gain, no bias
    assert "position embeddings" not in parts and "LM head" not in parts
    with torch.device("meta"):
        model = DecoderOnlyLM(SMOLLM2_135M)
    assert sum(parameter.numel() for parameter in model.parameters()) == 134_515_008


@pytest.mark.parametrize(
    "options",
    [
        {"num_kv_heads": 2, "positions": "rotary"},
        {"norm_kind": "rms", "feed_forward": "gated", "activation": "silu", "bias": False},
        {"num_kv_heads": 1, "tie_embeddings": False, "bias": False, "positions": "rotary", "feed_forward": "gated"},
    ],
    ids=["gqa-rotary", "rms-gated-no-bias", "mqa-untied"],
)
def test_parameter_count_equals_a_built_decoder_with_modern_options(options):
    config = DecoderConfig(vocab_size=50, max_positions=16, width=16, num_heads=4, ff_width=24, num_layers=2, **options)
    assert parameter_count(config) == sum(parameter.numel() for parameter in DecoderOnlyLM(config).parameters())


def test_a_config_whose_query_heads_do_not_split_into_key_value_groups_is_refused():
    with pytest.raises(ValueError, match="num_kv_heads"):
        DecoderConfig(width=24, num_heads=6, num_kv_heads=4)
