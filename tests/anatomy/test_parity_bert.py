"""The anatomy encoder runs real BERT checkpoints exactly as transformers' BertModel does.

The reference is BertModel with eager attention (an explicit softmax, so it can return its weights).
Agreement is asked of every layer's hidden states and of every head's attention weights.
"""

from __future__ import annotations

import copy

import pytest
import torch

from anatomy.checkpoints.pretrained import load_pretrained
from anatomy.devices import choose_device
from anatomy.models import Encoder, SequenceClassifier

pytestmark = pytest.mark.usefixtures("no_autograd")

TOLERANCE = 1e-5  # float32: both implementations round differently, never by more than this
SENTENCE = "I love mathematics"
PAIR = ("I love Apple iPhones.", "Apple is a company.")
BATCH = ["The cat sat.", "A much longer sentence about mathematics and love.", "Hi"]


def run_both(embedded, hf_bert, encoding):
    ours = embedded.model(
        encoding["input_ids"], encoding.get("token_type_ids"), encoding.get("attention_mask"), trace=True
    )
    theirs = hf_bert(**encoding, output_attentions=True, output_hidden_states=True)
    return ours, theirs


def largest_difference(left, right) -> float:
    return (left - right).abs().max().item()


def assert_every_layer_agrees(ours, theirs, real_tokens=None):
    """Hidden states (embeddings + each layer) and attention weights (each layer, each head)."""
    assert len(ours.hidden_states) == len(theirs.hidden_states) == 7  # embeddings + 6 MiniLM layers
    for layer, (mine, reference) in enumerate(zip(ours.hidden_states, theirs.hidden_states)):
        if real_tokens is not None:
            mine, reference = mine[real_tokens], reference[real_tokens]
        difference = largest_difference(mine, reference)
        assert difference <= TOLERANCE, f"hidden state {layer}: max |diff| {difference:.2e}"
    assert len(ours.attentions) == len(theirs.attentions) == 6
    for layer, (mine, reference) in enumerate(zip(ours.attentions, theirs.attentions)):
        assert mine.shape == reference.shape  # (B, H=12, T, T)
        difference = largest_difference(mine, reference)
        assert difference <= TOLERANCE, f"attention weights of layer {layer}: max |diff| {difference:.2e}"


def test_load_pretrained_without_arguments_gives_the_embedded_minilm(embedded):
    default = load_pretrained()
    assert default.name == "all-MiniLM-L6-v2 (embedded)"
    assert default.folder == embedded.folder and default.device == choose_device()
    assert isinstance(default.model, Encoder) and default.tokenizer is not None
    assert (embedded.folder / "config.json").is_file()
    assert (default.config.width, default.config.num_layers, default.config.num_heads) == (384, 6, 12)


def test_the_fixture_model_runs_on_the_cpu_in_eval_mode(embedded):
    assert isinstance(embedded.model, Encoder)
    assert embedded.device == torch.device("cpu")
    assert not embedded.model.training


def test_single_sentence_matches_bert_in_every_layer_and_head(embedded, hf_bert):
    encoding = embedded.tokenizer(SENTENCE, return_tensors="pt")
    assert encoding["input_ids"].shape == (1, 5)  # [CLS] i love mathematics [SEP]
    assert_every_layer_agrees(*run_both(embedded, hf_bert, encoding))


def test_sentence_pair_with_segment_ids_matches_bert(embedded, hf_bert):
    encoding = embedded.tokenizer(*PAIR, return_tensors="pt")
    assert set(encoding["token_type_ids"][0].tolist()) == {0, 1}  # both segments are present
    assert_every_layer_agrees(*run_both(embedded, hf_bert, encoding))


def test_segment_ids_change_the_output_so_the_pair_test_can_fail(embedded):
    encoding = embedded.tokenizer(*PAIR, return_tensors="pt")
    with_segments = embedded.model(encoding["input_ids"], encoding["token_type_ids"]).last_hidden_state
    without = embedded.model(encoding["input_ids"]).last_hidden_state
    assert largest_difference(with_segments, without) > 1e-2


def test_padded_batch_matches_bert_on_every_real_token_and_every_attention_weight(embedded, hf_bert, hf_tokenizer):
    encoding = hf_tokenizer(BATCH, padding=True, return_tensors="pt")
    real_tokens = encoding["attention_mask"].bool()
    assert real_tokens.sum(dim=1).tolist() == [6, 11, 3]  # three lengths, padded to 11
    ours, theirs = run_both(embedded, hf_bert, encoding)
    assert_every_layer_agrees(ours, theirs, real_tokens)
    for layer, weights in enumerate(ours.attentions):
        on_padding = weights.masked_select(~real_tokens[:, None, None, :].expand_as(weights))
        assert torch.all(on_padding == 0.0), f"layer {layer} gives weight to a padding key"


