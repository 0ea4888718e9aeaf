"""The encoder-decoder: rectangular cross-attention, padding hidden, causal target, configs, saving and loading.

These run on an untrained model with random weights (std 0.5, so that every dependency shows in the
numbers); the trained reverser is checked in test_trained_models.py.
"""

from __future__ import annotations

import json

import pytest
import torch
from safetensors.torch import load_file, save_file

from anatomy.blocks import DecoderLayer
from anatomy.checkpoints.pretrained import ModelLoadError, load_pretrained
from anatomy.checkpoints.saving import save_trained
from anatomy.config import DecoderConfig, EncoderConfig, Seq2SeqConfig, config_from_hf, parameter_count
from anatomy.models import DecoderOnlyLM
from anatomy.seq2seq import Decoder, EncoderDecoder
from anatomy.training.loop import initialize_weights
from anatomy.training.tasks import ReversalTask

pytestmark = pytest.mark.usefixtures("no_autograd")

TASK = ReversalTask(alphabet="abcdefgh", min_length=2, max_length=6)
CONFIG = Seq2SeqConfig(
    vocab_size=len(TASK.tokenizer),
    max_positions=8,
    width=32,
    num_layers=2,
    num_decoder_layers=3,
    num_heads=4,
    ff_width=64,
)
WORDS = ["abcdef", "hgf", "cc"]


@pytest.fixture(scope="module")
def model():
    return initialize_weights(EncoderDecoder(CONFIG), seed=0, std=0.5).eval()


@pytest.fixture(scope="module")
def batch():
    return TASK.batch(WORDS)


def largest_difference(left, right) -> float:
    return (left - right).abs().max().item()


def test_the_halves_are_an_encoder_config_and_a_decoder_config_with_cross_attention():
    assert isinstance(CONFIG.encoder, EncoderConfig) and CONFIG.encoder.num_layers == 2
    encoder = CONFIG.encoder
    assert (encoder.type_vocab_size, encoder.pooler, encoder.embedding_layer_norm) == (0, False, False)
    assert isinstance(CONFIG.decoder, DecoderConfig) and CONFIG.decoder.num_layers == 3
    assert CONFIG.decoder.cross_attention and CONFIG.decoder.causal
    assert CONFIG.encoder.width == CONFIG.decoder.width == 32


def test_parameter_count_from_the_config_equals_the_built_model(model):
    assert parameter_count(CONFIG) == sum(parameter.numel() for parameter in model.parameters())
    for layer in model.decoder.layers:
        assert isinstance(layer, DecoderLayer) and layer.cross_attention is not None


def test_a_decoder_without_cross_attention_is_refused():
    with pytest.raises(ValueError, match="cross_attention=True"):
        Decoder(DecoderConfig(vocab_size=10, width=32, num_heads=2))


def test_cross_attention_is_rectangular_target_by_source_in_every_decoder_block(model, batch):
    output = model(**batch.inputs, trace=True)
    assert output.logits.shape == (3, 7, CONFIG.vocab_size)  # T = <bos> + 6 letters
    assert len(output.cross_attentions) == 3
    for weights in output.cross_attentions:
        assert weights.shape == (3, 4, 7, 6)  # (B, H, T, S), T != S
        assert torch.allclose(weights.sum(dim=-1), torch.ones(3, 4, 7))


def test_source_padding_gets_no_attention_and_changes_no_output(model, batch):
    output = model(**batch.inputs, trace=True)
    for weights in output.cross_attentions:
        assert torch.all(weights[1, :, :, 3:] == 0.0)  # "hgf" is padded from position 3
    alone = TASK.batch(["hgf"])
    by_itself = model(**alone.inputs).logits  # (1, 4, V), no padding at all
    assert largest_difference(output.logits[1, :4], by_itself[0]) <= 1e-5


