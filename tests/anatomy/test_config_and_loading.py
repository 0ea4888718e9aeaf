"""Configurations (presets, parameter counts, Hugging Face conversion) and every way loading can fail.

The model cards and papers quote BERT-base 110M, BERT-large 340M, DistilBERT 66M and GPT-2 124M / 355M / 774M.
Counted from the configuration alone, BERT-large has 335.1M parameters: the quoted 340M is the rounded
figure from the BERT paper, 1.4% high, and the 2% tolerance below is there for it.
"""

from __future__ import annotations

import dataclasses
import json
import shutil

import pytest
import torch

from anatomy.checkpoints.pretrained import ModelLoadError, load_pretrained
from anatomy.config import (
    PRESETS,
    DecoderConfig,
    EncoderConfig,
    Seq2SeqConfig,
    config_from_fields,
    config_from_hf,
    parameter_count,
)
from anatomy.models import DecoderOnlyLM, Encoder, SequenceClassifier

pytestmark = pytest.mark.usefixtures("no_autograd")

QUOTED_IN_SEED_003 = {
    "bert-base-uncased": 110e6,
    "bert-large-uncased": 340e6,
    "distilbert-base-uncased": 66e6,
    "gpt2": 124e6,
    "gpt2-medium": 355e6,
    "gpt2-large": 774e6,
}


@pytest.mark.parametrize("preset", QUOTED_IN_SEED_003)
def test_parameter_count_of_each_preset_is_within_2_percent_of_the_seed_table(preset):
    counted, quoted = parameter_count(PRESETS[preset]), QUOTED_IN_SEED_003[preset]
    assert abs(counted - quoted) / quoted <= 0.02, f"{preset}: counted {counted:,} vs quoted {quoted:,.0f}"


def test_exact_parameter_counts_of_the_presets():
    """BERT-base 109,482,240 and GPT-2 124,439,808 are the numbers Hugging Face reports for these models."""
    exact = {name: parameter_count(PRESETS[name]) for name in QUOTED_IN_SEED_003}
    assert exact == {
        "bert-base-uncased": 109_482_240,
        "bert-large-uncased": 335_141_888,  # quoted as 340M
        "distilbert-base-uncased": 66_362_880,
        "gpt2": 124_439_808,
        "gpt2-medium": 354_823_168,
        "gpt2-large": 774_030_080,
    }, f"exact counts: {exact}"


def number_of_parameters(module: torch.nn.Module) -> int:
    return sum(parameter.numel() for parameter in module.parameters())


TINY = dict(vocab_size=50, max_positions=16, width=16, num_heads=4, ff_width=24, num_layers=2)


@pytest.mark.parametrize("pooler", [False, True], ids=["no-pooler", "pooler"])
@pytest.mark.parametrize("norm", ["post", "pre"])
def test_parameter_count_equals_a_built_encoder(norm, pooler):
    config = EncoderConfig(**TINY, norm_placement=norm, pooler=pooler)
    assert parameter_count(config) == number_of_parameters(Encoder(config))


def test_parameter_count_of_a_classifier_body_is_the_encoder_with_its_pooler():
    """The pooler (one D×D dense layer with bias) belongs to the encoder; the classifier adds only its head."""
    config = EncoderConfig(**TINY, pooler=True)
    classifier = SequenceClassifier(config, num_labels=3)
    body = number_of_parameters(classifier) - number_of_parameters(classifier.classifier)
    assert parameter_count(config) == body
    without_pooler = EncoderConfig(**TINY, pooler=False)
    assert parameter_count(config) - parameter_count(without_pooler) == 16 * 16 + 16


@pytest.mark.parametrize(
    "options",
    [{}, {"tie_embeddings": False}, {"cross_attention": True}],
    ids=["tied", "untied", "with-cross-attention"],
)
def test_parameter_count_equals_a_built_decoder_only_lm(options):
    config = DecoderConfig(**TINY, **options)
    assert parameter_count(config) == number_of_parameters(DecoderOnlyLM(config))


