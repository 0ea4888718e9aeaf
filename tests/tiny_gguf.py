"""Tiny random Llama models written as GGUF files with the official `gguf` package, as llama.cpp's converter
writes them: fixtures for the GGUF reader, the key map and the tokenizer builder (no download, milliseconds).

Each is a 2-layer Llama of width 64 with 4 query heads sharing 2 key/value heads, and a byte-level BPE
tokenizer of 300 tokens trained here. W_Q and W_K rows are permuted into llama.cpp's rotary order, norms stay
F32 and the other matrices are stored as the type asked for.
"""

from __future__ import annotations

import json
from pathlib import Path

import torch

SPECIAL_TOKENS = ("<|endoftext|>", "<|im_start|>", "<|im_end|>")
CHAT_TEMPLATE = (
    "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\n' + message['content'] + "
    "'<|im_end|>' + '\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}"
)
CORPUS = [
    "The capital of France is Paris. The capital of Italy is Rome.",
    "Attention lets every token look at the tokens before it.",
    "A transformer block has attention, a feed-forward network and two residual connections.",
    "def add(a, b):\n    return a + b\n",
    "Queries, keys and values: the softmax of the scores weighs the values.",
] * 20
TENSOR_TYPES = ("F32", "F16", "BF16", "Q8_0", "Q4_0", "Q4_1")
FILE_TYPES = {"F32": 0, "F16": 1, "BF16": 32, "Q8_0": 7, "Q4_0": 2, "Q4_1": 3}  # llama_ftype numbering
HEADS, KV_HEADS, WIDTH, LAYERS, FF_WIDTH, ROPE_THETA = 4, 2, 64, 2, 128, 10_000.0


