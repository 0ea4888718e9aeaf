"""Measurements across the encoder stack: what happens to each token's vector on its way from the embeddings
to the last layer, and what the stack is made of.

Everything here reads tensors that a traced forward pass already returned (see `anatomy.trace`), or builds a
small throwaway model of its own. Nothing touches the weights of the loaded model, which every browser
session shares.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from typing import Literal

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from anatomy.blocks import EncoderLayer
from anatomy.config import PRESETS, TransformerConfig, family, parameter_breakdown, parameter_count
from anatomy.models import Encoder, SequenceClassifier
from anatomy.trace import LayerTrace, ModelTrace
from lessons.common import pooling

# ---------------------------------------------------------------------------------------------------------
# Attention of every layer and head at once

MAX_OVERVIEW_BLOCKS = 32  # an overview map is at most 32 × 32, whatever the text's length


def pool_overview(weights: Tensor) -> pooling.PooledMap:
    """(L, H, T, T) -> at most (L, H, 32, 32): every map averaged over balanced blocks of tokens (lessons/common/
    pooling.py), so that the whole stack fits on one screen."""
    return pooling.average_pool(weights, MAX_OVERVIEW_BLOCKS, balanced=True)


# ---------------------------------------------------------------------------------------------------------
# Each token's vector from layer to layer


def stacked_hidden_states(hidden_states: Sequence[Tensor]) -> Tensor:
    """(L + 1, T, D): the embeddings, then every block's output, for the first text of the batch."""
    return torch.stack([state[0] for state in hidden_states])


def hidden_state_norms(hidden_states: Sequence[Tensor]) -> Tensor:
    """(L + 1, T) the length ‖h‖ of every token's vector after the embeddings and after each block."""
    return stacked_hidden_states(hidden_states).norm(dim=-1)


def similarity_to_previous_layer(hidden_states: Sequence[Tensor]) -> Tensor:
    """(L, T) row l: cosine between each token's vector after block l and before it."""
    states = stacked_hidden_states(hidden_states)
    return F.cosine_similarity(states[1:], states[:-1], dim=-1)


def similarity_to_embeddings(hidden_states: Sequence[Tensor]) -> Tensor:
    """(L + 1, T) row l: cosine between each token's vector at depth l and its embedding (row 0 is all 1)."""
    states = stacked_hidden_states(hidden_states)
    return F.cosine_similarity(states, states[:1], dim=-1)


def least_similar_row(similarity: Tensor) -> tuple[int, float]:
    """The row of a (rows, T) similarity table with the lowest mean over tokens, and that mean."""
    means = similarity.mean(dim=-1)
    row = int(means.argmin())
    return row, float(means[row])


def similarity_to_token(hidden_states: Sequence[Tensor], position: int) -> Tensor:
    """(L + 1, T) row l: cosine between every token's vector at depth l and the vector of the token at
    `position` at that same depth (its own cell is 1)."""
    states = stacked_hidden_states(hidden_states)  # (L + 1, T, D)
    return F.cosine_similarity(states, states[:, position : position + 1], dim=-1)


def others_by_similarity(similarity: Tensor, position: int) -> list[int]:
    """Every position but `position`, from the most similar to the least, by one (T,) row of cosines (of two
    equal cosines, the earlier position first)."""
    order = similarity.argsort(descending=True, stable=True).tolist()
    return [other for other in order if other != position]


# ---------------------------------------------------------------------------------------------------------
# One word in two contexts


@dataclass(frozen=True)
class WordLocation:
    """Where a word sits in a sentence and in its tokens."""

    start: int  # character span of the first occurrence in the sentence
    end: int
    token_indices: tuple[int, ...]  # the word pieces covering that span (empty if truncation cut them)
    whole_word: bool  # False when the word was found only inside a longer word
    occurrences: int  # how many times it occurs; the first one is used


