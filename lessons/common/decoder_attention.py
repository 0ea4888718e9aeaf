"""One layer's attention in a decoder-only model, as the lessons on decoders show it, and the limit on how long a
text they read. A pure function of the model and the token ids (torch only): nothing is stored on the model, which
every browser session shares.
"""

from __future__ import annotations

from collections.abc import Iterator

import torch
from torch import Tensor, nn

from anatomy.attention import AttentionTrace, one_head_weights
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
def each_layer_attention(model: DecoderOnlyLM, ids: tuple[int, ...]) -> Iterator[AttentionTrace]:
    """The self-attention trace of every layer, one layer after another, on the model's device.

    For measures taken on every layer (`head_maps` derives the maps): each layer's trace is handed over and let
    go before the next layer runs, so a scan holds one layer's queries and keys at a time, not a whole trace, and
    on a GPU a long text's maps never cross to the CPU.
    """
    hidden, _ = model.embeddings(as_batch(ids, model))  # (1, T, D)
    rotation = rotation_of(model.config, hidden)
    for block in model.layers:
        hidden, trace = block(hidden, trace=True, rotation=rotation)
        if trace is None:
            raise TypeError(f"{type(block).__name__} returned no trace")
        attention = trace.attention
        del trace  # the block's other intermediates go before the caller derives the maps
        yield attention


# Up to this size a layer's maps are derived together (SmolLM2 at 512 tokens: 9.4 MB; a scan of its 30 layers
# took 3.23 s so against 3.40 s head by head on two CPU threads); beyond it one head at a time, so that a layer
# at 8,192 tokens holds one head's 270 MB instead of nine heads' 2.4 GB (the sinks scan's peak on the CPU at
# 8,192 tokens: 7,119 MB over the weights before, 947 MB since).
WHOLE_LAYER_MAP_BYTES = 64 * 2**20


def head_maps(attention: AttentionTrace) -> Iterator[Tensor]:
    """(T, S) each query head's weights in turn, float32, on the trace's device: the forward's own numbers
    whichever way they are derived (a head's map alone equals its slice of all of them, bit for bit)."""
    _, heads, queries, _ = attention.query.shape
    if heads * queries * attention.shared_key.size(-2) * 4 <= WHOLE_LAYER_MAP_BYTES:
        weights = attention.weights[0].float()  # (H, T, S)
        yield from weights
        return
    mask = attention.mask  # made once for the layer (`head_weights` would make it again for each head)
    for head in range(heads):
        yield one_head_weights(attention.query, attention.shared_key, mask, head)[0, 0].float()
