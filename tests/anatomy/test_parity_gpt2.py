"""The anatomy decoder runs GPT-2 checkpoints exactly as transformers' GPT2LMHeadModel does.

In the spirit of minGPT's test: load the same weights into both, then ask for identical logits, identical
attention weights in every layer and head, and identical greedy continuations. The checkpoint is a tiny
random GPT-2 (no download); its weights are drawn with std 0.5 rather than GPT-2's 0.02 so that greedy
decoding wanders over many tokens instead of repeating one, which makes the generation test sharper.
"""

from __future__ import annotations

import pytest
import torch

from anatomy.checkpoints.pretrained import load_pretrained
from anatomy.models import DecoderOnlyLM
from tests.tiny_models import VOCABULARY, save_wandering_gpt2

pytestmark = pytest.mark.usefixtures("no_autograd")

TOLERANCE = 1e-5
PROMPTS = ([7], [3, 14, 15, 92], [2, 71, 82, 81, 82, 84, 59])


@pytest.fixture(scope="module")
def checkpoint_folder(tmp_path_factory):
    return save_wandering_gpt2(tmp_path_factory.mktemp("tiny-gpt2"))


@pytest.fixture(scope="module")
def ours(checkpoint_folder):
    return load_pretrained(str(checkpoint_folder), device="cpu").model  # beside the CPU reference


@pytest.fixture(scope="module")
def reference(checkpoint_folder):
    from transformers import GPT2LMHeadModel

    model = GPT2LMHeadModel.from_pretrained(str(checkpoint_folder), attn_implementation="eager")
    return model.eval().requires_grad_(False)


@pytest.fixture(scope="module")
def input_ids():
    return torch.randint(0, VOCABULARY, (2, 13), generator=torch.Generator().manual_seed(3))


def largest_difference(left, right) -> float:
    return (left - right).abs().max().item()


def test_a_gpt2_folder_loads_as_a_decoder_only_language_model(ours):
    assert isinstance(ours, DecoderOnlyLM)
    assert (ours.config.width, ours.config.num_layers, ours.config.num_heads) == (32, 2, 4)
    assert ours.config.activation == "gelu_tanh" and ours.config.norm_placement == "pre"


def test_logits_match_gpt2_lm_head_model(ours, reference, input_ids):
    mine, theirs = ours(input_ids).logits, reference(input_ids).logits
    assert mine.shape == theirs.shape == (2, 13, VOCABULARY)
    assert theirs.std() > 0.1  # real, varied logits: agreement is not agreement on near-zeros
    assert largest_difference(mine, theirs) <= TOLERANCE


def test_every_layer_and_head_attends_exactly_like_gpt2(ours, reference, input_ids):
    mine = ours(input_ids, trace=True)
    theirs = reference(input_ids, output_attentions=True, output_hidden_states=True)
    assert len(mine.attentions) == len(theirs.attentions) == 2
    for layer, (weights, expected) in enumerate(zip(mine.attentions, theirs.attentions)):
        assert weights.shape == expected.shape == (2, 4, 13, 13)
        difference = largest_difference(weights, expected)
        assert difference <= TOLERANCE, f"layer {layer}: max |diff| {difference:.2e}"
        assert torch.all(weights.triu(diagonal=1) == 0.0), f"layer {layer} looks at a future token"
    # HF's last hidden state is taken after ln_f; ours keeps block outputs and applies final_norm last.
    for layer in range(2):
        assert largest_difference(mine.hidden_states[layer], theirs.hidden_states[layer]) <= TOLERANCE
    assert largest_difference(mine.last_hidden_state, theirs.hidden_states[-1]) <= TOLERANCE


@pytest.mark.parametrize("prompt", PROMPTS, ids=lambda prompt: f"{len(prompt)}-token-prompt")
def test_greedy_continuation_of_12_tokens_is_identical_to_hf_generate(ours, reference, prompt):
    prompt_ids = torch.tensor([prompt])
    expected = reference.generate(
        prompt_ids,
        attention_mask=torch.ones_like(prompt_ids),
        do_sample=False,
        max_new_tokens=12,
        pad_token_id=0,
    )
    generated = ours.generate_greedy(prompt_ids, max_new_tokens=12)
    assert generated.shape == expected.shape == (1, len(prompt) + 12)
    assert generated.tolist() == expected.tolist()


def test_greedy_continuations_differ_between_prompts_so_the_generation_test_can_fail(ours):
    continuations = [tuple(ours.generate_greedy(torch.tensor([p]), 12)[0, len(p) :].tolist()) for p in PROMPTS]
    assert len(set(continuations)) == len(PROMPTS)
    assert max(len(set(continuation)) for continuation in continuations) >= 5


def test_lm_head_is_tied_to_the_token_embedding_matrix(ours, input_ids):
    """No separate output matrix: logits are the final hidden states dotted with every wte row."""
    assert ours.lm_head is None
    assert not any("lm_head" in name for name, _ in ours.named_parameters())
    output = ours(input_ids)
    token_embeddings = ours.embeddings.token.weight  # (V, D) GPT-2's wte
    assert token_embeddings.shape == (VOCABULARY, 32)
    expected = output.last_hidden_state @ token_embeddings.T  # (B, T, V)
    assert largest_difference(output.logits, expected) <= 1e-6


def test_loaded_wte_is_the_checkpoint_wte_and_hf_lm_head(ours, reference):
    assert torch.equal(ours.embeddings.token.weight, reference.transformer.wte.weight)
    assert torch.equal(reference.lm_head.weight, reference.transformer.wte.weight)
