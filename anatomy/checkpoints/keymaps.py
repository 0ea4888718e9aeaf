"""Declarative maps from checkpoint tensor names to this package's module names.

Each map reads like a table: our parameter on the left, where it lives in the checkpoint on the right.
`{}` stands for the layer number. A `Source` may ask for the checkpoint tensor to be transposed (GPT-2
stores its projections as Conv1D, `x @ W` with W of shape (in, out), where nn.Linear keeps (out, in)) or
cut into equal chunks (GPT-2 fuses W_Q, W_K and W_V into one `c_attn` matrix of width 3·D), or its rows
put back in the order rotary embeddings expect (llama.cpp's GGUF files reorder W_Q's and W_K's rows).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import Literal


@dataclass(frozen=True)
class Source:
    """Where one of our parameters comes from in a checkpoint."""

    key: str  # checkpoint name, `{}` = layer index
    transpose: bool = False  # Conv1D (in, out) -> Linear (out, in)
    chunk: int | None = None  # take chunk `chunk` of `chunks` equal pieces along dim 0 (after transposing)
    chunks: int = 1
    # Undo llama.cpp's interleaved rotary row order, head by head: "query" heads (H) or "key" heads (H_kv).
    unpermute_rotary: Literal["query", "key"] | None = None


def _linear(ours: str, theirs: str, transpose: bool = False, **chunking) -> dict[str, Source]:
    """A weight and its bias; only the (2-D) weight is ever transposed."""
    return {
        f"{ours}.weight": Source(f"{theirs}.weight", transpose=transpose, **chunking),
        f"{ours}.bias": Source(f"{theirs}.bias", **chunking),
    }


def _fused_qkv(ours: str, theirs: str) -> dict[str, Source]:
    entries = {}
    for index, name in enumerate(("query", "key", "value")):
        entries.update(_linear(f"{ours}.{name}", theirs, transpose=True, chunk=index, chunks=3))
    return entries


# BERT's `BertModel` layout (all-MiniLM-L6-v2, bert-base-uncased, ...). Post-LN: `attention.output.LayerNorm`
# normalises the attention residual, `output.LayerNorm` the feed-forward residual.
BERT_EMBEDDINGS = {
    "embeddings.token.weight": Source("embeddings.word_embeddings.weight"),
    "embeddings.position.weight": Source("embeddings.position_embeddings.weight"),
    "embeddings.token_type.weight": Source("embeddings.token_type_embeddings.weight"),
    **_linear("embeddings.layer_norm", "embeddings.LayerNorm"),
}
BERT_LAYER = {
    **_linear("layers.{}.attention.query", "encoder.layer.{}.attention.self.query"),
    **_linear("layers.{}.attention.key", "encoder.layer.{}.attention.self.key"),
    **_linear("layers.{}.attention.value", "encoder.layer.{}.attention.self.value"),
    **_linear("layers.{}.attention.output", "encoder.layer.{}.attention.output.dense"),
    **_linear("layers.{}.attention_norm", "encoder.layer.{}.attention.output.LayerNorm"),
    **_linear("layers.{}.feed_forward.expand", "encoder.layer.{}.intermediate.dense"),
    **_linear("layers.{}.feed_forward.contract", "encoder.layer.{}.output.dense"),
    **_linear("layers.{}.feed_forward_norm", "encoder.layer.{}.output.LayerNorm"),
}
# BERT's pooler (dense + tanh on [CLS], trained for next-sentence prediction) belongs to the body.
BERT_ENCODER = {**BERT_EMBEDDINGS, **BERT_LAYER, **_linear("pooler", "pooler.dense")}
BERT_CLASSIFIER = {
    **{f"encoder.{ours}": source for ours, source in BERT_ENCODER.items()},
    **_linear("classifier", "classifier"),
}
# BertForMaskedLM's head (`cls.predictions`): transform.dense, the activation, transform.LayerNorm, then the
# decoder, whose weight is tied to the word embeddings; its bias is `cls.predictions.bias`.
BERT_MASKED_LM_HEAD = {
    **_linear("masked_lm_head.transform", "cls.predictions.transform.dense"),
    **_linear("masked_lm_head.layer_norm", "cls.predictions.transform.LayerNorm"),
    "masked_lm_head.bias": Source("cls.predictions.bias"),
}
# Checkpoint tensors we knowingly leave behind: buffers, the next-sentence-prediction head, and the decoder's
# copies of tensors loaded under other names (its weight is the word embeddings, its bias `cls.predictions.bias`;
# `tied_decoder_differs` refuses a checkpoint where they are not copies).
BERT_IGNORED = (r"embeddings\.position_ids", r"cls\.seq_relationship\..*", r"cls\.predictions\.decoder\.(weight|bias)")
BERT_PREFIXES = ("bert.",)

# RoBERTa (`RobertaModel` / `RobertaForMaskedLM`) keeps BERT's body names under `roberta.`; its head is `lm_head`.
ROBERTA_MASKED_LM_HEAD = {
    **_linear("masked_lm_head.transform", "lm_head.dense"),
    **_linear("masked_lm_head.layer_norm", "lm_head.layer_norm"),
    "masked_lm_head.bias": Source("lm_head.bias"),
}
ROBERTA_IGNORED = (r"embeddings\.position_ids", r"lm_head\.decoder\.(weight|bias)")
ROBERTA_PREFIXES = ("roberta.",)

# DistilBERT (`DistilBertModel` / `DistilBertForMaskedLM`): BERT's post-LN block under other names, no segment
# embeddings and no pooler (Sanh et al., 2019). sa_layer_norm normalises the attention residual,
# output_layer_norm the feed-forward residual.
DISTILBERT_ENCODER = {
    "embeddings.token.weight": Source("embeddings.word_embeddings.weight"),
    "embeddings.position.weight": Source("embeddings.position_embeddings.weight"),
    **_linear("embeddings.layer_norm", "embeddings.LayerNorm"),
    **_linear("layers.{}.attention.query", "transformer.layer.{}.attention.q_lin"),
    **_linear("layers.{}.attention.key", "transformer.layer.{}.attention.k_lin"),
    **_linear("layers.{}.attention.value", "transformer.layer.{}.attention.v_lin"),
    **_linear("layers.{}.attention.output", "transformer.layer.{}.attention.out_lin"),
    **_linear("layers.{}.attention_norm", "transformer.layer.{}.sa_layer_norm"),
    **_linear("layers.{}.feed_forward.expand", "transformer.layer.{}.ffn.lin1"),
    **_linear("layers.{}.feed_forward.contract", "transformer.layer.{}.ffn.lin2"),
    **_linear("layers.{}.feed_forward_norm", "transformer.layer.{}.output_layer_norm"),
}
DISTILBERT_MASKED_LM_HEAD = {
    **_linear("masked_lm_head.transform", "vocab_transform"),
    **_linear("masked_lm_head.layer_norm", "vocab_layer_norm"),
    "masked_lm_head.bias": Source("vocab_projector.bias"),
}
DISTILBERT_IGNORED = (r"embeddings\.position_ids", r"vocab_projector\.weight")
DISTILBERT_PREFIXES = ("distilbert.",)

# GPT-2's layout (`GPT2Model` / `GPT2LMHeadModel`). Pre-LN: ln_1 before attention, ln_2 before the MLP.
GPT2_DECODER = {
    "embeddings.token.weight": Source("wte.weight"),
    "embeddings.position.weight": Source("wpe.weight"),
    **_linear("layers.{}.attention_norm", "h.{}.ln_1"),
    **_fused_qkv("layers.{}.attention", "h.{}.attn.c_attn"),
    **_linear("layers.{}.attention.output", "h.{}.attn.c_proj", transpose=True),
    **_linear("layers.{}.feed_forward_norm", "h.{}.ln_2"),
    **_linear("layers.{}.feed_forward.expand", "h.{}.mlp.c_fc", transpose=True),
    **_linear("layers.{}.feed_forward.contract", "h.{}.mlp.c_proj", transpose=True),
    **_linear("final_norm", "ln_f"),
}
# The LM head is tied to wte; older checkpoints also carry the causal-mask buffers attn.bias/masked_bias.
GPT2_IGNORED = (r"lm_head\.weight", r"h\.\d+\.attn\.(bias|masked_bias)")
GPT2_PREFIXES = ("transformer.",)


# Hugging Face's `LlamaForCausalLM` layout (SmolLM2, TinyLlama, Llama 2/3): pre-norm with RMSNorm, no biases,
# a gated feed-forward whose gate_proj/up_proj/down_proj are our gate/expand/contract.
LLAMA_DECODER = {
    "embeddings.token.weight": Source("model.embed_tokens.weight"),
    "layers.{}.attention_norm.weight": Source("model.layers.{}.input_layernorm.weight"),
    "layers.{}.attention.query.weight": Source("model.layers.{}.self_attn.q_proj.weight"),
    "layers.{}.attention.key.weight": Source("model.layers.{}.self_attn.k_proj.weight"),
    "layers.{}.attention.value.weight": Source("model.layers.{}.self_attn.v_proj.weight"),
    "layers.{}.attention.output.weight": Source("model.layers.{}.self_attn.o_proj.weight"),
    "layers.{}.feed_forward_norm.weight": Source("model.layers.{}.post_attention_layernorm.weight"),
    "layers.{}.feed_forward.gate.weight": Source("model.layers.{}.mlp.gate_proj.weight"),
    "layers.{}.feed_forward.expand.weight": Source("model.layers.{}.mlp.up_proj.weight"),
    "layers.{}.feed_forward.contract.weight": Source("model.layers.{}.mlp.down_proj.weight"),
    "final_norm.weight": Source("model.norm.weight"),
    "lm_head.weight": Source("lm_head.weight"),  # only when the head is not tied to the embedding
}
# A tied checkpoint may still carry lm_head.weight (a copy of the embedding); old ones the rotary frequencies.
LLAMA_IGNORED = (r"lm_head\.weight", r"model\.layers\.\d+\.self_attn\.rotary_emb\.inv_freq")

# The same model in a GGUF file, as llama.cpp's converter names it (`convert_hf_to_gguf.py`, LlamaModel).
# Its W_Q and W_K rows are reordered for ggml's rotary pairing (neighbours (2i, 2i+1) instead of HF's (i, i +
# d_head/2)): `unpermute_rotary` puts them back. SmolLM2 ties its head: the file then has no output.weight.
LLAMA_GGUF = {
    "embeddings.token.weight": Source("token_embd.weight"),
    "layers.{}.attention_norm.weight": Source("blk.{}.attn_norm.weight"),
    "layers.{}.attention.query.weight": Source("blk.{}.attn_q.weight", unpermute_rotary="query"),
    "layers.{}.attention.key.weight": Source("blk.{}.attn_k.weight", unpermute_rotary="key"),
    "layers.{}.attention.value.weight": Source("blk.{}.attn_v.weight"),
    "layers.{}.attention.output.weight": Source("blk.{}.attn_output.weight"),
    "layers.{}.feed_forward_norm.weight": Source("blk.{}.ffn_norm.weight"),
    "layers.{}.feed_forward.gate.weight": Source("blk.{}.ffn_gate.weight"),
    "layers.{}.feed_forward.expand.weight": Source("blk.{}.ffn_up.weight"),
    "layers.{}.feed_forward.contract.weight": Source("blk.{}.ffn_down.weight"),
    "final_norm.weight": Source("output_norm.weight"),
    "lm_head.weight": Source("output.weight"),
}
# Precomputed rotary frequencies that some llama GGUFs carry (Llama 3's rope scaling); SmolLM2 has none.
LLAMA_GGUF_IGNORED = (r"rope_freqs\.weight",)


@dataclass(frozen=True)
class EncoderLayout:
    """How one BERT-family checkpoint names an encoder and its masked-LM head."""

    key_map: dict[str, Source]  # the body and the head (a body built without a head asks only for its own)
    ignored: tuple[str, ...]
    prefixes: tuple[str, ...]  # the body's prefix in task checkpoints (`bert.`, `roberta.`, `distilbert.`)
    # Tensors a checkpoint may store twice: (the head decoder's copy, the tensor it is tied to). Loading skips the
    # copy, so a checkpoint where the two differ is refused rather than run with the wrong one.
    tied_copies: tuple[tuple[str, str], ...]

    @property
    def head_marker(self) -> str:
        """The checkpoint key whose presence says the masked-LM head was saved."""
        return self.key_map["masked_lm_head.transform.weight"].key


ENCODER_LAYOUTS = {
    "bert": EncoderLayout(
        {**BERT_ENCODER, **BERT_MASKED_LM_HEAD},
        BERT_IGNORED,
        BERT_PREFIXES,
        (
            ("cls.predictions.decoder.weight", "embeddings.word_embeddings.weight"),
            ("cls.predictions.decoder.bias", "cls.predictions.bias"),
        ),
    ),
    "roberta": EncoderLayout(
        {**BERT_ENCODER, **ROBERTA_MASKED_LM_HEAD},
        ROBERTA_IGNORED,
        ROBERTA_PREFIXES,
        (("lm_head.decoder.weight", "embeddings.word_embeddings.weight"), ("lm_head.decoder.bias", "lm_head.bias")),
    ),
    "distilbert": EncoderLayout(
        {**DISTILBERT_ENCODER, **DISTILBERT_MASKED_LM_HEAD},
        DISTILBERT_IGNORED,
        DISTILBERT_PREFIXES,
        (("vocab_projector.weight", "embeddings.word_embeddings.weight"),),
    ),
}


def identity_map(parameter_names) -> dict[str, Source]:
    """Each parameter under its own name: checkpoints written by this package (the encoder-decoder trained
    here) need no translation, but still go through the same checks."""
    return {name: Source(name) for name in parameter_names}


def expand_layers(key_map: dict[str, Source], num_layers: int) -> dict[str, Source]:
    """Replace `{}` by every layer index: one entry per concrete parameter name."""
    expanded = {}
    for ours, source in key_map.items():
        indices = range(num_layers) if "{}" in ours else [None]
        for index in indices:
            name = ours if index is None else ours.format(index)
            key = source.key if index is None else source.key.format(index)
            expanded[name] = replace(source, key=key)
    return expanded


def is_ignored(key: str, ignored_patterns: tuple[str, ...]) -> bool:
    return any(re.fullmatch(pattern, key) for pattern in ignored_patterns)
