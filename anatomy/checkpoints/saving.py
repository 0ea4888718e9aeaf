"""Writing a model trained here as a checkpoint folder: `config.json` beside `model.safetensors`.

A decoder-only model is written in GPT-2's own layout, so that `load_pretrained` reads it through the same
key map as any GPT-2 checkpoint, and transformers' `GPT2LMHeadModel` opens the folder as it is. Writing
that layout is the loader's key map run backwards: transpose Linear (out, in) back into Conv1D (in, out),
and concatenate W_Q, W_K and W_V into one `c_attn`. The encoder-decoder has no Hugging Face twin, so it
keeps this package's own parameter names.

Fields a Hugging Face config does not have start with `anatomy_`: transformers keeps them as attributes
and otherwise ignores them.
"""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path

import torch
from torch import Tensor, nn

from anatomy.checkpoints import keymaps
from anatomy.config import SEQ2SEQ_MODEL_TYPE, DecoderConfig
from anatomy.models import DecoderOnlyLM, Encoder
from anatomy.seq2seq import EncoderDecoder
from anatomy.training.tasks import LetterTask

WEIGHTS_FILE = "model.safetensors"
CONFIG_FILE = "config.json"
_HF_ACTIVATION_NAMES = {"gelu_tanh": "gelu_new", "gelu": "gelu", "relu": "relu"}


def checkpoint_tensors(
    model: DecoderOnlyLM | Encoder, key_map: dict[str, keymaps.Source], prefix: str = ""
) -> dict[str, Tensor]:
    """The model's tensors under the checkpoint's names and layouts: the inverse of `pretrained.load_state`."""
    expanded = keymaps.expand_layers(key_map, len(model.layers))
    pieces: dict[str, dict[int, Tensor]] = {}
    sources: dict[str, keymaps.Source] = {}
    for name, tensor in model.state_dict().items():
        source = expanded[name]
        pieces.setdefault(source.key, {})[source.chunk or 0] = tensor.detach().cpu()
        sources[source.key] = source
    tensors = {}
    for key, chunks in pieces.items():
        source = sources[key]
        if sorted(chunks) != list(range(source.chunks)):
            raise ValueError(f"{key}: the key map fills chunks {sorted(chunks)} of {source.chunks}")
        tensor = torch.cat([chunks[index] for index in range(source.chunks)], dim=0)  # W_Q; W_K; W_V
        if source.transpose:
            tensor = tensor.T  # Linear -> Conv1D
        tensors[prefix + key] = tensor.contiguous().clone()
    return tensors


def gpt2_config(config: DecoderConfig) -> dict:
    """A GPT-2 config.json describing `config`; refuses anything GPT-2 could not run."""
    if (config.norm_placement, config.tie_embeddings, config.cross_attention) != ("pre", True, False):
        raise ValueError("only a pre-LN decoder with a tied LM head and no cross-attention has GPT-2's layout")
    return {
        "model_type": "gpt2",
        "architectures": ["GPT2LMHeadModel"],
        "vocab_size": config.vocab_size,
        "n_positions": config.max_positions,
        "n_embd": config.width,
        "n_layer": config.num_layers,
        "n_head": config.num_heads,
        "n_inner": config.ff_width,
        "activation_function": _HF_ACTIVATION_NAMES[config.activation],
        "layer_norm_epsilon": config.layer_norm_eps,
        "resid_pdrop": config.dropout,
        "embd_pdrop": config.dropout,
        "attn_pdrop": config.dropout,
        "tie_word_embeddings": True,
        "anatomy_causal": config.causal,  # False: a model GPT2LMHeadModel would run differently (it always masks)
    }


def save_trained(model: nn.Module, task: LetterTask, folder: str | Path) -> Path:
    """Write `model` (trained on `task`) to `folder`: GPT-2 layout for a decoder-only model, our own names
    for the encoder-decoder. The task and its character vocabulary go into config.json."""
    folder = Path(folder)
    tokenizer = task.tokenizer
    if isinstance(model, DecoderOnlyLM):
        config = gpt2_config(model.config)
        # GPT2LMHeadModel nests the body under `transformer.` and leaves the tied lm_head out of the file.
        tensors = checkpoint_tensors(model, keymaps.GPT2_DECODER, prefix="transformer.")
    elif isinstance(model, EncoderDecoder):
        config = {"model_type": SEQ2SEQ_MODEL_TYPE, **asdict(model.config)}
        tensors = {name: tensor.detach().cpu().contiguous().clone() for name, tensor in model.state_dict().items()}
    else:
        raise TypeError(f"cannot save a {type(model).__name__}: expected DecoderOnlyLM or EncoderDecoder")
    config |= {
        "bos_token_id": tokenizer.bos_id,
        "eos_token_id": tokenizer.eos_id,
        "pad_token_id": tokenizer.pad_id,
        "anatomy_task": task.to_dict(),
        "anatomy_vocabulary": list(tokenizer.tokens),
    }
    from safetensors.torch import save_file

    folder.mkdir(parents=True, exist_ok=True)
    save_file(tensors, str(folder / WEIGHTS_FILE), metadata={"format": "pt"})
    (folder / CONFIG_FILE).write_text(json.dumps(config, indent=2) + "\n", encoding="utf-8")
    return folder