@pytest.mark.slow
def test_parameter_count_equals_hugging_face_models_of_the_same_config(hf_bert):
    from transformers import GPT2Config, GPT2LMHeadModel

    assert parameter_count(PRESETS["all-MiniLM-L6-v2"]) == number_of_parameters(hf_bert) == 22_713_216
    gpt2 = GPT2LMHeadModel(GPT2Config(vocab_size=101, n_positions=64, n_embd=32, n_layer=2, n_head=4))
    assert parameter_count(config_from_hf(gpt2.config)) == number_of_parameters(gpt2)  # tied head counted once


def test_config_from_hf_reads_every_field_of_a_bert_config_and_its_dict():
    from transformers import BertConfig

    hf = BertConfig(
        vocab_size=99,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=4,
        intermediate_size=37,
        max_position_embeddings=64,
        hidden_act="relu",
        layer_norm_eps=1e-7,
        type_vocab_size=3,
        pad_token_id=5,
        hidden_dropout_prob=0.25,
    )
    expected = EncoderConfig(
        vocab_size=99,
        max_positions=64,
        width=32,
        num_layers=2,
        num_heads=4,
        ff_width=37,
        activation="relu",
        layer_norm_eps=1e-7,
        dropout=0.25,
        type_vocab_size=3,
        pad_token_id=5,
    )
    assert config_from_hf(hf) == expected
    assert config_from_hf(hf.to_dict()) == expected
    assert config_from_hf(json.loads(hf.to_json_string())) == expected


def test_config_from_hf_reads_gpt2_configs_with_tanh_gelu_and_default_inner_width():
    from transformers import GPT2Config

    hf = GPT2Config(vocab_size=101, n_positions=64, n_embd=32, n_layer=2, n_head=4, layer_norm_epsilon=1e-6)
    expected = DecoderConfig(
        vocab_size=101,
        max_positions=64,
        width=32,
        num_layers=2,
        num_heads=4,
        ff_width=128,
        activation="gelu_tanh",
        layer_norm_eps=1e-6,
        dropout=0.1,
        tie_embeddings=True,
    )
    assert config_from_hf(hf) == expected == config_from_hf(hf.to_dict())
    untied = GPT2Config(n_embd=32, n_head=4, n_inner=40, tie_word_embeddings=False)
    assert (config_from_hf(untied).ff_width, config_from_hf(untied).tie_embeddings) == (40, False)


def test_config_is_frozen_and_checks_that_heads_divide_the_width():
    config = EncoderConfig()
    with pytest.raises(dataclasses.FrozenInstanceError):
        config.width = 10
    assert config.width == 768 and config.head_width == 64
    with pytest.raises(ValueError, match="width 100 is not divisible by num_heads 12"):
        EncoderConfig(width=100)


def test_a_decoder_left_to_its_default_has_as_many_key_value_heads_as_query_heads():
    assert DecoderConfig(num_heads=16, width=1024).num_kv_heads == 16
    assert DecoderConfig(num_heads=16, width=1024) == DecoderConfig(num_heads=16, width=1024, num_kv_heads=16)


# ----------------------------------------------------------------------- our own config.json: every key known

SEQ2SEQ_JSON = {"model_type": "anatomy-seq2seq", "width": 32, "num_heads": 2, "norm_placement": "post"}


def test_our_config_json_builds_the_configuration_it_names():
    assert config_from_hf(SEQ2SEQ_JSON) == Seq2SeqConfig(width=32, num_heads=2, norm_placement="post")


def test_an_unknown_key_in_our_config_is_refused_by_name_not_dropped():
    misspelt = {**SEQ2SEQ_JSON, "num_decoder_layer": 6}  # num_decoder_layers, missing its s
    with pytest.raises(ValueError, match="unknown config key 'num_decoder_layer'"):
        config_from_hf(misspelt)
    with pytest.raises(ValueError, match="unknown config keys 'colour', 'size'"):
        config_from_fields(DecoderConfig, {"colour": "red", "size": 3})


