"""One layer's attention in a decoder-only model, as the lessons on decoders show it, and the limit on how long a
text they read. A pure function of the model and the token ids (torch only): nothing is stored on the model, which
every browser session shares.
"""

from __future__ import annotations

from collections.abc import Iterator

import torch
from torch import Tensor, nn

from anatomy.attention import AttentionTrace
from anatomy.blocks import rotation_of
from anatomy.models import DecoderOnlyLM
from anatomy.rotary import Rotation

# On two CPU cores a page answers in seconds only up to here; on a CUDA GPU the lessons read all the model can.
CPU_MAX_TOKENS = 512


def max_tokens(model: DecoderOnlyLM) -> int:
    """How many tokens the decoder lessons read with this model, on the device it runs on (`token_limit_on`)."""
    return token_limit_on(model.embeddings.token.weight.device, model.config.max_positions)


def token_limit_on(device: torch.device, positions: int) -> int:
    """All of a model's `positions` (SmolLM2: 8,192) on a CUDA GPU, where a view of the longest text answers in
    about a second (docs/gpu.md), and CPU_MAX_TOKENS elsewhere: the CPU, and Apple's MPS, where long texts were
    never measured."""
    return positions if device.type == "cuda" else min(CPU_MAX_TOKENS, positions)


def as_batch(ids: tuple[int, ...] | list[int], model: DecoderOnlyLM) -> Tensor:
    """(1, T) ids on the model's device."""
    return torch.tensor([list(ids)], dtype=torch.long, device=model.embeddings.token.weight.device)


@torch.no_grad()
def layer_attention(model: DecoderOnlyLM, ids: tuple[int, ...], layer: int) -> AttentionTrace:
    """The self-attention trace of one layer, on the model's device: what that layer's query heads and the keys
    they read make of the text. Any head's weights come from it on demand (`AttentionTrace.head_weights`, (1, T, T)),
    the forward's own numbers, so that a page keeps the queries and keys (19 and 6 MB at 8,192 tokens) instead of
    every head's map (2.4 GB).

    A full trace of 30 layers would hold far more. A block reads only what the block below it wrote, so the
    blocks below run untraced, the chosen one traced, and none above it (nor the LM head, whose 512 × 49,152
    scores alone take 100 MB): the same weights as a fully traced run, at a fraction of its memory and time.
    """
    hidden, _ = model.embeddings(as_batch(ids, model))  # (1, T, D)
    rotation = rotation_of(model.config, hidden)  # the same in every block, as in the model's own forward
    for block in model.layers[:layer]:
        hidden, _ = block(hidden, rotation=rotation)
    return traced_attention(model.layers[layer], hidden, rotation)


def traced_attention(block: nn.Module, hidden: Tensor, rotation: Rotation | None) -> AttentionTrace:
    """The self-attention trace of one block run on `hidden` (1, T, D). The rest of the block's trace (its
    feed-forward's two T × 1,536 expansions, the sums) is let go on return, before the caller derives
    weights from Q and K: 12 MB less at the Attention tab's peak at 512 tokens."""
    _, trace = block(hidden, trace=True, rotation=rotation)
    if trace is None:
        raise TypeError(f"{type(block).__name__} returned no trace")
    return trace.attention


@torch.no_grad()
def each_layer_attention(model: DecoderOnlyLM, ids: tuple[int, ...]) -> Iterator[Tensor]:
    """(H, T, T) the attention weights of every query head, one layer after another, float32 on the model's
    device.

    For measures taken on every layer: each layer's maps are handed over and let go before the next layer runs,
    so a scan of 30 layers at 512 tokens holds one layer's 9.4 MB at a time, not a whole trace. They stay where
    they were computed: a measure takes its few numbers per head there, and on a GPU a long text's maps (2.4 GB a
    layer at 8,192 tokens) never cross to the CPU.
    """
    hidden, _ = model.embeddings(as_batch(ids, model))  # (1, T, D)
    rotation = rotation_of(model.config, hidden)
    for block in model.layers:
        hidden, trace = block(hidden, trace=True, rotation=rotation)
        if trace is None:
            raise TypeError(f"{type(block).__name__} returned no trace")
        weights = trace.attention.weights[0].float()  # (H, T, T)
        del trace  # the block's other intermediates go before the caller measures the weights
        yield weights