def test_the_decoder_is_causal_and_the_encoder_never_sees_the_target(model, batch):
    target = batch.inputs["target_ids"].clone()
    target[:, 4] = TASK.tokenizer.id("a") if target[0, 4] != TASK.tokenizer.id("a") else TASK.tokenizer.id("b")
    changed = {**batch.inputs, "target_ids": target}
    before, after = model(**batch.inputs), model(**changed)
    assert largest_difference(before.logits[:, :4], after.logits[:, :4]) == 0.0
    assert largest_difference(before.logits[:, 4:], after.logits[:, 4:]) > 1e-3
    assert torch.equal(before.encoder.last_hidden_state, after.encoder.last_hidden_state)


def test_greedy_generation_appends_the_argmax_of_a_full_forward_each_step(model, batch):
    source, mask = batch.inputs["source_ids"], batch.inputs["source_mask"]
    generated = model.generate_greedy(source, TASK.tokenizer.bos_id, 5, source_mask=mask)
    assert generated.shape == (3, 6) and torch.all(generated[:, 0] == TASK.tokenizer.bos_id)
    for step in range(1, 6):
        logits = model(source, generated[:, :step], source_mask=mask).logits
        assert torch.equal(logits[:, -1].argmax(dim=-1), generated[:, step])


def test_cross_attentions_need_a_traced_forward(model, batch):
    with pytest.raises(ValueError, match="trace=True"):
        _ = model(**batch.inputs).cross_attentions


def test_a_saved_encoder_decoder_loads_back_through_load_pretrained_with_its_task(model, batch, tmp_path):
    folder = save_trained(model, TASK, tmp_path / "reverser")
    raw = json.loads((folder / "config.json").read_text())
    assert raw["model_type"] == "anatomy-seq2seq"
    assert raw["anatomy_vocabulary"][:5] == ["<pad>", "<bos>", "<eos>", "=", "a"]
    assert config_from_hf(raw) == CONFIG
    loaded = load_pretrained(str(folder), device="cpu")
    assert isinstance(loaded.model, EncoderDecoder) and loaded.family == "encoder-decoder"
    assert loaded.config == CONFIG and loaded.task == TASK and loaded.tokenizer is None
    assert torch.equal(loaded.model(**batch.inputs).logits, model(**batch.inputs).logits)


@pytest.mark.parametrize(
    "damage, message",
    [
        (lambda state: state.pop("decoder.final_norm.bias"), "missing: decoder.final_norm.bias"),
        (lambda state: state.update({"decoder.extra.weight": torch.zeros(2)}), "unexpected: decoder.extra.weight"),
        (
            lambda state: state.update({"encoder.embeddings.position.weight": torch.zeros(9, 32)}),
            r"encoder.embeddings.position.weight \(from encoder.embeddings.position.weight\): checkpoint \(9, 32\)",
        ),
    ],
    ids=["missing", "unexpected", "shape"],
)
def test_the_identity_key_map_still_checks_every_name_and_shape(model, tmp_path, damage, message):
    folder = save_trained(model, TASK, tmp_path / "damaged")
    state = load_file(folder / "model.safetensors")
    damage(state)
    save_file(state, str(folder / "model.safetensors"), metadata={"format": "pt"})
    with pytest.raises(ModelLoadError, match=message):
        load_pretrained(str(folder))


def test_a_config_whose_vocabulary_disagrees_with_its_task_is_refused(model, tmp_path):
    folder = save_trained(model, TASK, tmp_path / "mismatch")
    raw = json.loads((folder / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps({**raw, "anatomy_vocabulary": raw["anatomy_vocabulary"][::-1]}))
    with pytest.raises(ModelLoadError, match="anatomy_vocabulary does not match"):
        load_pretrained(str(folder))


def test_saving_refuses_a_decoder_gpt2_could_not_run(tmp_path):
    post_ln = DecoderOnlyLM(DecoderConfig(vocab_size=12, width=32, num_heads=2, num_layers=1, norm_placement="post"))
    with pytest.raises(ValueError, match="pre-LN"):
        save_trained(post_ln, TASK, tmp_path / "post-ln")