def locate_word(sentence: str, tokenized, word: str) -> WordLocation | None:
    """The first occurrence of `word` (ignoring case, preferring a whole word) and its tokens, or None."""
    target = word.strip()
    if not target:
        return None
    pattern = re.escape(target)
    matches = list(re.finditer(rf"(?<!\w){pattern}(?!\w)", sentence, flags=re.IGNORECASE))
    whole_word = bool(matches)
    if not whole_word:
        matches = list(re.finditer(pattern, sentence, flags=re.IGNORECASE))
    if not matches:
        return None
    first = matches[0]
    pieces = tuple(
        index
        for index, ((start, end), special) in enumerate(zip(tokenized.offsets, tokenized.special))
        if not special and start < first.end() and end > first.start()
    )
    return WordLocation(first.start(), first.end(), pieces, whole_word, len(matches))


def word_vectors(hidden_states: Sequence[Tensor], token_indices: Sequence[int]) -> Tensor:
    """(L + 1, D) the word's vector at every depth: the mean of its word pieces' vectors."""
    return stacked_hidden_states(hidden_states)[:, list(token_indices)].mean(dim=1)


def contextual_similarity(
    hidden_a: Sequence[Tensor], pieces_a: Sequence[int], hidden_b: Sequence[Tensor], pieces_b: Sequence[int]
) -> Tensor:
    """(L + 1,) cosine between the same word's vectors in two sentences, at the embeddings and after each block."""
    return F.cosine_similarity(word_vectors(hidden_a, pieces_a), word_vectors(hidden_b, pieces_b), dim=-1)


# ---------------------------------------------------------------------------------------------------------
# Where the layer norm sits

MAIN_PATH_CHECKPOINTS = ("block input x", "x + Attention(x)", "LayerNorm₁", "h + FFN(h)", "LayerNorm₂ = output")


def main_path_norms(layer: LayerTrace) -> Tensor:
    """(5, T) every token's ‖vector‖ at the five points of a post-LN block's main path:
    x, x + Attention(x), h = LayerNorm(that), h + FFN(h), LayerNorm(that)."""
    checkpoints = (
        layer.input,
        layer.attention_residual,
        layer.norm_outputs["attention_norm"],
        layer.feed_forward_residual,
        layer.norm_outputs["feed_forward_norm"],
    )
    return torch.stack([checkpoint[0].norm(dim=-1) for checkpoint in checkpoints])


def stack_main_path_norms(trace: ModelTrace) -> Tensor:
    """(1 + 4L, T) the same checkpoints through the whole stack (a block's input is the previous output)."""
    rows = [main_path_norms(trace.layers[0])[:1]]
    rows += [main_path_norms(layer)[1:] for layer in trace.layers]
    return torch.cat(rows)


def stack_main_path_labels(num_layers: int) -> list[str]:
    """Short names of the rows of `stack_main_path_norms`, layers counted from 0 as in `trace.layers`."""
    labels = ["embeddings"]
    for layer in range(num_layers):
        labels += [f"L{layer} {name}" for name in ("x+Attn", "LN₁", "h+FFN", "LN₂")]
    return labels


def stack_main_path_rows(layer: int) -> tuple[int, int]:
    """The rows [start, end) of `stack_main_path_norms` that belong to block `layer`: its last four checkpoints,
    after the embeddings' row and four rows for each block before it."""
    start = 1 + 4 * layer
    return start, start + 4


DEMO_LAYERS = 6
DEMO_SEED = 0


def _initialise_linear_layers(module: nn.Module, generator: torch.Generator) -> None:
    """PyTorch's default nn.Linear initialisation, uniform in ±1/√fan_in, drawn from our own generator:
    seeding the global generator instead would let two sessions building a stack at once disturb each other."""
    for linear in module.modules():
        if isinstance(linear, nn.Linear):
            bound = 1 / math.sqrt(linear.in_features)
            nn.init.uniform_(linear.weight, -bound, bound, generator=generator)
            nn.init.uniform_(linear.bias, -bound, bound, generator=generator)


def untrained_layers(
    config: TransformerConfig,
    placement: Literal["pre", "post"],
    num_layers: int = DEMO_LAYERS,
    seed: int = DEMO_SEED,
) -> Iterator[EncoderLayer]:
    """Freshly initialised encoder blocks in eval mode, built one at a time as they are asked for, so a stack
    run through them holds one block's weights at once. Placement changes no shape, so the same seed gives the
    pre-LN and the post-LN stack exactly the same weights."""
    demo_config = replace(config, norm_placement=placement, num_layers=num_layers, dropout=0.0)
    generator = torch.Generator().manual_seed(seed)
    for _ in range(num_layers):
        layer = EncoderLayer(demo_config)
        _initialise_linear_layers(layer, generator)
        yield layer.eval().requires_grad_(False)


