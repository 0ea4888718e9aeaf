"""Whole models: a BERT-style encoder (with the masked-language-model head it was pre-trained with, when the
checkpoint kept it), a classification head on [CLS], and a decoder-only language model (GPT-2, or a
Llama-family model such as SmolLM2 when its configuration says so)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from anatomy.attention import AttentionEdit
from anatomy.blocks import DecoderLayer, EncoderLayer, rotation_of
from anatomy.cache import KVCache
from anatomy.config import DecoderConfig, EncoderConfig
from anatomy.embeddings import Embeddings
from anatomy.feedforward import ACTIVATIONS
from anatomy.generation import generate
from anatomy.masks import padding_mask
from anatomy.norms import make_norm
from anatomy.trace import ModelTrace


@dataclass(frozen=True)
class StackOutput:
    """What a stack returns: final states, the states between blocks, and the optional full trace."""

    last_hidden_state: Tensor  # (B, T, D)
    hidden_states: tuple[Tensor, ...]  # L + 1 tensors (B, T, D): the embeddings, then each block's output;
    # () when the forward was asked not to keep them
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


def run_stack(
    layers,
    embeddings_output,
    embedding_trace,
    mask,
    trace,
    final_norm=None,
    cache=None,
    keep_hidden_states=True,
    attention_edits=None,
    **layer_kwargs,
):
    """Feed the embeddings through every block, keeping each block's output (unless told not to) and trace."""
    hidden = embeddings_output
    hidden_states, layer_traces = ([hidden] if keep_hidden_states else []), []
    for index, layer in enumerate(layers):
        if cache is not None:
            layer_kwargs["cache"] = cache.layers[index]
        if attention_edits:
            layer_kwargs["attention_edit"] = attention_edits.get(index)
        hidden, layer_trace = layer(hidden, mask, trace=trace, **layer_kwargs)
        if keep_hidden_states:
            hidden_states.append(hidden)
        layer_traces.append(layer_trace)
    if final_norm is not None:
        hidden = final_norm(hidden)
    model_trace = ModelTrace(embedding_trace, tuple(layer_traces), hidden) if trace else None
    return StackOutput(hidden, tuple(hidden_states), model_trace)


class MaskedLMHead(nn.Module):
    """What BERT was pre-trained with: guess the word hidden behind each [MASK] (Devlin et al., 2019, §3.1).

    Each final vector goes through one more dense layer, the activation and a LayerNorm, and is then scored
    against every row of the token embedding table, plus a bias per word: the same table that turns a word
    into a vector turns a vector back into words (the decoder is "tied" to the embeddings, so it has no
    weights of its own). BERT, DistilBERT and RoBERTa all share this shape; only the checkpoint names differ.
    """

    def __init__(self, config: EncoderConfig):
        super().__init__()
        self.activation_name = config.activation
        self.transform = nn.Linear(config.width, config.width)
        self.layer_norm = nn.LayerNorm(config.width, eps=config.layer_norm_eps)
        self.bias = nn.Parameter(torch.zeros(config.vocab_size))

    def forward(self, hidden: Tensor, token_embeddings: Tensor) -> Tensor:
        """(B, T, D) final states and the (V, D) embedding table -> (B, T, V) a score for every word."""
        transformed = self.layer_norm(ACTIVATIONS[self.activation_name](self.transform(hidden)))  # (B, T, D)
        return F.linear(transformed, token_embeddings, self.bias)  # (B, T, V)


class Encoder(nn.Module):
    """Embeddings, then L encoder blocks; every token attends to every other (bidirectional)."""

    def __init__(self, config: EncoderConfig):
        super().__init__()
        self.config = config
        self.embeddings = Embeddings(config)
        self.layers = nn.ModuleList(EncoderLayer(config) for _ in range(config.num_layers))
        # A pre-LN stack never normalises its main path, so it ends with one LayerNorm; post-LN needs none.
        self.final_norm = (
            nn.LayerNorm(config.width, eps=config.layer_norm_eps) if config.norm_placement == "pre" else None
        )
        self.pooler = nn.Linear(config.width, config.width) if config.pooler else None
        self.masked_lm_head = MaskedLMHead(config) if config.masked_lm_head else None

    def pool(self, last_hidden_state: Tensor) -> Tensor:
        """(B, T, D) -> (B, D): the [CLS] vector, through BERT's pooler (dense + tanh) when there is one."""
        summary = last_hidden_state[:, 0]
        return summary if self.pooler is None else torch.tanh(self.pooler(summary))

    def masked_lm_logits(self, last_hidden_state: Tensor) -> Tensor:
        """(B, T, D) -> (B, T, V): at every position, a score for each word of the vocabulary being the one
        there (what fills a [MASK]). Only for a checkpoint that kept its masked-LM head."""
        if self.masked_lm_head is None:
            raise ValueError("this encoder has no masked-language-model head: its checkpoint was saved without one")
        return self.masked_lm_head(last_hidden_state, self.embeddings.token.weight)

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
        return run_stack(self.layers, embedded, embedding_trace, mask, trace, self.final_norm)


