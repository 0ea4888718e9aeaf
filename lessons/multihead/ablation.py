"""How the heads are put back together, and what changes when some are switched off.

After attention, each head h holds a (T, d_head) block o_h. The blocks are laid side by side,
concat = [o_1 … o_H] (T, D), and mixed by the output projection: output = concat · W_Oᵀ + b.
Because W_O acts on the concatenation column block by column block, that is the same as a sum,

    output = Σ_h o_h · W_O[:, block h]ᵀ + b,

so every head *adds its own vector* to each token. Switching a head off ("ablating" it) means leaving its
term out of that sum: its block is zeroed before W_O, and the rest of the network runs as usual.

Nothing here modifies the model: one model object serves every browser session at once, so even a
temporary change to its weights could leak into another user's page. The ablated layer is recomputed
from the traced head outputs with the layer's own modules, and the later layers run through their
ordinary forward.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import Tensor

from anatomy.attention import AttentionTrace, MultiHeadAttention, merge_heads
from anatomy.blocks import EncoderLayer
from anatomy.models import Encoder
from anatomy.trace import LayerTrace, ModelTrace


@dataclass(frozen=True)
class HeadRecombination:
    """Split → per-head outputs → concatenate → W_O, for one token of one layer."""

    head_outputs: Tensor  # (H, d_head) what each head produced for this token
    concatenated: Tensor  # (D,) the traced concatenation
    recomputed_concatenation: Tensor  # (D,) torch.cat of the H head outputs, done here again
    contributions: Tensor  # (H, D) each head's term o_h · W_O[:, block h]ᵀ
    bias: Tensor  # (D,) b_O
    output: Tensor  # (D,) the traced attention output
    recomputed_output: Tensor  # (D,) concat · W_Oᵀ + b, done here again

    @property
    def contribution_norms(self) -> Tensor:
        """(H,) the length of the vector each head adds to the token: how loud that head is."""
        return self.contributions.norm(dim=-1)

    @property
    def concatenation_gap(self) -> float:
        """Largest |difference| between the traced concatenation and torch.cat of the heads (0: identical)."""
        return float((self.concatenated - self.recomputed_concatenation).abs().max())

    @property
    def output_gap(self) -> float:
        """Largest |difference| between the traced output and concat · W_Oᵀ + b computed here."""
        return float((self.output - self.recomputed_output).abs().max())

    @property
    def sum_gap(self) -> float:
        """Largest |difference| between the traced output and Σ_h contribution_h + b (rounding only)."""
        return float((self.output - self.contributions.sum(dim=0) - self.bias).abs().max())


@torch.inference_mode()
def recombine_heads(
    attention: MultiHeadAttention, attention_trace: AttentionTrace, token: int, batch: int = 0
) -> HeadRecombination:
    """Redo the last two steps of multi-head attention for one token, from the traced head outputs."""
    head_outputs = attention_trace.head_outputs[batch, :, token]  # (H, d_head)
    num_heads, head_width = head_outputs.shape
    recomputed_concatenation = torch.cat(list(head_outputs), dim=-1)  # (D,)
    weight, bias = attention.output.weight, attention.output.bias  # (D, D), (D,)
    recomputed_output = F.linear(recomputed_concatenation, weight, bias)  # (D,)
    weight_blocks = weight.view(weight.size(0), num_heads, head_width)  # (D, H, d_head)
    contributions = torch.einsum("hk,dhk->hd", head_outputs, weight_blocks)  # (H, D)
    return HeadRecombination(
        head_outputs=head_outputs,
        concatenated=attention_trace.concatenated[batch, token],
        recomputed_concatenation=recomputed_concatenation,
        contributions=contributions,
        bias=bias.detach(),
        output=attention_trace.output[batch, token],
        recomputed_output=recomputed_output,
    )


@dataclass(frozen=True)
class Ablation:
    """One text run twice: as the model computed it, and with some heads of one layer switched off."""

    layer: int
    heads_off: tuple[int, ...]
    original_states: Tensor  # (L + 1, T, D) the embeddings, then every layer's output
    ablated_states: Tensor  # (L + 1, T, D) the same with the heads switched off
    original_final: Tensor  # (T, D) what the model returns (after a final norm, in pre-LN models)
    ablated_final: Tensor  # (T, D)
    attention_shift: Tensor  # (L, H) how far each later head's weights moved (see `attention_shift`)

    @property
    def token_similarity(self) -> Tensor:
        """(L + 1, T) cosine similarity of each token's vector with and without the heads, per layer."""
        return cosine_similarity(self.original_states, self.ablated_states)

    @property
    def final_similarity(self) -> Tensor:
        """(T,) cosine similarity of each token's final vector with and without the heads."""
        return cosine_similarity(self.original_final, self.ablated_final)


