"""Reading GGUF files, llama.cpp's single-file checkpoints, into float32 torch tensors.

A GGUF file is three parts one after another (https://github.com/ggml-org/ggml/blob/master/docs/gguf.md):

1. a header: the magic bytes `GGUF`, a version (2 or 3), how many tensors and metadata entries follow;
2. metadata: typed key/value pairs (`llama.block_count = 30`, the whole tokenizer vocabulary, ...), then a
   table giving each tensor's name, shape, storage type and offset;
3. the tensor data, each tensor starting at a multiple of `general.alignment` (32 bytes by default).

Shapes are written fastest-moving dimension first (ggml's `ne[0]` is the row length): `[576, 49152]` in the
file is a (49152, 576) matrix in torch order. Quantized types store blocks of 32 values sharing a scale:

* Q8_0 (34 bytes): a float16 scale d and 32 signed bytes q; value = d·q.
* Q4_0 (18 bytes): d and 16 bytes of 4-bit codes q in 0..15; value = d·(q − 8).
* Q4_1 (20 bytes): d, a float16 minimum m, and 16 bytes of codes; value = d·q + m.

In the 4-bit types byte j of a block holds value j in its low nibble and value j + 16 in its high one. The
dequantizers below follow the `gguf` package's operation order, so their results equal its bit for bit
(tests/anatomy/test_gguf.py); this module reads the bytes itself, with `struct` and torch, and needs nothing else.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

import torch
from torch import Tensor

from anatomy.config import DecoderConfig

GGUF_MAGIC = b"GGUF"
DEFAULT_ALIGNMENT = 32  # when the file has no general.alignment key

# ggml's type ids (enum ggml_type in ggml.h) -> name, for every type a file may hold, so errors can name it.
GGML_TYPE_NAMES = {
    0: "F32", 1: "F16", 2: "Q4_0", 3: "Q4_1", 6: "Q5_0", 7: "Q5_1", 8: "Q8_0", 9: "Q8_1", 10: "Q2_K",
    11: "Q3_K", 12: "Q4_K", 13: "Q5_K", 14: "Q6_K", 15: "Q8_K", 16: "IQ2_XXS", 17: "IQ2_XS", 18: "IQ3_XXS",
    19: "IQ1_S", 20: "IQ4_NL", 21: "IQ3_S", 22: "IQ2_S", 23: "IQ4_XS", 24: "I8", 25: "I16", 26: "I32",
    27: "I64", 28: "F64", 29: "IQ1_M", 30: "BF16",
}  # fmt: skip
# The types read here: name -> (values per block, bytes per block).
BLOCK_LAYOUTS = {"F32": (1, 4), "F16": (1, 2), "BF16": (1, 2), "Q8_0": (32, 34), "Q4_0": (32, 18), "Q4_1": (32, 20)}


class GGUFFormatError(ValueError):
    """The file is not a GGUF file that can be read: wrong magic bytes, unknown version, truncated."""


class UnsupportedGGUFError(ValueError):
    """A readable GGUF file, but not one this package runs: its architecture or a tensor's storage type."""


@dataclass(frozen=True)
class TensorInfo:
    """One row of the tensor table."""

    name: str
    type_name: str  # "Q4_1", "F32", ...
    shape: tuple[int, ...]  # torch order: the file's order reversed
    offset: int  # from the start of the data section
    num_bytes: int


@dataclass(frozen=True)
class GGUFFile:
    """A GGUF file's metadata and tensor table. The tensors stay in the file until `read_tensor` reads one: a
    loader then holds one tensor's bytes at a time, never the whole file beside the weights it becomes."""

    path: Path
    version: int
    metadata: dict[str, Any]  # key -> str, int, float, bool, or a list of them
    tensors: dict[str, TensorInfo]
    data_start: int  # where the (aligned) tensor data begins


