"""Transformer anatomy: small, readable torch modules that run real pretrained weights.

The transformer itself lives in this package's top-level modules (config, attention, masks, positional,
rotary, norms, embeddings, feedforward, blocks, models, seq2seq, cache, generation, trace, devices).
`anatomy.checkpoints` reads and writes weights (Hugging Face folders and llama.cpp GGUF files) through
declarative key maps; `anatomy.training` trains the small models this project ships.
Nothing here imports the app: the lessons (`lessons/`) and pages (`pages/`) build on it.

Dimension letters used in every shape comment of this package:

    B        batch (sentences processed together)
    T        tokens in the sequence being updated (the queries)
    S        tokens being attended to (the keys and values; S == T in self-attention)
    D        model width (hidden size, "d_model")
    H        attention heads (query heads)
    H_kv     key/value heads (H in multi-head attention, fewer in grouped-query attention)
    d_head   width of one head (D // H)
    F        feed-forward hidden width ("intermediate size", usually 4 * D)
    V        vocabulary size
"""

from anatomy.attention import (
    AttentionHead,
    MultiHeadAttention,
    MultiHeadAttentionLoop,
    scaled_dot_product_attention,
)
from anatomy.checkpoints.pretrained import ModelLoadError, PretrainedModel, load_pretrained
from anatomy.config import DecoderConfig, EncoderConfig, Seq2SeqConfig, parameter_count
from anatomy.devices import choose_device
from anatomy.masks import causal_mask, padding_mask
from anatomy.models import DecoderOnlyLM, Encoder, SequenceClassifier
from anatomy.positional import sinusoidal_positional_encoding
from anatomy.seq2seq import EncoderDecoder

__all__ = [
    "AttentionHead",
    "DecoderConfig",
    "DecoderOnlyLM",
    "Encoder",
    "EncoderConfig",
    "EncoderDecoder",
    "ModelLoadError",
    "MultiHeadAttention",
    "MultiHeadAttentionLoop",
    "PretrainedModel",
    "Seq2SeqConfig",
    "SequenceClassifier",
    "causal_mask",
    "choose_device",
    "load_pretrained",
    "padding_mask",
    "parameter_count",
    "scaled_dot_product_attention",
    "sinusoidal_positional_encoding",
]