class SequenceClassifier(nn.Module):
    """An encoder body with a task head: the [CLS] vector (first token) -> num_labels scores.

    BERT passes [CLS] through its pooler (dense + tanh, trained on next-sentence prediction) before the
    classifier; without a pooler this head reads the [CLS] hidden state directly (transformers' DistilBERT
    classifier puts a dense layer and ReLU of its own there, trained with the task; this head has none).
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
    """A decoder-only language model: embeddings, L causal blocks, a final norm, and an LM head that (when
    tied) reuses the token embedding matrix: one table both reads and writes tokens.

    GPT-2 with the default configuration; SmolLM2 and the Llama family with RMSNorm, rotary positions,
    grouped-query attention and a gated feed-forward (see `DecoderConfig`).
    """

    def __init__(self, config: DecoderConfig):
        super().__init__()
        self.config = config
        self.embeddings = Embeddings(config)
        self.layers = nn.ModuleList(DecoderLayer(config) for _ in range(config.num_layers))
        self.final_norm = make_norm(config.norm_kind, config.width, config.layer_norm_eps)
        self.lm_head = None if config.tie_embeddings else nn.Linear(config.width, config.vocab_size, bias=False)

    def new_cache(self) -> KVCache:
        """An empty key/value cache for one batch of sequences, to pass to `forward` call after call."""
        return KVCache(self.config.num_layers)

    def forward(
        self,
        input_ids: Tensor,
        attention_mask: Tensor | None = None,
        trace: bool = False,
        cache: KVCache | None = None,
        last_logits_only: bool = False,
        keep_hidden_states: bool = True,
        attention_edits: Mapping[int, AttentionEdit] | None = None,
    ) -> StackOutput:
        """(B, T) ids -> logits (B, T, V) for the token after each position.

        With a `cache`, the ids continue the sequence the cache has read (and are added to it);
        `attention_mask` (B, S) then covers the cached tokens too. `last_logits_only` scores the last position
        alone, (B, 1, V): all that generation needs, and the LM head is a large share of a small model's work.
        `keep_hidden_states=False` lets each block's output go once the next block has read it: a forward that
        wants only logits (generation) then holds one (B, T, D) state at a time instead of L + 1.
        `attention_edits` maps a layer's index to a change of its self-attention for this call alone (an
        experiment: see `AttentionEdit`); the layers it does not name run as always.
        """
        num_cached = 0 if cache is None else cache.length
        embedded, embedding_trace = self.embeddings(input_ids, trace=trace, first_position=num_cached)
        mask = None if attention_mask is None else padding_mask(attention_mask)
        rotation = rotation_of(self.config, embedded, num_cached)  # the same in every layer: computed once
        stack = run_stack(
            self.layers,
            embedded,
            embedding_trace,
            mask,
            trace,
            self.final_norm,
            cache,
            keep_hidden_states,
            attention_edits,
            rotation=rotation,
        )
        head = self.embeddings.token.weight if self.lm_head is None else self.lm_head.weight  # (V, D)
        scored = stack.last_hidden_state[:, -1:] if last_logits_only else stack.last_hidden_state
        logits = F.linear(scored, head)  # (B, T, V): every position's vector against every token's row
        return StackOutput(stack.last_hidden_state, stack.hidden_states, stack.trace, logits)

    def generate_greedy(self, input_ids: Tensor, max_new_tokens: int) -> Tensor:
        """Append the most probable next token, one at a time, rereading the whole sequence (at most
        `max_positions` tokens) at each step: (B, T) -> (B, T + max_new_tokens)."""
        return generate(self, input_ids, max_new_tokens, use_cache=False)
