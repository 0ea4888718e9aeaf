"""transformers' own models described by our configs: the references the anatomy models are held against.

A parity test saves a tiny checkpoint with transformers' LlamaForCausalLM and loads it into ours; a benchmark
builds transformers' model around our weights. Both describe the model by our `DecoderConfig` and let this
module say it in transformers' words, so that the two names of every field are written down once.
"""

from __future__ import annotations

from typing import Any

from anatomy.config import DecoderConfig

# What makes a Llama, in our switches: transformers' LlamaConfig has no field for any of them but the activation
LLAMA_SHAPE = {
    "norm_kind": "rms",
    "positions": "rotary",
    "feed_forward": "gated",
    "norm_placement": "pre",
    "activation": "silu",
}


def llama_config(config: DecoderConfig, **extra: Any):
    """transformers' `LlamaConfig` for a model of `config` (a Llama: RMSNorm, rotary positions, a gated
    feed-forward), with `extra` keyword arguments passed on (say `initializer_range` for drawn weights).
    No special tokens: the models compared here read ids, and generation must not stop at a token of its own."""
    from transformers import LlamaConfig

    unlike = {name: getattr(config, name) for name, value in LLAMA_SHAPE.items() if getattr(config, name) != value}
    if unlike:
        raise ValueError(f"not a Llama: {unlike}")
    return LlamaConfig(
        vocab_size=config.vocab_size,
        hidden_size=config.width,
        intermediate_size=config.ff_width,
        num_hidden_layers=config.num_layers,
        num_attention_heads=config.num_heads,
        num_key_value_heads=config.num_kv_heads,
        max_position_embeddings=config.max_positions,
        hidden_act=config.activation,  # "silu", spelled alike in both
        rms_norm_eps=config.layer_norm_eps,
        rope_parameters={"rope_type": "default", "rope_theta": config.rope_theta},
        tie_word_embeddings=config.tie_embeddings,
        attention_bias=config.bias,
        mlp_bias=config.bias,
        bos_token_id=None,
        eos_token_id=None,
        pad_token_id=None,
        **extra,
    )
