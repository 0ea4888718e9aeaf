"""GGUF files (llama.cpp's checkpoints) read with torch alone, proven against the official `gguf` package and
against transformers' own GGUF loader; and every way a file can be broken, named in the error.

The fixtures are tiny random Llamas written with `gguf.GGUFWriter` as llama.cpp's converter writes them, one
per storage type (tests/tiny_gguf.py): 60-460 KB each, read in milliseconds.
"""

from __future__ import annotations

import struct

import pytest
import torch

from anatomy.checkpoints import gguf as gguf_module
from anatomy.checkpoints.gguf import (
    GGUFFormatError,
    UnsupportedGGUFError,
    config_from_gguf,
    permute_rotary_rows,
    read_gguf,
    read_tensor,
    unpermute_rotary_rows,
)
from anatomy.checkpoints.pretrained import ModelLoadError, load_pretrained
from tests.tiny_gguf import KV_HEADS, TENSOR_TYPES, write_tiny_llama_gguf

gguf = pytest.importorskip("gguf")

pytestmark = pytest.mark.usefixtures("no_autograd")


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """One tiny GGUF per storage type with a tied head, and one F32 file with a separate output matrix."""
    folder = tmp_path_factory.mktemp("tiny-gguf")
    paths = {kind: write_tiny_llama_gguf(folder / f"tiny-{kind}.gguf", kind) for kind in TENSOR_TYPES}
    paths["untied"] = write_tiny_llama_gguf(folder / "tiny-untied.gguf", "Q8_0", tie=False)
    return paths


def reference_tensors(path) -> dict[str, torch.Tensor]:
    """Every tensor as the gguf package dequantizes it, in torch order."""
    reader = gguf.GGUFReader(str(path))
    return {
        tensor.name: torch.from_numpy(gguf.dequantize(tensor.data, tensor.tensor_type).copy()).reshape(
            tuple(reversed([int(size) for size in tensor.shape]))
        )
        for tensor in reader.tensors
    }


@pytest.mark.parametrize("kind", TENSOR_TYPES)
def test_every_tensor_dequantizes_bit_for_bit_as_the_gguf_package_does(files, kind):
    ours = read_gguf(files[kind])
    expected = reference_tensors(files[kind])
    assert set(ours.tensors) == set(expected) and len(expected) == 20
    assert ours.tensors["blk.0.attn_q.weight"].type_name == ("F32" if kind == "F32" else kind)
    for name, values in expected.items():
        assert torch.equal(read_tensor(ours, name), values), name


@pytest.mark.parametrize("chunk_bytes", [1 << 20, 7], ids=["header in one read", "header in 7-byte reads"])
def test_metadata_and_tensor_table_equal_the_gguf_readers(files, monkeypatch, chunk_bytes):
    monkeypatch.setattr(gguf_module._Reader, "CHUNK_BYTES", chunk_bytes)
    ours = read_gguf(files["Q4_1"])
    reader = gguf.GGUFReader(str(files["Q4_1"]))
    fields = {key: field.contents() for key, field in reader.fields.items() if not key.startswith("GGUF.")}
    assert ours.metadata.keys() == fields.keys()
    for key, value in fields.items():
        expected = value if not isinstance(value, float) else pytest.approx(value, rel=1e-7)
        assert ours.metadata[key] == expected, key
    for tensor in reader.tensors:
        info = ours.tensors[tensor.name]
        assert info.shape == tuple(reversed([int(size) for size in tensor.shape]))
        assert (ours.data_start + info.offset, info.num_bytes) == (int(tensor.data_offset), int(tensor.n_bytes))


def test_unpermuting_rotary_rows_undoes_llama_cpps_permutation_and_pairs_coordinates_i_and_i_plus_half():
    weight = torch.arange(2 * 8 * 3, dtype=torch.float32).reshape(16, 3)  # 2 heads of width 8
    assert torch.equal(unpermute_rotary_rows(permute_rotary_rows(weight, 2), 2), weight)
    interleaved = permute_rotary_rows(weight, 2)
    # head 0: llama.cpp stores rows 0, 4, 1, 5, 2, 6, 3, 7 (each coordinate beside its rotary partner)
    assert interleaved[:8, 0].tolist() == [weight[row, 0].item() for row in (0, 4, 1, 5, 2, 6, 3, 7)]