@dataclass(frozen=True)
class NormGrowth:
    """How long every token's vector is along the main path of a stack."""

    placement: str
    norms: Tensor  # (layers + 1, T) at the input, then after each block
    final_norms: Tensor | None  # (T,) after the closing LayerNorm a pre-LN stack ends with; None for post-LN


@torch.inference_mode()
def main_path_growth(
    embeddings: Tensor,
    config: TransformerConfig,
    placement: Literal["pre", "post"],
    num_layers: int = DEMO_LAYERS,
    seed: int = DEMO_SEED,
) -> NormGrowth:
    """Run `embeddings` (1, T, D) through an untrained, seeded stack and measure ‖h‖ after every block."""
    hidden = embeddings
    norms = [hidden[0].norm(dim=-1)]
    for layer in untrained_layers(config, placement, num_layers, seed):
        hidden, _ = layer.to(embeddings.device, embeddings.dtype)(hidden)
        norms.append(hidden[0].norm(dim=-1))
    final_norms = None
    if placement == "pre":
        # A fresh LayerNorm has γ = 1, β = 0, as anatomy.models.Encoder's final_norm starts out.
        final_norms = F.layer_norm(hidden, (hidden.size(-1),), eps=config.layer_norm_eps)[0].norm(dim=-1)
    return NormGrowth(placement, torch.stack(norms), final_norms)


# ---------------------------------------------------------------------------------------------------------
# The feed-forward hidden layer


def positive_fraction(activation: Tensor) -> Tensor:
    """(..., F) -> (...) the share of the F hidden neurons whose activation is above zero."""
    return (activation > 0).float().mean(dim=-1)


def positive_fraction_by_layer(trace: ModelTrace) -> Tensor:
    """(L,) the share of positive feed-forward activations in each layer, over all tokens and neurons."""
    return torch.stack([positive_fraction(layer.feed_forward.hidden_activation[0]).mean() for layer in trace.layers])


def most_active_neurons(activation: Tensor, count: int) -> Tensor:
    """(count,) indices of the neurons with the highest mean activation over the tokens of (T, F)."""
    return activation.mean(dim=0).topk(min(count, activation.size(-1))).indices


# ---------------------------------------------------------------------------------------------------------
# A classification head on [CLS]

CLASSIFIER_SEED = 0


def encoder_body(model: nn.Module) -> Encoder:
    """The Encoder inside a loaded model: the model itself, or the body of a fine-tuned classifier."""
    if isinstance(model, SequenceClassifier):
        return model.encoder
    if not isinstance(model, Encoder):
        raise TypeError(f"a {type(model).__name__} has no encoder stack to study")
    return model


@dataclass(frozen=True)
class ClassifierHeadOutput:
    """One text through a linear head on its [CLS] vector."""

    cls_vector: Tensor  # (D,) the last block's output at position 0
    summary: Tensor  # (D,) what the head reads: tanh(W_p·h[CLS] + b_p) if there is a pooler, else h[CLS]
    weight: Tensor  # (num_labels, D)
    bias: Tensor  # (num_labels,)
    logits: Tensor  # (num_labels,) weight @ summary + bias
    probabilities: Tensor  # (num_labels,) softmax(logits)


def untrained_classifier(width: int, num_labels: int, seed: int = CLASSIFIER_SEED) -> nn.Linear:
    """A fresh Linear(D, num_labels), seeded, with PyTorch's default initialisation (uniform in ±1/√D): a head
    nobody trained. (transformers starts a fine-tuning run from N(0, 0.02²) weights and zero biases instead;
    either way its scores mean nothing yet.)"""
    classifier = nn.Linear(width, num_labels)
    _initialise_linear_layers(classifier, torch.Generator().manual_seed(seed))
    return classifier.eval().requires_grad_(False)