def ablate_heads(model: Encoder, trace: ModelTrace, layer: int, heads_off: Iterable[int], batch: int = 0) -> Ablation:
    """Re-run `model` from `layer` on, with the given heads of that layer contributing nothing.

    `trace` is the model's own trace of the text; layers before `layer` are read from it unchanged.
    """
    heads_off = tuple(sorted(set(heads_off)))
    num_layers, num_heads = len(trace.layers), trace.layers[layer].attention.head_outputs.size(1)
    keep = torch.ones(num_heads, dtype=trace.output.dtype, device=trace.output.device)
    keep[list(heads_off)] = 0.0
    original_states = _states(trace)
    ablated_states = original_states[: layer + 1]
    shift = torch.zeros(num_layers, num_heads)
    with torch.inference_mode():
        hidden = layer_with_heads_scaled(encoder_block(model, layer), trace.layers[layer], keep)
        ablated_states.append(hidden)
        for later in range(layer + 1, num_layers):
            original = trace.layers[later]
            hidden, recomputed = model.layers[later](hidden, original.attention.mask, trace=True)
            shift[later] = attention_shift(original.attention.weights, recomputed.attention.weights)[batch].cpu()
            ablated_states.append(hidden)
        ablated_final = hidden if model.final_norm is None else model.final_norm(hidden)
    return Ablation(
        layer=layer,
        heads_off=heads_off,
        original_states=torch.stack(original_states)[:, batch],
        ablated_states=torch.stack(ablated_states)[:, batch],
        original_final=trace.output[batch],
        ablated_final=ablated_final[batch],
        attention_shift=shift,
    )


def encoder_block(model: Encoder, layer: int) -> EncoderLayer:
    """Block `layer` of the stack as the EncoderLayer it is (an nn.ModuleList hands out plain Modules)."""
    block = model.layers[layer]
    if not isinstance(block, EncoderLayer):
        raise TypeError(f"block {layer} is a {type(block).__name__}, not an EncoderLayer")
    return block


def states_by_depth(trace: ModelTrace, batch: int = 0) -> Tensor:
    """(L + 1, T, D) every token's vector at every depth: the embeddings, then each layer's output."""
    return torch.stack(_states(trace))[:, batch]


def _states(trace: ModelTrace) -> list[Tensor]:
    return [trace.embeddings.output] + [layer_trace.output for layer_trace in trace.layers]


def layer_with_heads_scaled(layer: EncoderLayer, layer_trace: LayerTrace, keep: Tensor) -> Tensor:
    """One block again, with head h's output multiplied by keep[h] (0 = off, 1 = as it was) before W_O.

    The heads' outputs come from the trace, so their attention is not recomputed; the block's own rule
    (`sublayer`: pre-LN or post-LN) then adds and normalises exactly as its forward does.
    """
    head_outputs = layer_trace.attention.head_outputs * keep.view(1, -1, 1, 1)  # (B, H, T, d_head)
    attended = layer.attention.output(merge_heads(head_outputs))  # (B, T, D)
    attention = layer.sublayer(layer_trace.input, layer.attention_norm, lambda _read: (attended, None))
    return layer.sublayer(attention.output, layer.feed_forward_norm, layer.feed_forward).output


def cosine_similarity(original: Tensor, changed: Tensor) -> Tensor:
    """(..., D) and (..., D) -> (...): cos of the angle between matching vectors (1 = same direction)."""
    return F.cosine_similarity(original, changed, dim=-1)


def attention_shift(original: Tensor, changed: Tensor) -> Tensor:
    """(..., T, S) twice -> (...): the total-variation distance ½ Σ_j |p_j − q_j| of each row, averaged
    over the rows. 0 when a head attends exactly as before, 1 when it now looks somewhere else entirely."""
    difference = original - changed
    return 0.5 * difference.abs_().sum(dim=-1).mean(dim=-1)  # in place: one (..., T, S) buffer, not two
