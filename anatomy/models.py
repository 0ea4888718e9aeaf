"""Whole models: a BERT-style encoder, a classification head on [CLS], and a GPT-2-style decoder."""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor, nn

from anatomy.blocks import DecoderLayer, EncoderLayer
from anatomy.config import DecoderConfig, EncoderConfig
from anatomy.embeddings import Embeddings
from anatomy.masks import padding_mask
from anatomy.trace import ModelTrace


@dataclass(frozen=True)
class StackOutput:
    """What a stack returns: final states, the states between blocks, and the optional full trace."""

    last_hidden_state: Tensor  # (B, T, D)
    hidden_states: tuple[Tensor, ...]  # L + 1 tensors (B, T, D): the embeddings, then each block's output
    trace: ModelTrace | None = None  # every intermediate, when asked for
    logits: Tensor | None = None  # (B, T, V) for language models, (B, num_labels) for classifiers

    @property
    def recorded_trace(self) -> ModelTrace:
        """The trace, for code that needs one: raises unless the forward ran with trace=True."""
        if self.trace is None:
            raise ValueError("intermediates are recorded only when the forward ran with trace=True")
        return self.trace

    @property
    def attentions(self) -> tuple[Tensor, ...]:
        """L tensors (B, H, T, S): each layer's attention weights (needs trace=True)."""
        return tuple(layer.attention.weights for layer in self.recorded_trace.layers)


def _run_stack(layers, embeddings_output, embedding_trace, mask, trace, final_norm=None, **layer_kwargs):
    """Feed the embeddings through every block, keeping each block's output (and trace)."""
    hidden = embeddings_output
    hidden_states, layer_traces = [hidden], []
    for layer in layers:
        hidden, layer_trace = layer(hidden, mask, trace=trace, **layer_kwargs)
        hidden_states.append(hidden)
        layer_traces.append(layer_trace)
    if final_norm is not None:
        hidden = final_norm(hidden)
    model_trace = ModelTrace(embedding_trace, tuple(layer_traces), hidden) if trace else None
    return StackOutput(hidden, tuple(hidden_states), model_trace)


class Encoder(nn.Module):
    """Embeddings, then L encoder blocks; every token attends to every other (bidirectional)."""

    def __init__(self, config: EncoderConfig):
        super().__init__()
        self.config = config
        self.embeddings = Embeddings(config)
        self.layers = nn.ModuleList(EncoderLayer(config) for _ in range(config.num_layers))
        # A pre-LN stack never normalises its main path, so it ends with one LayerNorm; post-LN needs none.
        self.final_norm = nn.LayerNorm(config.width, eps=config.layer_norm_eps) if config.norm == "pre" else None
        self.pooler = nn.Linear(config.width, config.width) if config.pooler else None

    def pool(self, last_hidden_state: Tensor) -> Tensor:
        """(B, T, D) -> (B, D): the [CLS] vector, through BERT's pooler (dense + tanh) when there is one."""
        summary = last_hidden_state[:, 0]
        return summary if self.pooler is None else torch.tanh(self.pooler(summary))

    def forward(
        self,
        input_ids: Tensor,
        token_type_ids: Tensor | None = None,
        attention_mask: Tensor | None = None,
        trace: bool = False,
    ) -> StackOutput:
        """(B, T) ids -> (B, T, D) contextual vectors; `attention_mask` (B, T) hides padding keys."""
        embedded, embedding_trace = self.embeddings(input_ids, token_type_ids, trace=trace)
        mask = None if attention_mask is None else padding_mask(attention_mask)  # (B, 1, 1, T)
        return _run_stack(self.layers, embedded, embedding_trace, mask, trace, self.final_norm)


class SequenceClassifier(nn.Module):
    """An encoder body with a task head: the [CLS] vector (first token) -> num_labels scores.

    BERT passes [CLS] through its pooler (dense + tanh, trained on next-sentence prediction) before the
    classifier; models without a pooler (DistilBERT-style) read the [CLS] hidden state directly.
    """

    def __init__(self, config: EncoderConfig, num_labels: int):
        super().__init__()
        self.encoder = Encoder(config)
        self.dropout = nn.Dropout(config.dropout)
        self.classifier = nn.Linear(config.width, num_labels)

    def forward(
        self,
        input_ids: Tensor,
        token_type_ids: Tensor | None = None,
        attention_mask: Tensor | None = None,
        trace: bool = False,
    ) -> StackOutput:
        """(B, T) ids -> logits (B, num_labels) in the returned output."""
        encoded = self.encoder(input_ids, token_type_ids, attention_mask, trace=trace)
        summary = self.encoder.pool(encoded.last_hidden_state)  # (B, D) from the [CLS] token
        logits = self.classifier(self.dropout(summary))  # (B, num_labels)
        return StackOutput(encoded.last_hidden_state, encoded.hidden_states, encoded.trace, logits)


class DecoderOnlyLM(nn.Module):
    """A GPT-2-style language model: embeddings, L causal blocks, a final LayerNorm, and an LM head
    that reuses the token embedding matrix (weight tying: one table both reads and writes tokens)."""

    def __init__(self, config: DecoderConfig):
        super().__init__()
        self.config = config
        self.embeddings = Embeddings(config)
        self.layers = nn.ModuleList(DecoderLayer(config) for _ in range(config.num_layers))
        self.final_norm = nn.LayerNorm(config.width, eps=config.layer_norm_eps)
        self.lm_head = None if config.tie_embeddings else nn.Linear(config.width, config.vocab_size, bias=False)

    def forward(self, input_ids: Tensor, attention_mask: Tensor | None = None, trace: bool = False) -> StackOutput:
        """(B, T) ids -> logits (B, T, V) for the token after each position."""
        embedded, embedding_trace = self.embeddings(input_ids, trace=trace)
        mask = None if attention_mask is None else padding_mask(attention_mask)
        stack = _run_stack(self.layers, embedded, embedding_trace, mask, trace, self.final_norm)
        head = self.embeddings.token.weight if self.lm_head is None else self.lm_head.weight
        logits = stack.last_hidden_state @ head.T  # (B, T, V)
        return StackOutput(stack.last_hidden_state, stack.hidden_states, stack.trace, logits)

    @torch.no_grad()
    def generate_greedy(self, input_ids: Tensor, max_new_tokens: int) -> Tensor:
        """Append the most probable next token, one at a time: (B, T) -> (B, T + max_new_tokens)."""
        for _ in range(max_new_tokens):
            window = input_ids[:, -self.config.max_positions :]
            next_token = self(window).logits[:, -1].argmax(dim=-1, keepdim=True)  # (B, 1)
            input_ids = torch.cat([input_ids, next_token], dim=1)
        return input_ids