# Metadata value types (GGUFValueType) of fixed width -> struct format; 8 is a string, 9 an array.
_SCALAR_FORMATS = {0: "B", 1: "b", 2: "H", 3: "h", 4: "I", 5: "i", 6: "f", 7: "?", 10: "Q", 11: "q", 12: "d"}
_STRING, _ARRAY = 8, 9


class _Reader:
    """Walks the header, reading the file as far as the header goes (a megabyte at a time); every read checks
    that it stays inside the file, so a truncated file fails cleanly."""

    CHUNK_BYTES = 1 << 20

    def __init__(self, file: BinaryIO, path: Path, file_size: int):
        self.file, self.path, self.file_size = file, path, file_size
        self.data, self.position = bytearray(), 0  # the file's first bytes, as far as read so far

    def _need(self, count: int) -> None:
        end = self.position + count
        if end > self.file_size:
            raise GGUFFormatError(
                f"{self.path.name}: the header ends early (it needs byte {end:,}, the file has "
                f"{self.file_size:,}): the file is truncated or corrupt"
            )
        if end > len(self.data):
            self.data += self.file.read(max(self.CHUNK_BYTES, end - len(self.data)))

    def unpack(self, fmt: str) -> tuple:
        size = struct.calcsize("<" + fmt)
        self._need(size)
        values = struct.unpack_from("<" + fmt, self.data, self.position)
        self.position += size
        return values

    def raw_bytes(self, count: int) -> bytes:
        self._need(count)
        raw = bytes(self.data[self.position : self.position + count])
        self.position += count
        return raw

    def string(self) -> str:
        (length,) = self.unpack("Q")
        raw = self.raw_bytes(length)
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError as error:
            raise GGUFFormatError(
                f"{self.path.name}: a string at byte {self.position - length} is not UTF-8"
            ) from error

    def value(self, value_type: int) -> Any:
        if value_type in _SCALAR_FORMATS:
            return self.unpack(_SCALAR_FORMATS[value_type])[0]
        if value_type == _STRING:
            return self.string()
        if value_type == _ARRAY:
            element_type, count = self.unpack("IQ")
            if element_type in _SCALAR_FORMATS:  # numbers: one unpack for the whole array
                return list(self.unpack(f"{count}{_SCALAR_FORMATS[element_type]}"))
            return [self.value(element_type) for _ in range(count)]
        raise GGUFFormatError(f"{self.path.name}: unknown metadata value type {value_type} at byte {self.position}")


