"""BERT's masked-language-model head, DistilBERT and RoBERTa load through key maps and run exactly as
transformers runs them.

Each reference is a tiny random transformers model (2 layers, 4 heads, width 32) built from its config with
eager attention, saved to a temporary folder and loaded by `load_pretrained`: every layer's hidden states,
every head's attention weights and, for the masked-LM checkpoints, the scores over the vocabulary are compared.
"""

from __future__ import annotations

import pytest
import torch

from anatomy.checkpoints.pretrained import ModelLoadError, PretrainedModel, load_pretrained
from anatomy.config import parameter_count
from anatomy.models import Encoder

pytestmark = pytest.mark.usefixtures("no_autograd")

TOLERANCE = 1e-5  # float32; measured differences are below 3e-6 (see the report in the commit)
VOCABULARY, LAYERS, HEADS, WIDTH = 99, 2, 4, 32
BERT_SIZES = dict(
    vocab_size=VOCABULARY, hidden_size=WIDTH, num_hidden_layers=LAYERS, num_attention_heads=HEADS, intermediate_size=37
)
DISTILBERT_SIZES = dict(vocab_size=VOCABULARY, dim=WIDTH, n_layers=LAYERS, n_heads=HEADS, hidden_dim=37)


def hf_classes(family: str):
    """The config class, the bare encoder and the masked-LM model of one family, from transformers."""
    import transformers

    names = {
        "bert": ("BertConfig", "BertModel", "BertForMaskedLM"),
        "roberta": ("RobertaConfig", "RobertaModel", "RobertaForMaskedLM"),
        "distilbert": ("DistilBertConfig", "DistilBertModel", "DistilBertForMaskedLM"),
    }[family]
    return tuple(getattr(transformers, name) for name in names)


def save_tiny(family: str, with_head: bool, folder):
    """A random tiny model of `family` (drawn from seed 0, weights with std 0.2 so that scores are far from
    uniform), saved into `folder`; returns the transformers model itself, in eval mode, with eager attention."""
    config_class, bare, masked_lm = hf_classes(family)
    sizes = DISTILBERT_SIZES if family == "distilbert" else BERT_SIZES
    config = config_class(**sizes, initializer_range=0.2, attn_implementation="eager")
    torch.manual_seed(0)
    model = (masked_lm if with_head else bare)(config).eval()
    model.save_pretrained(folder)
    return model


@pytest.fixture(scope="module", params=["bert", "roberta", "distilbert"])
def family(request):
    return request.param


@pytest.fixture(scope="module", params=[False, True], ids=["encoder", "masked-lm"])
def both(request, family, tmp_path_factory):
    """(ours, theirs) for one family, with or without the masked-LM head."""
    folder = tmp_path_factory.mktemp(f"tiny-{family}")
    theirs = save_tiny(family, request.param, folder)
    return load_pretrained(str(folder), device="cpu"), theirs


def padded_batch(family: str) -> dict[str, torch.Tensor]:
    """Three rows of random ids (never the padding id), padded to 9 tokens with the family's padding id."""
    pad = 1 if family == "roberta" else 0
    generator = torch.Generator().manual_seed(1)
    input_ids = torch.randint(3, VOCABULARY, (3, 9), generator=generator)
    attention_mask = torch.tensor([[1] * 9, [1] * 6 + [0] * 3, [1] * 2 + [0] * 7])
    return {"input_ids": input_ids.masked_fill(attention_mask == 0, pad), "attention_mask": attention_mask}


def run_both(ours: PretrainedModel, theirs, batch):
    encoder = ours.model_as(Encoder)
    mine = encoder(batch["input_ids"], None, batch["attention_mask"], trace=True)
    reference = theirs(**batch, output_attentions=True, output_hidden_states=True)
    return encoder, mine, reference


def largest_difference(left, right) -> float:
    return (left - right).abs().max().item()


