"""Transformer anatomy: small, readable torch modules that run real pretrained weights.

Dimension letters used in every shape comment of this package:

    B        batch (sentences processed together)
    T        tokens in the sequence being updated (the queries)
    S        tokens being attended to (the keys and values; S == T in self-attention)
    D        model width (hidden size, "d_model")
    H        attention heads
    d_head   width of one head (D // H)
    F        feed-forward hidden width ("intermediate size", usually 4 * D)
    V        vocabulary size
"""

from anatomy.attention import (
    AttentionHead,
    MultiHeadAttention,
    Attention,
    scaled_dot_product_attention,
)
from anatomy.config import DecoderConfig, EncoderConfig, Seq2SeqConfig, parameter_count
from anatomy.devices import choose_device
from anatomy.masks import causal_mask, padding_mask
from anatomy.models import DecoderOnlyLM, Encoder, SequenceClassifier
from anatomy.positional import sinusoidal_positional_encoding
from anatomy.pretrained import ModelLoadError, load_pretrained
from anatomy.seq2seq import EncoderDecoder

__all__ = [
    "Attention",
    "AttentionHead",
    "DecoderConfig",
    "DecoderOnlyLM",
    "Encoder",
    "EncoderConfig",
    "EncoderDecoder",
    "ModelLoadError",
    "MultiHeadAttention",
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
