"""An encoder-decoder transformer, assembled from the same blocks as the encoder and the decoder.

This is the original shape of "Attention Is All You Need": the encoder reads the whole source at once
(bidirectional), the decoder writes the target one token at a time (causal), and between them sits
cross-attention. In every decoder block the queries come from the target written so far and the keys and
values from the encoder's output, so each head's weights form a T × S matrix: for every target position,
how much it reads each source position. On a task with a clear alignment, such as reversing a word, that
matrix *is* the alignment.

Nothing here is new machinery: `Encoder` comes from `models.py`, `DecoderLayer` (with its cross-attention
sublayer switched on) from `blocks.py`.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor, nn

from anatomy.blocks import DecoderLayer
from anatomy.config import DecoderConfig, Seq2SeqConfig
from anatomy.embeddings import Embeddings
from anatomy.generation import seq2seq_generation_steps
from anatomy.masks import padding_mask
from anatomy.models import Encoder, StackOutput, run_stack


@dataclass(frozen=True)
class Seq2SeqOutput:
    """Both halves' outputs; `logits` are the decoder's next-token scores."""

    logits: Tensor  # (B, T, V)
    encoder: StackOutput  # the source, read bidirectionally: last_hidden_state (B, S, D)
    decoder: StackOutput  # the target so far: last_hidden_state (B, T, D)

    @property
    def cross_attentions(self) -> tuple[Tensor, ...]:
        """One tensor (B, H, T, S) per decoder block: which source position each target position reads
        (needs trace=True)."""
        return tuple(
            layer.cross_attention.weights
            for layer in self.decoder.recorded_trace.layers
            if layer.cross_attention is not None  # always: every block of a Decoder reads the encoder
        )


class Decoder(nn.Module):
    """Target embeddings, L decoder blocks that also read the encoder's output, a final LayerNorm, and an
    LM head tied to the target embeddings."""

    def __init__(self, config: DecoderConfig):
        super().__init__()
        if not config.cross_attention:
            raise ValueError("the decoder of an encoder-decoder model needs cross_attention=True")
        self.config = config
        self.embeddings = Embeddings(config)
        self.layers = nn.ModuleList(DecoderLayer(config) for _ in range(config.num_layers))
        self.final_norm = nn.LayerNorm(config.width, eps=config.layer_norm_eps)

    def forward(
        self, target_ids: Tensor, memory: Tensor, memory_mask: Tensor | None = None, trace: bool = False
    ) -> StackOutput:
        """(B, T) target ids and (B, S, D) encoder output -> logits (B, T, V) for each next target token."""
        embedded, embedding_trace = self.embeddings(target_ids, trace=trace)
        stack = run_stack(
            self.layers, embedded, embedding_trace, None, trace, self.final_norm, memory=memory, memory_mask=memory_mask
        )
        logits = stack.last_hidden_state @ self.embeddings.token.weight.T  # (B, T, V)
        return StackOutput(stack.last_hidden_state, stack.hidden_states, stack.trace, logits)


class EncoderDecoder(nn.Module):
    """Encoder and decoder side by side; the source's padding is hidden from both encoder self-attention
    and decoder cross-attention."""

    def __init__(self, config: Seq2SeqConfig):
        super().__init__()
        self.config = config
        self.encoder = Encoder(config.encoder)
        self.decoder = Decoder(config.decoder)

    def encode(self, source_ids: Tensor, source_mask: Tensor | None = None, trace: bool = False) -> StackOutput:
        """(B, S) source ids (and their 1/0 padding mask) -> the encoder's output (B, S, D)."""
        return self.encoder(source_ids, attention_mask=source_mask, trace=trace)

    def forward(
        self,
        source_ids: Tensor,
        target_ids: Tensor,
        source_mask: Tensor | None = None,
        trace: bool = False,
    ) -> Seq2SeqOutput:
        """(B, S) source and (B, T) target so far -> logits (B, T, V) for the target token after each position."""
        encoded = self.encode(source_ids, source_mask, trace=trace)
        memory_mask = None if source_mask is None else padding_mask(source_mask)  # (B, 1, 1, S)
        decoded = self.decoder(target_ids, encoded.last_hidden_state, memory_mask, trace=trace)
        return Seq2SeqOutput(decoded.logits, encoded, decoded)

    @torch.no_grad()
    def generate_greedy(
        self, source_ids: Tensor, start_id: int, max_new_tokens: int, source_mask: Tensor | None = None
    ) -> Tensor:
        """Encode once, then append the most probable target token max_new_tokens times:
        (B, S) source -> (B, 1 + max_new_tokens) target, starting with `start_id`."""
        memory = self.encode(source_ids, source_mask).last_hidden_state  # (B, S, D)
        start = torch.full((source_ids.size(0), 1), start_id, dtype=torch.long, device=source_ids.device)
        steps = seq2seq_generation_steps(self, memory, start, max_new_tokens, source_mask=source_mask)
        return torch.cat([start, *(step.chosen_ids for step in steps)], dim=1)
