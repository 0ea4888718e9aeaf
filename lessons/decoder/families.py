"""The three families of transformer, told apart by who may attend to whom, and a table of real members.

* **encoder-only** (BERT, all-MiniLM-L6-v2): every token reads every token, in both directions. Built to
  understand a text: classify it, embed it, tag its tokens.
* **decoder-only** (GPT-2, the sorter trained here): each token reads itself and what came before (the causal
  mask). Built to continue a text, one token at a time.
* **encoder-decoder** (the original Transformer, T5, BART, the reverser trained here): an encoder reads the
  whole source bidirectionally; a causal decoder writes the target and reads the source through
  cross-attention. Built to turn one sequence into another (translation, summarisation).

Every parameter count below is computed from a configuration (`parameter_count`), never typed in;
`counted_parameters` builds the module on PyTorch's "meta" device (shapes without memory) to count its
tensors, which is how the tests hold the two against each other.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor, nn

from anatomy.checkpoints.pretrained import embedded_model_folder, read_config
from anatomy.config import PRESETS, DecoderConfig, Seq2SeqConfig, TransformerConfig, family, parameter_count
from anatomy.masks import causal_mask
from anatomy.models import DecoderOnlyLM, Encoder
from anatomy.seq2seq import EncoderDecoder
from anatomy.training.recipes import RECIPES

ENCODER_ONLY, DECODER_ONLY, ENCODER_DECODER = "encoder-only", "decoder-only", "encoder-decoder"


def family_of(config: TransformerConfig) -> str:
    """The family's name as this lesson writes it: "encoder-only", "decoder-only" or "encoder-decoder"."""
    return {"encoder": ENCODER_ONLY, "decoder": DECODER_ONLY, "encoder-decoder": ENCODER_DECODER}[family(config)]


# --- Who may attend to whom -------------------------------------------------------------------------


@dataclass(frozen=True)
class FamilyMask:
    """One family's attention pattern as a single matrix: row = the position reading, column = the one read."""

    family: str
    mask: Tensor  # (rows, columns) True where reading is allowed
    row_labels: tuple[str, ...]
    column_labels: tuple[str, ...]
    source_length: int = 0  # encoder-decoder only: the first rows and columns are source positions


def family_masks(num_source: int = 4, num_target: int = 3) -> tuple[FamilyMask, ...]:
    """The three patterns on small made-up sequences: x for source (input) positions, y for target ones.

    The encoder-decoder pattern is drawn as one (S + T) × (S + T) matrix over source then target positions.
    Its blocks are the three attentions: source reads source (encoder self-attention, all allowed), target
    reads source (cross-attention, all allowed), target reads target (decoder self-attention, causal).
    Source positions never read the target: the encoder finishes before the decoder starts.
    """
    source = tuple(f"x{index}" for index in range(num_source))
    target = tuple(f"y{index}" for index in range(num_target))
    both = source + target
    encoder_decoder = torch.zeros(len(both), len(both), dtype=torch.bool)
    encoder_decoder[:num_source, :num_source] = True  # encoder self-attention
    encoder_decoder[num_source:, :num_source] = True  # cross-attention
    encoder_decoder[num_source:, num_source:] = causal_mask(num_target)  # decoder self-attention
    return (
        FamilyMask(ENCODER_ONLY, torch.ones(num_source, num_source, dtype=torch.bool), source, source),
        FamilyMask(DECODER_ONLY, causal_mask(num_source), source, source),
        FamilyMask(ENCODER_DECODER, encoder_decoder, both, both, num_source),
    )


# --- Real members, counted from their configurations ------------------------------------------------


@dataclass(frozen=True)
class ModelRow:
    """One model of the table: its shape numbers and the parameter count they imply."""

    name: str
    family: str
    origin: str  # where its configuration comes from
    encoder_layers: int
    decoder_layers: int
    width: int  # D
    num_heads: int  # H
    ff_width: int  # F
    vocab_size: int  # V
    parameters: int  # parameter_count(config)


def layer_counts(config: TransformerConfig) -> tuple[int, int]:
    """(encoder blocks, decoder blocks)."""
    if isinstance(config, Seq2SeqConfig):
        return config.num_layers, config.num_decoder_layers
    return (0, config.num_layers) if isinstance(config, DecoderConfig) else (config.num_layers, 0)


def model_configs() -> dict[str, tuple[str, TransformerConfig]]:
    """Name -> (origin, configuration) for every model the table shows."""
    embedded = read_config(embedded_model_folder())[1]
    return {
        "BERT-base (uncased)": ("preset", PRESETS["bert-base-uncased"]),
        "all-MiniLM-L6-v2 (embedded)": ("its config.json", embedded),
        "GPT-2 small": ("preset", PRESETS["gpt2"]),
        **{f"{name} (trained here)": (f"recipe {name!r}", recipe.config) for name, recipe in RECIPES.items()},
    }


def model_table(configs: dict[str, tuple[str, TransformerConfig]] | None = None) -> tuple[ModelRow, ...]:
    """One row per model, its parameters computed from its configuration."""
    rows = []
    for name, (origin, config) in (configs or model_configs()).items():
        encoder_layers, decoder_layers = layer_counts(config)
        rows.append(
            ModelRow(
                name=name,
                family=family_of(config),
                origin=origin,
                encoder_layers=encoder_layers,
                decoder_layers=decoder_layers,
                width=config.width,
                num_heads=config.num_heads,
                ff_width=config.ff_width,
                vocab_size=config.vocab_size,
                parameters=parameter_count(config),
            )
        )
    return tuple(rows)


def build_on_meta(config: TransformerConfig) -> nn.Module:
    """The module a configuration describes, with shapes but no memory (nothing is initialised or stored)."""
    model_class = {ENCODER_ONLY: Encoder, DECODER_ONLY: DecoderOnlyLM, ENCODER_DECODER: EncoderDecoder}
    with torch.device("meta"):
        return model_class[family_of(config)](config)


def counted_parameters(config: TransformerConfig) -> int:
    """Σ numel over the parameters of the built module (a tied LM head is one tensor, counted once)."""
    return sum(parameter.numel() for parameter in build_on_meta(config).parameters())
