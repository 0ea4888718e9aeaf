"""What one block of a transformer is made of: its parameters part by part (attention, feed-forward, layer norms,
and cross-attention in a decoder that reads an encoder), shared by the encoder and encoder-decoder lessons."""

from __future__ import annotations

from anatomy.config import TransformerConfig, parameter_breakdown


def block_parameters(config: TransformerConfig) -> dict[str, int]:
    """One block's parameters by part: "attention", "feed-forward", "layer norms", and "cross-attention" in a
    decoder that reads an encoder. `parameter_breakdown` counts each part over all the blocks; every block
    has the same shapes, so one block holds an equal share."""
    all_layers = " (all layers)"
    return {
        name.removesuffix(all_layers): count // config.num_layers
        for name, count in parameter_breakdown(config).items()
        if name.endswith(all_layers)
    }