@torch.inference_mode()
def apply_classifier_head(encoder: Encoder, last_hidden_state: Tensor, classifier: nn.Linear) -> ClassifierHeadOutput:
    """What `SequenceClassifier` computes after its body, from (1, T, D) final states: the encoder's own
    summary of [CLS] (through its pooler when it has one), then `classifier`. The encoder is only read."""
    cls_vector = last_hidden_state[0, 0]  # (D,)
    summary = encoder.pool(last_hidden_state)[0]  # (D,)
    classifier = classifier.to(summary.device, summary.dtype)
    logits = classifier(summary)  # (num_labels,)
    return ClassifierHeadOutput(cls_vector, summary, classifier.weight, classifier.bias, logits, logits.softmax(dim=-1))


# ---------------------------------------------------------------------------------------------------------
# What the model is made of

# Parameter names of the anatomy modules, matched to the components `parameter_breakdown` counts.
_COMPONENT_PATTERNS = (
    (r"embeddings\.token\.", "token embeddings"),
    (r"embeddings\.position\.", "position embeddings"),
    (r"embeddings\.token_type\.", "token type embeddings"),
    (r"embeddings\.layer_norm\.", "embedding layer norm"),
    (r"layers\.\d+\.attention\.", "attention (all layers)"),
    (r"layers\.\d+\.cross_attention(_norm)?\.", "cross-attention (all layers)"),
    (r"layers\.\d+\.feed_forward\.", "feed-forward (all layers)"),
    (r"layers\.\d+\.(attention|feed_forward)_norm\.", "layer norms (all layers)"),
    (r"final_norm\.", "final layer norm"),
    (r"pooler\.", "pooler"),
    (r"classifier\.", "classifier"),
    (r"masked_lm_head\.", "masked-LM head"),
    (r"lm_head\.", "LM head"),
)


def component_of(parameter_name: str) -> str:
    """The component a parameter belongs to, e.g. 'layers.3.attention.query.weight' -> 'attention (all layers)'."""
    name = parameter_name.removeprefix("encoder.")  # a SequenceClassifier nests its body under `encoder`
    for pattern, component in _COMPONENT_PATTERNS:
        if re.match(pattern, name):
            return component
    return "other"


def count_parameters_by_component(model: nn.Module) -> dict[str, int]:
    """Parameters of an actual model, summed per component (shared tensors counted once)."""
    counts: dict[str, int] = {}
    for name, parameter in model.named_parameters():
        component = component_of(name)
        counts[component] = counts.get(component, 0) + parameter.numel()
    return counts


def total_parameters(model: nn.Module) -> int:
    """Σ p.numel() over the model's parameters: the number every table here must add up to."""
    return sum(parameter.numel() for parameter in model.parameters())


@dataclass(frozen=True)
class ParameterRow:
    component: str
    from_config: int  # what parameter_breakdown predicts from the shape numbers alone
    in_model: int  # what the loaded module actually holds


def parameter_table(config: TransformerConfig, model: nn.Module) -> tuple[ParameterRow, ...]:
    """The configuration's prediction next to the loaded model's count, component by component."""
    predicted = parameter_breakdown(config)
    loaded = count_parameters_by_component(model)
    components = list(predicted) + [name for name in loaded if name not in predicted]
    return tuple(ParameterRow(name, predicted.get(name, 0), loaded.get(name, 0)) for name in components)


@dataclass(frozen=True)
class ZooEntry:
    name: str
    family: str
    num_layers: int
    width: int
    num_heads: int
    ff_width: int
    parameters: int  # computed from the configuration


def model_zoo(presets: dict[str, TransformerConfig] = PRESETS) -> tuple[ZooEntry, ...]:
    """Every preset with its shape numbers and the parameter count those numbers imply."""
    return tuple(
        ZooEntry(
            name=name,
            family=family(config),
            num_layers=config.num_layers,
            width=config.width,
            num_heads=config.num_heads,
            ff_width=config.ff_width,
            parameters=parameter_count(config),
        )
        for name, config in presets.items()
    )


def in_millions(count: int) -> str:
    """109_482_240 -> '109.5M'."""
    return f"{count / 1e6:.1f}M"