@pytest.mark.parametrize(
    "retired, current, value, kind",
    [("norm", "norm_placement", "pre", Seq2SeqConfig), ("key_value_heads", "num_kv_heads", 2, DecoderConfig)],
)
def test_a_retired_field_name_is_refused_with_the_name_it_has_now(retired, current, value, kind):
    with pytest.raises(ValueError, match=f"'{retired}' is now called '{current}'"):
        config_from_fields(kind, {"width": 32, "num_heads": 2, retired: value})
    with pytest.raises(TypeError, match=retired):  # nor is it an argument of the dataclass
        kind(**{retired: value})


def test_hugging_face_configs_keep_every_key_we_do_not_read():
    """Their config.json is theirs: transformers adds keys from version to version, and we read only ours."""
    gpt2_json = {"model_type": "gpt2", "vocab_size": 50, "n_positions": 16, "n_embd": 32, "n_layer": 1, "n_head": 4}
    with_new_keys = {**gpt2_json, "transformers_version": "5.0.0", "some_future_option": True, "norm": "x"}
    assert config_from_hf(with_new_keys) == config_from_hf(gpt2_json)


def test_a_model_folder_whose_config_has_an_unknown_key_says_which_key(tmp_path):
    from anatomy.checkpoints.saving import save_trained
    from anatomy.seq2seq import EncoderDecoder
    from anatomy.training.tasks import ReversalTask

    task = ReversalTask(max_length=4)
    folder = save_trained(EncoderDecoder(Seq2SeqConfig(vocab_size=len(task.tokenizer.tokens))), task, tmp_path / "m")
    raw = json.loads((folder / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps({**raw, "num_decoder_layer": 6}))
    assert "unknown config key 'num_decoder_layer'" in load_error(folder)


# ---------------------------------------------------------------------------------------- loading errors


@pytest.fixture(scope="module")
def tiny_bert_folder(tmp_path_factory):
    """A random 2-layer BertModel checkpoint (39 tensors), the base of every broken copy below."""
    from transformers import BertConfig, BertModel

    torch.manual_seed(0)
    folder = tmp_path_factory.mktemp("tiny-bert")
    BertModel(
        BertConfig(
            vocab_size=99,
            hidden_size=32,
            num_hidden_layers=2,
            num_attention_heads=4,
            intermediate_size=37,
            max_position_embeddings=64,
        )
    ).save_pretrained(folder)
    return folder


@pytest.fixture
def broken_copy(tiny_bert_folder, tmp_path):
    return shutil.copytree(tiny_bert_folder, tmp_path / "copy")


def rewrite_weights(folder, change) -> None:
    from safetensors.torch import load_file, save_file

    tensors = load_file(folder / "model.safetensors")
    change(tensors)
    save_file(tensors, folder / "model.safetensors", metadata={"format": "pt"})


def load_error(reference) -> str:
    with pytest.raises(ModelLoadError) as raised:
        load_pretrained(str(reference))
    return str(raised.value)


def test_the_untouched_tiny_checkpoint_loads(tiny_bert_folder):
    assert isinstance(load_pretrained(str(tiny_bert_folder)).model, Encoder)


def test_the_checkpoints_tensors_become_the_weights_without_a_copy(tiny_bert_folder, monkeypatch):
    """safetensors maps the file: a weight used as it is read stays on disk until a forward pass needs it."""
    from anatomy.checkpoints import pretrained

    original_read, read = pretrained.read_checkpoint, {}

    def recording_read(folder):
        read.update(original_read(folder))
        return read

    monkeypatch.setattr(pretrained, "read_checkpoint", recording_read)
    model = load_pretrained(str(tiny_bert_folder)).model
    table = model.embeddings.token.weight
    assert table.data_ptr() == read["embeddings.word_embeddings.weight"].data_ptr()
    assert (
        model.layers[1].attention.query.weight.data_ptr()
        == read["encoder.layer.1.attention.self.query.weight"].data_ptr()
    )


def test_changing_a_loaded_weight_leaves_the_checkpoint_file_as_it_was(tiny_bert_folder):
    first = load_pretrained(str(tiny_bert_folder)).model.embeddings.token.weight
    original = first.clone()
    first.add_(1.0)
    assert torch.equal(load_pretrained(str(tiny_bert_folder)).model.embeddings.token.weight, original)


@pytest.mark.parametrize("reference", ["/no/such/folder", "./missing"])
def test_a_path_that_does_not_exist_says_no_folder(reference):
    assert f"No folder at {reference!r}" in load_error(reference)


def test_a_file_instead_of_a_folder_asks_for_the_folder(broken_copy):
    assert "is a file; give the folder" in load_error(broken_copy / "config.json")


def test_a_folder_without_config_json_is_not_a_model_folder(broken_copy):
    (broken_copy / "config.json").unlink()
    assert "has no config.json" in load_error(broken_copy)


def test_a_config_that_is_not_json_suggests_a_corrupt_download(broken_copy):
    (broken_copy / "config.json").write_text('{"model_type": "bert", ')
    message = load_error(broken_copy)
    assert "is not valid JSON" in message and "corrupt" in message


def test_truncated_safetensors_says_the_weights_could_not_be_read(broken_copy):
    weights = broken_copy / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[: weights.stat().st_size // 2])
    message = load_error(broken_copy)
    assert "could not be read" in message and "truncated or corrupt" in message


def test_a_folder_with_config_but_no_weights_says_so(broken_copy):
    (broken_copy / "model.safetensors").unlink()
    assert "holds no weights" in load_error(broken_copy)


def test_a_t5_config_is_an_unsupported_model_type(tmp_path):
    from transformers import T5Config

    T5Config(d_model=32, num_layers=1, num_heads=4, d_ff=37, vocab_size=99).save_pretrained(tmp_path)
    assert "unsupported model_type 't5'" in load_error(tmp_path)


def test_a_missing_tensor_is_named_in_the_error(broken_copy):
    rewrite_weights(broken_copy, lambda tensors: tensors.pop("encoder.layer.1.attention.self.key.weight"))
    message = load_error(broken_copy)
    assert "missing: layers.1.attention.key.weight (from encoder.layer.1.attention.self.key.weight)" in message


def test_an_unexpected_tensor_is_named_in_the_error(broken_copy):
    rewrite_weights(broken_copy, lambda tensors: tensors.update({"encoder.layer.0.surprise.weight": torch.ones(3)}))
    message = load_error(broken_copy)
    assert "unexpected: encoder.layer.0.surprise.weight" in message and "missing" not in message


def test_a_tensor_of_the_wrong_shape_is_named_with_both_shapes(broken_copy):
    key = "encoder.layer.0.intermediate.dense.weight"  # (F=37, D=32) in the checkpoint
    rewrite_weights(broken_copy, lambda tensors: tensors.update({key: torch.zeros(36, 32)}))
    message = load_error(broken_copy)
    assert (
        "shape mismatch: layers.0.feed_forward.expand.weight (from encoder.layer.0.intermediate.dense.weight): "
        "checkpoint (36, 32) vs model (37, 32)"
    ) in message


def test_a_hub_id_offline_with_an_empty_cache_points_to_the_hub_and_the_cache(tmp_path, monkeypatch):
    import huggingface_hub.constants as hub_constants

    empty_home = tmp_path / "hf-home"
    empty_home.mkdir()
    monkeypatch.chdir(tmp_path)  # so that no local folder is called "bert-base-uncased"
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HOME", str(empty_home))
    monkeypatch.setattr(hub_constants, "HF_HUB_OFFLINE", True)  # read once at import time
    monkeypatch.setattr(hub_constants, "HF_HUB_CACHE", str(empty_home / "hub"))
    message = load_error("google-bert/bert-base-uncased")
    assert "not in this machine's Hugging Face cache" in message and "the hub could not be reached" in message
    assert "huggingface-cli download google-bert/bert-base-uncased" in message