def test_padded_batch_matches_bert_at_every_position_including_padding_in_float64(embedded, hf_bert, hf_tokenizer):
    """At padding positions float32 rounding is amplified (both implementations drift ~5e-5 from the
    float64 answer there, equally), so the exactness of the *computation* at every position is shown
    in float64, where the two agree to 1e-10."""
    encoding = hf_tokenizer(BATCH, padding=True, return_tensors="pt")
    ours_model, hf_model = copy.deepcopy(embedded.model).double(), copy.deepcopy(hf_bert).double()
    ours = ours_model(encoding["input_ids"], encoding["token_type_ids"], encoding["attention_mask"], trace=True)
    theirs = hf_model(**encoding, output_attentions=True, output_hidden_states=True)
    for layer, (mine, reference) in enumerate(zip(ours.hidden_states, theirs.hidden_states)):
        assert largest_difference(mine, reference) <= 1e-10, f"hidden state {layer}"
    for layer, (mine, reference) in enumerate(zip(ours.attentions, theirs.attentions)):
        assert largest_difference(mine, reference) <= 1e-10, f"attention layer {layer}"


def test_untraced_forward_gives_the_traced_numbers(embedded, hf_tokenizer):
    """trace=False runs torch's fused attention kernel; trace=True the explicit softmax. Compared on real
    tokens: at padding positions float32 rounding alone moves the two by up to ~5e-5 (see above)."""
    encoding = hf_tokenizer(BATCH, padding=True, return_tensors="pt")
    args = (encoding["input_ids"], encoding["token_type_ids"], encoding["attention_mask"])
    fast, traced = embedded.model(*args, trace=False), embedded.model(*args, trace=True)
    assert fast.trace is None and traced.trace is not None
    real_tokens = encoding["attention_mask"].bool()
    for layer, (plain, detailed) in enumerate(zip(fast.hidden_states, traced.hidden_states)):
        difference = largest_difference(plain[real_tokens], detailed[real_tokens])
        assert difference <= TOLERANCE, f"hidden state {layer}: {difference:.2e}"
    single = embedded.tokenizer(SENTENCE, return_tensors="pt")["input_ids"]
    difference = largest_difference(
        embedded.model(single).last_hidden_state, embedded.model(single, trace=True).last_hidden_state
    )
    assert difference <= TOLERANCE


def test_attentions_without_trace_raise_a_value_error_that_says_how(embedded):
    output = embedded.model(embedded.tokenizer(SENTENCE, return_tensors="pt")["input_ids"])
    with pytest.raises(ValueError, match="trace=True"):
        _ = output.attentions


def module_attributes(model):
    """Every module's attribute names and plain (non-tensor) attribute values."""
    snapshot = {}
    for name, module in model.named_modules():
        plain = {key: repr(value) for key, value in vars(module).items() if not key.startswith("_")}
        snapshot[name] = (sorted(vars(module)), sorted(module._buffers), sorted(module._modules), plain)
    return snapshot


def test_forward_with_trace_leaves_no_state_on_the_model(embedded, hf_tokenizer):
    """One model object serves every session, so a forward may not write anything onto it."""
    model, tokenizer = embedded.model, embedded.tokenizer
    weights_before = {name: tensor.clone() for name, tensor in model.state_dict().items()}
    attributes_before = module_attributes(model)
    first = model(tokenizer(SENTENCE, return_tensors="pt")["input_ids"], trace=True)
    second = model(hf_tokenizer(BATCH, padding=True, return_tensors="pt")["input_ids"], trace=True)
    assert first.last_hidden_state.shape[1] != second.last_hidden_state.shape[1]
    assert module_attributes(model) == attributes_before
    weights_after = model.state_dict()
    assert weights_after.keys() == weights_before.keys()
    assert all(torch.equal(weights_after[name], tensor) for name, tensor in weights_before.items())


@pytest.fixture(scope="module")
def tiny_classifier_folder(tmp_path_factory):
    """A random 2-layer BertForSequenceClassification with 3 labels, saved as a checkpoint folder."""
    from transformers import BertConfig, BertForSequenceClassification

    torch.manual_seed(0)
    config = BertConfig(
        vocab_size=99,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=4,
        intermediate_size=37,
        num_labels=3,
        attn_implementation="eager",
    )
    folder = tmp_path_factory.mktemp("tiny-bert-classifier")
    BertForSequenceClassification(config).eval().save_pretrained(folder)
    return folder


def test_sequence_classifier_logits_match_bert_for_sequence_classification(tiny_classifier_folder):
    from transformers import BertForSequenceClassification

    loaded = load_pretrained(str(tiny_classifier_folder), device="cpu")  # beside the CPU reference
    assert isinstance(loaded.model, SequenceClassifier) and loaded.tokenizer is None
    reference = BertForSequenceClassification.from_pretrained(
        str(tiny_classifier_folder), attn_implementation="eager"
    ).eval()
    generator = torch.Generator().manual_seed(1)
    input_ids = torch.randint(1, 99, (3, 9), generator=generator)
    attention_mask = torch.tensor([[1] * 9, [1] * 6 + [0] * 3, [1] * 2 + [0] * 7])
    token_type_ids = torch.tensor([[0] * 5 + [1] * 4, [0] * 9, [0] * 9])
    ours = loaded.model(input_ids, token_type_ids, attention_mask).logits
    theirs = reference(input_ids=input_ids, token_type_ids=token_type_ids, attention_mask=attention_mask).logits
    assert ours.shape == theirs.shape == (3, 3)
    assert largest_difference(ours, theirs) <= TOLERANCE
    assert theirs.std() > 1e-3  # the labels are told apart, so agreement is not agreement on zeros