def test_every_layer_and_head_matches_transformers_on_every_real_token(family, both):
    """RoBERTa gives padding tokens position number `pad_token_id` where we continue counting; both hide
    padding from every real token, so real tokens agree and padding rows are not compared."""
    ours, theirs = both
    batch = padded_batch(family)
    real = batch["attention_mask"].bool()
    _, mine, reference = run_both(ours, theirs, batch)
    assert len(mine.hidden_states) == len(reference.hidden_states) == LAYERS + 1
    for depth, (left, right) in enumerate(zip(mine.hidden_states, reference.hidden_states)):
        difference = largest_difference(left[real], right[real])
        assert difference <= TOLERANCE, f"{family} hidden state {depth}: max |diff| {difference:.2e}"
    assert len(mine.attentions) == len(reference.attentions) == LAYERS
    for layer, (left, right) in enumerate(zip(mine.attentions, reference.attentions)):
        assert left.shape == right.shape == (3, HEADS, 9, 9)
        rows = real[:, None, :, None].expand_as(left)  # every real query's row, every key
        difference = largest_difference(left[rows], right[rows])
        assert difference <= TOLERANCE, f"{family} attention of layer {layer}: max |diff| {difference:.2e}"


def test_masked_lm_scores_match_transformers(family, tmp_path):
    theirs = save_tiny(family, True, tmp_path)
    ours = load_pretrained(str(tmp_path), device="cpu")
    assert ours.has_masked_lm_head
    batch = padded_batch(family)
    real = batch["attention_mask"].bool()
    encoder, mine, reference = run_both(ours, theirs, batch)
    logits = encoder.masked_lm_logits(mine.last_hidden_state)
    assert logits.shape == reference.logits.shape == (3, 9, VOCABULARY)
    difference = largest_difference(logits[real], reference.logits[real])
    assert difference <= TOLERANCE, f"{family} masked-LM logits: max |diff| {difference:.2e}"
    assert reference.logits[real].std() > 0.1  # words are told apart: agreement is not agreement on a flat line


def test_the_decoder_reuses_the_word_embeddings_so_the_head_adds_no_matrix_of_its_own(family, tmp_path):
    save_tiny(family, True, tmp_path)
    loaded = load_pretrained(str(tmp_path), device="cpu")
    encoder = loaded.model_as(Encoder)
    head_parameters = dict(encoder.masked_lm_head.named_parameters())
    assert sorted(head_parameters) == [
        "bias",
        "layer_norm.bias",
        "layer_norm.weight",
        "transform.bias",
        "transform.weight",
    ]
    assert head_parameters["bias"].shape == (VOCABULARY,)
    assert parameter_count(loaded.config) == sum(parameter.numel() for parameter in encoder.parameters())


def test_a_checkpoint_without_the_head_loads_as_before_and_says_it_has_none(family, tmp_path, embedded):
    save_tiny(family, False, tmp_path)
    bare = load_pretrained(str(tmp_path), device="cpu")
    assert not bare.has_masked_lm_head and not bare.config.masked_lm_head
    assert not embedded.has_masked_lm_head  # sentence-transformers' MiniLM was saved without its head
    with pytest.raises(ValueError, match="no masked-language-model head"):
        bare.model_as(Encoder).masked_lm_logits(torch.zeros(1, 2, WIDTH))


def test_a_decoder_that_is_not_a_copy_of_the_embeddings_is_refused(tmp_path):
    from safetensors.torch import load_file, save_file

    save_tiny("bert", True, tmp_path)
    tensors = load_file(tmp_path / "model.safetensors")
    tensors["cls.predictions.decoder.weight"] = torch.randn_like(tensors["bert.embeddings.word_embeddings.weight"])
    save_file(tensors, tmp_path / "model.safetensors", metadata={"format": "pt"})
    with pytest.raises(ModelLoadError, match="not tied to the embeddings"):
        load_pretrained(str(tmp_path), device="cpu")


def test_roberta_counts_positions_from_the_padding_id_plus_one(tmp_path):
    save_tiny("roberta", False, tmp_path)
    config = load_pretrained(str(tmp_path), device="cpu").config
    assert (config.position_offset, config.max_positions, config.longest_input) == (2, 512, 510)
    assert config.type_vocab_size == 2 and config.pooler