def test_the_config_is_read_from_the_llama_metadata(files):
    config = config_from_gguf(read_gguf(files["F32"]))
    assert (config.width, config.num_layers, config.num_heads, config.num_kv_heads) == (64, 2, 4, KV_HEADS)
    assert (config.ff_width, config.rope_theta, config.vocab_size, config.max_positions) == (128, 10_000.0, 300, 256)
    assert config.tie_embeddings and not config_from_gguf(read_gguf(files["untied"])).tie_embeddings


@pytest.mark.parametrize("kind", [*TENSOR_TYPES, "untied"])
def test_a_gguf_file_runs_exactly_as_transformers_loads_it(files, kind):
    from transformers import LlamaForCausalLM

    path = files[kind]
    ours = load_pretrained(str(path), device="cpu")
    theirs = LlamaForCausalLM.from_pretrained(
        str(path.parent), gguf_file=path.name, attn_implementation="eager", dtype=torch.float32
    ).eval()
    their_weights = theirs.state_dict()
    assert torch.equal(
        ours.model.layers[1].attention.query.weight, their_weights["model.layers.1.self_attn.q_proj.weight"]
    )
    assert torch.equal(
        ours.model.layers[0].attention.key.weight, their_weights["model.layers.0.self_attn.k_proj.weight"]
    )
    input_ids = torch.randint(0, 300, (1, 17), generator=torch.Generator().manual_seed(0))
    mine = ours.model(input_ids, trace=True)
    expected = theirs(input_ids, output_attentions=True)
    assert (mine.logits - expected.logits).abs().max().item() <= 1e-5
    assert expected.logits.std() > 0.5
    for weights, their_weights_map in zip(mine.attentions, expected.attentions, strict=True):
        assert (weights - their_weights_map).abs().max().item() <= 1e-5
    assert ours.metadata is not None and ours.metadata["general.architecture"] == "llama"
    assert ours.tokenizer is None  # built from the metadata outside anatomy (lessons.common.llm.tokenizer)


def test_modules_built_for_a_checkpoint_hold_no_memory_and_draw_no_random_weights():
    from anatomy.checkpoints.pretrained import weights_to_be_replaced

    untouched = torch.zeros(3, 4)
    with weights_to_be_replaced():
        table = torch.nn.Embedding(49_152, 576)
        torch.nn.init.normal_(untouched)
        torch.nn.init.kaiming_uniform_(tensor=untouched)
    assert table.weight.is_meta and table.weight.shape == (49_152, 576)
    assert torch.equal(untouched, torch.zeros(3, 4))
    torch.nn.init.normal_(untouched)  # outside, initialisation works again
    assert untouched.abs().sum() > 0


@pytest.mark.slow  # a fresh interpreter: 3-5 s
def test_a_cold_gguf_load_does_not_import_torch_dynamo(files):
    """On the meta device torch's `normal_` imports torch._dynamo (seconds on a cold start); a load never
    needs it."""
    import subprocess
    import sys

    script = (
        "import sys; from anatomy.checkpoints.pretrained import load_pretrained; "
        f"load_pretrained({str(files['Q4_1'])!r}, device='cpu'); "
        "print('torch._dynamo' in sys.modules)"
    )
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "False"


# ---------------------------------------------------------------------------------------------------------
# Broken and unsupported files


def broken(tmp_path, content: bytes):
    path = tmp_path / "broken.gguf"
    path.write_bytes(content)
    return path


def test_a_file_that_does_not_start_with_gguf_is_not_a_gguf_file(tmp_path):
    for content in (b"", b"hello, world\n", b"GGML" + bytes(100)):
        with pytest.raises(GGUFFormatError, match="does not start with the bytes 'GGUF'"):
            read_gguf(broken(tmp_path, content))


def test_an_unknown_version_is_named(tmp_path):
    with pytest.raises(GGUFFormatError, match="version 99"):
        read_gguf(broken(tmp_path, b"GGUF" + struct.pack("<IQQ", 99, 0, 0)))