def read_gguf(path: str | Path) -> GGUFFile:
    """Metadata and tensor table of a GGUF file (versions 2 and 3); the tensors are read by `read_tensor`."""
    path = Path(path)
    file_size = path.stat().st_size
    with path.open("rb") as file:
        reader = _Reader(file, path, file_size)
        if file_size < len(GGUF_MAGIC) or reader.raw_bytes(len(GGUF_MAGIC)) != GGUF_MAGIC:
            raise GGUFFormatError(f"{path.name} does not start with the bytes 'GGUF': it is not a GGUF file")
        version, tensor_count, metadata_count = reader.unpack("IQQ")
        if version not in (2, 3):
            raise GGUFFormatError(f"{path.name} is GGUF version {version}; versions 2 and 3 can be read")
        metadata = {}
        for _ in range(metadata_count):
            key = reader.string()
            metadata[key] = reader.value(reader.unpack("I")[0])
        tensors = {}
        for _ in range(tensor_count):
            name = reader.string()
            (num_dims,) = reader.unpack("I")
            file_shape = reader.unpack(f"{num_dims}Q")
            type_id, offset = reader.unpack("IQ")
            type_name = GGML_TYPE_NAMES.get(type_id, f"type {type_id}")
            tensors[name] = TensorInfo(
                name, type_name, tuple(reversed(file_shape)), offset, _byte_count(name, type_name, file_shape)
            )
    alignment = int(metadata.get("general.alignment", DEFAULT_ALIGNMENT))
    data_start = -(-reader.position // alignment) * alignment  # round up to the alignment
    for info in tensors.values():
        end = data_start + info.offset + info.num_bytes
        if end > file_size:
            raise GGUFFormatError(
                f"{path.name}: tensor {info.name} ends at byte {end:,} but the file has {file_size:,}: it is truncated"
            )
    return GGUFFile(path, version, metadata, tensors, data_start)


def _byte_count(name: str, type_name: str, file_shape: tuple[int, ...]) -> int:
    if type_name not in BLOCK_LAYOUTS:
        raise UnsupportedGGUFError(
            f"tensor {name} is stored as {type_name}; the types read here are {', '.join(BLOCK_LAYOUTS)}"
        )
    values_per_block, bytes_per_block = BLOCK_LAYOUTS[type_name]
    if not file_shape or file_shape[0] % values_per_block:
        raise GGUFFormatError(
            f"tensor {name}: rows of {file_shape[:1]} values do not fill blocks of {values_per_block}"
        )
    count = 1
    for size in file_shape:
        count *= size
    return count // values_per_block * bytes_per_block


# ---------------------------------------------------------------------------------------------------------
# Dequantizing: (rows, bytes per row) uint8 -> (rows, values per row) float32


def _float16_column(blocks: Tensor, start: int) -> Tensor:
    """Bytes start, start + 1 of every block read as one float16 and widened: (N, block bytes) -> (N, 1)."""
    return blocks[:, start : start + 2].contiguous().view(torch.float16).float()


def _nibbles(packed: Tensor) -> Tensor:
    """(N, 16) bytes -> (N, 32) 4-bit codes: the low nibbles are values 0..15, the high ones 16..31."""
    return torch.cat((packed & 0x0F, packed >> 4), dim=1)


def dequantize_q8_0(raw: Tensor) -> Tensor:
    blocks = raw.reshape(-1, 34)  # (N, 34): d | 32 signed bytes
    codes = blocks[:, 2:].contiguous().view(torch.int8)  # (N, 32)
    return (codes.float() * _float16_column(blocks, 0)).reshape(raw.size(0), -1)


def dequantize_q4_0(raw: Tensor) -> Tensor:
    blocks = raw.reshape(-1, 18)  # (N, 18): d | 16 bytes of codes
    codes = _nibbles(blocks[:, 2:]).to(torch.int8) - 8  # (N, 32) in −8..7
    return (_float16_column(blocks, 0) * codes.float()).reshape(raw.size(0), -1)


def dequantize_q4_1(raw: Tensor) -> Tensor:
    blocks = raw.reshape(-1, 20)  # (N, 20): d | m | 16 bytes of codes
    codes = _nibbles(blocks[:, 4:]).float()  # (N, 32) in 0..15
    # d·q, then + m: two roundings in the gguf package's order (a fused multiply-add could differ in the last bit)
    return (codes * _float16_column(blocks, 0) + _float16_column(blocks, 2)).reshape(raw.size(0), -1)


DEQUANTIZERS = {
    "F32": lambda raw: raw.view(torch.float32).clone(),
    "F16": lambda raw: raw.view(torch.float16).float(),
    "BF16": lambda raw: raw.view(torch.bfloat16).float(),
    "Q8_0": dequantize_q8_0,
    "Q4_0": dequantize_q4_0,
    "Q4_1": dequantize_q4_1,
}


def read_tensor(gguf: GGUFFile, name: str) -> Tensor:
    """One tensor as float32, in torch order, read from the file."""
    info = gguf.tensors[name]
    stored = bytearray(info.num_bytes)
    with gguf.path.open("rb") as file:
        file.seek(gguf.data_start + info.offset)
        if file.readinto(stored) != info.num_bytes:
            raise GGUFFormatError(f"{gguf.path.name}: tensor {name} ends past the end of the file: it was cut since")
    raw = torch.frombuffer(stored, dtype=torch.uint8)
    bytes_per_row = _byte_count(name, info.type_name, (info.shape[-1],))
    rows = raw.reshape(info.num_bytes // bytes_per_row, bytes_per_row)  # (rows, bytes per row)
    return DEQUANTIZERS[info.type_name](rows).reshape(info.shape)


def unpermute_rotary_rows(weight: Tensor, num_heads: int) -> Tensor:
    """W_Q or W_K (heads·d_head, in) from llama.cpp's row order back to Hugging Face's.

    Rotary embeddings turn pairs of a head's coordinates. Hugging Face pairs coordinate i with i + d_head/2
    (`anatomy.rotary.rotate_half`); ggml pairs neighbours 2i and 2i + 1. llama.cpp's converter therefore
    interleaved each head's rows, [x0 .. x31 | y0 .. y31] -> [x0 y0 x1 y1 .. x31 y31] (`LlamaModel.permute` in
    convert_hf_to_gguf.py); here GGUF row 2i + j of a head goes back to row j·d_head/2 + i.
    """
    rows, columns = weight.shape
    half = rows // num_heads // 2
    return weight.reshape(num_heads, half, 2, columns).transpose(1, 2).reshape(rows, columns)


def permute_rotary_rows(weight: Tensor, num_heads: int) -> Tensor:
    """The converter's direction (Hugging Face -> llama.cpp), the inverse of `unpermute_rotary_rows`."""
    rows, columns = weight.shape
    half = rows // num_heads // 2
    return weight.reshape(num_heads, 2, half, columns).transpose(1, 2).reshape(rows, columns)


# ---------------------------------------------------------------------------------------------------------
# The model the metadata describes


def config_from_gguf(gguf: GGUFFile) -> DecoderConfig:
    """Our decoder configuration from a llama GGUF file's metadata (llama.cpp's `llama.*` keys)."""
    metadata = gguf.metadata
    architecture = metadata.get("general.architecture")
    if architecture != "llama":
        raise UnsupportedGGUFError(
            f"{gguf.path.name} holds a {architecture!r} model; only 'llama' (SmolLM2, TinyLlama, Llama 2/3) runs here"
        )
    required = ("block_count", "embedding_length", "feed_forward_length", "attention.head_count")
    missing = [f"llama.{key}" for key in required if f"llama.{key}" not in metadata]
    if missing:
        raise UnsupportedGGUFError(f"{gguf.path.name}: the metadata lacks {', '.join(missing)}")
    width, num_heads = int(metadata["llama.embedding_length"]), int(metadata["llama.attention.head_count"])
    if int(metadata.get("llama.rope.dimension_count", width // num_heads)) != width // num_heads:
        raise UnsupportedGGUFError(f"{gguf.path.name}: rotary embeddings on part of each head are not supported")
    embedding = gguf.tensors.get("token_embd.weight")
    vocab_size = embedding.shape[0] if embedding else len(metadata.get("tokenizer.ggml.tokens", ()))
    return DecoderConfig(
        vocab_size=int(metadata.get("llama.vocab_size", vocab_size)),
        max_positions=int(metadata.get("llama.context_length", 2048)),
        width=width,
        num_layers=int(metadata["llama.block_count"]),
        num_heads=num_heads,
        num_kv_heads=int(metadata.get("llama.attention.head_count_kv", num_heads)),
        ff_width=int(metadata["llama.feed_forward_length"]),
        activation="silu",
        layer_norm_eps=float(metadata.get("llama.attention.layer_norm_rms_epsilon", 1e-5)),
        dropout=0.0,
        tie_embeddings="output.weight" not in gguf.tensors,  # no separate head: it reuses the embedding
        norm_kind="rms",
        positions="rotary",
        rope_theta=float(metadata.get("llama.rope.freq_base", 10_000.0)),  # llama.cpp's default base
        feed_forward="gated",
        bias=False,
    )
