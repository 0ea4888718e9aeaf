"""From token ids to the vectors that enter the first block.

A lookup table gives each token id a vector; on its own that vector says nothing about *where* the token
sits, and attention is blind to order. So a position vector is added: a learned row of a second table
(BERT, GPT-2) or the fixed sinusoidal pattern of the original paper. BERT also adds a segment ("token
type") vector telling sentence A from sentence B, then normalises the sum. Models with rotary positions
(Llama, SmolLM2) add nothing here: position enters inside attention instead (`anatomy.rotary`).
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

from anatomy.config import DecoderConfig, EncoderConfig, TransformerConfig
from anatomy.positional import sinusoidal_positional_encoding
from anatomy.trace import EmbeddingTrace


class Embeddings(nn.Module):
    """token + position (+ token type), then (for BERT) LayerNorm, then dropout; the token alone with rotary
    positions."""

    sinusoidal: Tensor  # (max_positions, D) the fixed table, a buffer, when there is no learned one

    def __init__(self, config: TransformerConfig):
        super().__init__()
        width = config.width
        self.token = nn.Embedding(config.vocab_size, width)
        # An encoder's positions are always a learned table (BERT); a decoder's configuration says which.
        self.position_offset = config.position_offset if isinstance(config, EncoderConfig) else 0  # RoBERTa: 2
        self.position_kind = config.positions if isinstance(config, DecoderConfig) else "learned"
        if self.position_kind == "rotary":
            self.position = None  # no table and no buffer: positions turn the queries and keys instead
        elif self.position_kind == "sinusoidal":
            self.position = None
            self.register_buffer(
                "sinusoidal", sinusoidal_positional_encoding(config.max_positions, width), persistent=False
            )
        else:
            self.position = nn.Embedding(config.max_positions, width)
        type_vocab_size = config.type_vocab_size if isinstance(config, EncoderConfig) else 0
        self.token_type = nn.Embedding(type_vocab_size, width) if type_vocab_size else None
        wants_norm = isinstance(config, EncoderConfig) and config.embedding_layer_norm
        self.layer_norm = nn.LayerNorm(width, eps=config.layer_norm_eps) if wants_norm else None
        self.dropout = nn.Dropout(config.dropout)

    def forward(
        self, input_ids: Tensor, token_type_ids: Tensor | None = None, trace: bool = False, first_position: int = 0
    ) -> tuple[Tensor, EmbeddingTrace | None]:
        """(B, T) ids -> (B, T, D) vectors. `first_position`: where these tokens start (after a cached prefix)."""
        num_tokens = input_ids.size(1)
        token = self.token(input_ids)  # (B, T, D)
        position: Tensor | None
        if self.position is not None:
            start = self.position_offset + first_position
            positions = torch.arange(start, start + num_tokens, device=input_ids.device)
            position = self.position(positions)[None]  # (1, T, D)
        elif self.position_kind == "sinusoidal":
            position = self.sinusoidal[first_position : first_position + num_tokens][None].to(token.dtype)  # (1, T, D)
        else:
            position = None  # rotary: positions are applied to the queries and keys
        summed = token if position is None else token + position
        token_type = None
        if self.token_type is not None:
            if token_type_ids is None:
                token_type_ids = torch.zeros_like(input_ids)
            token_type = self.token_type(token_type_ids)  # (B, T, D)
            summed = summed + token_type
        normalized = summed if self.layer_norm is None else self.layer_norm(summed)
        output = self.dropout(normalized)
        if not trace:
            return output, None
        return output, EmbeddingTrace(token, position, token_type, summed, output)