def test_a_file_cut_anywhere_in_its_header_says_it_is_truncated(tmp_path, files):
    content = files["Q4_1"].read_bytes()
    header_end = read_gguf(files["Q4_1"]).data_start
    for length in (10, 100, header_end // 2, header_end - 1):
        with pytest.raises(GGUFFormatError, match="truncated"):
            read_gguf(broken(tmp_path, content[:length]))


def test_a_file_cut_in_its_tensor_data_names_the_tensor_that_ends_past_the_end(tmp_path, files):
    content = files["Q4_1"].read_bytes()
    with pytest.raises(GGUFFormatError, match=r"tensor blk\.\d\.\w+\.weight ends at byte [\d,]+ but the file has"):
        read_gguf(broken(tmp_path, content[:-1]))


def test_a_file_cut_after_its_header_was_read_names_the_tensor_it_no_longer_holds(tmp_path, files):
    path = broken(tmp_path, files["Q4_1"].read_bytes())
    header = read_gguf(path)
    last = max(header.tensors.values(), key=lambda info: info.offset)
    path.write_bytes(path.read_bytes()[:-1])
    with pytest.raises(GGUFFormatError, match=rf"tensor {last.name} ends past the end of the file"):
        read_tensor(header, last.name)


def test_random_bytes_after_a_valid_start_fail_as_a_truncated_or_corrupt_header(tmp_path):
    noise = torch.randint(0, 256, (4000,), generator=torch.Generator().manual_seed(0), dtype=torch.uint8)
    with pytest.raises(GGUFFormatError):
        read_gguf(broken(tmp_path, b"GGUF" + struct.pack("<I", 3) + bytes(noise.tolist())))


def test_an_unsupported_quantization_type_is_named_with_the_supported_ones(tmp_path):
    writer = gguf.GGUFWriter(str(tmp_path / "k-quant.gguf"), "llama")
    values = torch.randn(8, 256).numpy()
    q8_0 = gguf.GGMLQuantizationType.Q8_0
    writer.add_tensor("token_embd.weight", gguf.quantize(values, q8_0), raw_dtype=q8_0)
    # Q4_K's bytes, written by hand: the gguf package cannot quantize to it, and only the type id matters here.
    q4_k_bytes = torch.zeros(8, 144, dtype=torch.uint8).numpy()  # 144 bytes per block of 256 values
    writer.add_tensor("blk.0.attn_q.weight", q4_k_bytes, raw_dtype=gguf.GGMLQuantizationType.Q4_K)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    with pytest.raises(UnsupportedGGUFError, match=r"blk\.0\.attn_q\.weight is stored as Q4_K; .*Q8_0, Q4_0, Q4_1"):
        read_gguf(tmp_path / "k-quant.gguf")


def test_a_model_of_another_architecture_is_refused_by_name(tmp_path):
    path = write_tiny_llama_gguf(tmp_path / "qwen.gguf", "F32", architecture="qwen2")
    with pytest.raises(UnsupportedGGUFError, match="'qwen2' model; only 'llama'"):
        config_from_gguf(read_gguf(path))
    with pytest.raises(ModelLoadError, match="qwen2"):
        load_pretrained(str(path))


def test_load_pretrained_turns_every_gguf_failure_into_a_model_load_error(tmp_path):
    with pytest.raises(ModelLoadError, match="not a GGUF file"):
        load_pretrained(str(broken(tmp_path, b"not a model")))
    with pytest.raises(ModelLoadError, match="No file"):
        load_pretrained(str(tmp_path / "absent.gguf"))


def test_a_missing_tensor_is_named_by_the_key_map(tmp_path, files):
    source = read_gguf(files["F32"])
    writer = gguf.GGUFWriter(str(tmp_path / "incomplete.gguf"), "llama")
    for key, value in source.metadata.items():
        if key.startswith("llama."):
            kind = gguf.GGUFValueType.FLOAT32 if isinstance(value, float) else gguf.GGUFValueType.UINT32
            writer.add_key_value(key, value, kind)
    for name in source.tensors:
        if name != "blk.1.ffn_up.weight":
            writer.add_tensor(name, read_tensor(source, name).numpy())
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    with pytest.raises(
        ModelLoadError,
        match=r"missing: layers\.1\.feed_forward\.expand\.weight \(from blk\.1\.ffn_up\.weight\)",
    ):
        load_pretrained(str(tmp_path / "incomplete.gguf"))