def train_tiny_bpe(vocab_size: int = 300):
    """A byte-level BPE: the 256 byte symbols, 3 special tokens and ~40 merges learned from CORPUS."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=list(SPECIAL_TOKENS),
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tokenizer.train_from_iterator(CORPUS, trainer)
    return tokenizer


def vocabulary_and_merges(tokenizer) -> tuple[list[str], list[str]]:
    model = json.loads(tokenizer.to_str())["model"]
    tokens = sorted(model["vocab"], key=model["vocab"].get)
    merges = [" ".join(pair) if isinstance(pair, list) else pair for pair in model["merges"]]
    return tokens, merges


def random_llama_weights(vocab_size: int, tie: bool, seed: int = 0) -> dict[str, torch.Tensor]:
    """Hugging Face-named weights: norms near 1, matrices with std 0.1 so that the logits are far from flat."""
    generator = torch.Generator().manual_seed(seed)

    def normal(*shape: int, std: float = 0.1) -> torch.Tensor:
        return torch.randn(*shape, generator=generator) * std

    head_width = WIDTH // HEADS
    weights = {"model.embed_tokens.weight": normal(vocab_size, WIDTH, std=1.0), "model.norm.weight": 1 + normal(WIDTH)}
    for layer in range(LAYERS):
        prefix = f"model.layers.{layer}."
        weights |= {
            prefix + "input_layernorm.weight": 1 + normal(WIDTH),
            prefix + "self_attn.q_proj.weight": normal(HEADS * head_width, WIDTH),
            prefix + "self_attn.k_proj.weight": normal(KV_HEADS * head_width, WIDTH),
            prefix + "self_attn.v_proj.weight": normal(KV_HEADS * head_width, WIDTH),
            prefix + "self_attn.o_proj.weight": normal(WIDTH, HEADS * head_width),
            prefix + "post_attention_layernorm.weight": 1 + normal(WIDTH),
            prefix + "mlp.gate_proj.weight": normal(FF_WIDTH, WIDTH),
            prefix + "mlp.up_proj.weight": normal(FF_WIDTH, WIDTH),
            prefix + "mlp.down_proj.weight": normal(WIDTH, FF_WIDTH),
        }
    if not tie:
        weights["lm_head.weight"] = normal(vocab_size, WIDTH)
    return weights


_GGUF_NAMES = {
    "input_layernorm": "attn_norm",
    "self_attn.q_proj": "attn_q",
    "self_attn.k_proj": "attn_k",
    "self_attn.v_proj": "attn_v",
    "self_attn.o_proj": "attn_output",
    "post_attention_layernorm": "ffn_norm",
    "mlp.gate_proj": "ffn_gate",
    "mlp.up_proj": "ffn_up",
    "mlp.down_proj": "ffn_down",
}
_GGUF_TOP_NAMES = {"model.embed_tokens.weight": "token_embd.weight", "model.norm.weight": "output_norm.weight"}
_GGUF_TOP_NAMES["lm_head.weight"] = "output.weight"


def gguf_name(hf_name: str) -> str:
    if hf_name in _GGUF_TOP_NAMES:
        return _GGUF_TOP_NAMES[hf_name]
    _, _, layer, *module, leaf = hf_name.split(".")  # model.layers.{i}.<module>.weight
    return f"blk.{layer}.{_GGUF_NAMES['.'.join(module)]}.{leaf}"


def write_tiny_llama_gguf(
    path: Path, tensor_type: str = "F32", tie: bool = True, architecture: str = "llama", seed: int = 0
) -> Path:
    """A tiny llama GGUF at `path`, 2-D weights stored as `tensor_type`; returns the path."""
    import gguf
    import numpy as np

    from anatomy.checkpoints.gguf import permute_rotary_rows

    tokenizer = train_tiny_bpe()
    tokens, merges = vocabulary_and_merges(tokenizer)
    weights = random_llama_weights(len(tokens), tie, seed)
    writer = gguf.GGUFWriter(str(path), architecture)
    writer.add_name("tiny-random-llama")
    writer.add_block_count(LAYERS)
    writer.add_context_length(256)
    writer.add_embedding_length(WIDTH)
    writer.add_feed_forward_length(FF_WIDTH)
    writer.add_head_count(HEADS)
    writer.add_head_count_kv(KV_HEADS)
    writer.add_rope_dimension_count(WIDTH // HEADS)
    writer.add_rope_freq_base(ROPE_THETA)
    writer.add_layer_norm_rms_eps(1e-5)
    writer.add_vocab_size(len(tokens))
    writer.add_file_type(FILE_TYPES[tensor_type])
    writer.add_tokenizer_model("gpt2")
    writer.add_tokenizer_pre("gpt2")
    writer.add_token_list(tokens)
    writer.add_token_types([gguf.TokenType.CONTROL if t in SPECIAL_TOKENS else gguf.TokenType.NORMAL for t in tokens])
    writer.add_token_merges(merges)
    writer.add_bos_token_id(tokens.index("<|im_start|>"))
    writer.add_eos_token_id(tokens.index("<|im_end|>"))
    writer.add_unk_token_id(tokens.index("<|endoftext|>"))
    writer.add_pad_token_id(tokens.index("<|im_end|>"))
    writer.add_add_bos_token(False)
    writer.add_chat_template(CHAT_TEMPLATE)
    for hf_name, value in weights.items():
        if hf_name.endswith("q_proj.weight"):
            value = permute_rotary_rows(value, HEADS)
        elif hf_name.endswith("k_proj.weight"):
            value = permute_rotary_rows(value, KV_HEADS)
        array = value.numpy().astype(np.float32)
        if array.ndim == 1 or tensor_type == "F32":
            writer.add_tensor(gguf_name(hf_name), array)  # norms are always F32, as llama.cpp writes them
        elif tensor_type == "F16":
            writer.add_tensor(gguf_name(hf_name), array.astype(np.float16))
        else:
            kind = gguf.GGMLQuantizationType[tensor_type]
            writer.add_tensor(gguf_name(hf_name), gguf.quantize(array, kind), raw_dtype=kind)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path
