"""SmolLM2-135M-Instruct, read from its 98 MB GGUF file by anatomy alone, computes what transformers'
LlamaForCausalLM computes from the same file: logits, every hidden state and every attention map on five
prompts (one through the chat template, one of 512 tokens), the same greedy continuations, and the same
next-token probabilities the lesson quotes (" Paris" 0.7725 after "The capital of France is").

Both models are loaded once for the module (ours in about 2 s, transformers' in about 25 s on 2 cores).
"""

from __future__ import annotations

import copy

import pytest
import torch

from anatomy.generation import generate

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("no_autograd")]

TOLERANCE = 1e-4  # measured: 0.0 everywhere (the same operations in the same order)
CACHE_TOLERANCE = 2e-4  # measured: 1.05e-4 at 37 tokens; transformers' own cache drifts by the same amount
PROSE = (
    "The history of the transformer begins with a simple question: how can a network read a whole sentence at "
    "once, instead of one word after another? Recurrent networks carried a hidden state from word to word, and "
    "long sentences faded before their end. Attention let every word look at every other word directly. "
)


@pytest.fixture(scope="module")
def chat_model():
    from lessons.common.llm.smollm2 import load_chat_model

    return load_chat_model()


@pytest.fixture(scope="module")
def ours(chat_model):
    return chat_model.loaded.model


@pytest.fixture(scope="module")
def reference(chat_model):
    from transformers import LlamaForCausalLM

    path = chat_model.loaded.folder / chat_model.loaded.name
    model = LlamaForCausalLM.from_pretrained(
        str(path.parent), gguf_file=path.name, attn_implementation="eager", dtype=torch.float32
    )
    return model.eval().requires_grad_(False)


@pytest.fixture(scope="module")
def sdpa_reference(reference):
    """transformers' default attention, which pages without maps are measured against (benchmarks/long_text.py):
    the eager reference's weights, copied rather than read from the GGUF file a second time (half a minute)."""
    model = copy.deepcopy(reference)
    model.set_attn_implementation("sdpa")
    assert model.config._attn_implementation == "sdpa" and reference.config._attn_implementation == "eager"
    return model


@pytest.fixture(scope="module")
def prompts(chat_model) -> dict[str, torch.Tensor]:
    chat = chat_model.chat_prompt([{"role": "user", "content": "What is the capital of France?"}])
    texts = {
        "france": "The capital of France is",
        "chat": chat,
        "code": "def fibonacci(n):\n    if n < 2:\n        return n\n    return",
        "mixed": "Bonjour! 你好 🙂 — 1358 + 2024 = ",
    }
    ids = {name: torch.tensor([chat_model.encode(text)]) for name, text in texts.items()}
    ids["512-tokens"] = torch.tensor([(chat_model.encode(PROSE) * 20)[:512]])
    return ids


def largest_difference(left, right) -> float:
    return (left - right).abs().max().item()


def test_the_gguf_loads_as_smollm2_135m(ours):
    from dataclasses import replace

    from anatomy.config import SMOLLM2_135M

    # The file stores epsilon as a float32: 1e-5 rounded to 9.999999747e-06, which transformers reads too.
    assert ours.config.layer_norm_eps == pytest.approx(1e-5, rel=1e-7)
    assert ours.config == replace(SMOLLM2_135M, layer_norm_eps=ours.config.layer_norm_eps)
    assert sum(parameter.numel() for parameter in ours.parameters()) == 134_515_008


@pytest.mark.parametrize("prompt", ["france", "chat", "code", "mixed", "512-tokens"])
def test_logits_hidden_states_and_attention_maps_equal_transformers_eager(ours, reference, prompts, prompt):
    input_ids = prompts[prompt]
    mine = ours(input_ids, trace=True)
    theirs = reference(input_ids, output_attentions=True, output_hidden_states=True)
    differences = {"logits": largest_difference(mine.logits, theirs.logits)}
    # transformers' hidden_states: the embeddings, blocks 0..28's outputs, then the *final norm's* output.
    differences["hidden"] = max(
        largest_difference(ours_state, their_state)
        for ours_state, their_state in zip(mine.hidden_states[:-1], theirs.hidden_states[:-1], strict=True)
    )
    differences["final norm"] = largest_difference(mine.last_hidden_state, theirs.hidden_states[-1])
    assert len(mine.attentions) == len(theirs.attentions) == 30
    differences["attention"] = max(
        largest_difference(weights, expected) for weights, expected in zip(mine.attentions, theirs.attentions)
    )
    assert mine.attentions[0].shape == (1, 9, input_ids.size(1), input_ids.size(1))
    assert max(differences.values()) <= TOLERANCE, differences


@pytest.mark.parametrize("prompt", ["france", "512-tokens"])
def test_the_untraced_forward_gives_transformers_sdpa_logits_bit_for_bit(ours, sdpa_reference, prompts, prompt):
    assert torch.equal(ours(prompts[prompt]).logits, sdpa_reference(prompts[prompt]).logits)


def test_paris_follows_the_capital_of_france_with_probability_0_7725(ours, chat_model, prompts):
    probabilities = ours(prompts["france"]).logits[0, -1].softmax(dim=-1)
    best = probabilities.topk(3)
    tokens = [chat_model.tokenizer.id_to_token(index) for index in best.indices.tolist()]
    assert tokens == ["ĠParis", "Ġthe", "ĠLondon"]
    assert best.values[0].item() == pytest.approx(0.7725, abs=5e-5)


def test_layer_5_attends_to_the_first_token_86_percent_of_the_time(ours, prompts):
    """Averaged over the 9 heads and query positions 1..4 (query 0 can only attend to itself)."""
    weights = ours(prompts["france"], trace=True).attentions[5][0]  # (H, T, T)
    assert weights[:, 1:, 0].mean().item() == pytest.approx(0.8603, abs=5e-4)


@pytest.mark.parametrize("prompt", ["france", "chat", "code"])
def test_greedy_20_tokens_equal_hf_generate_with_and_without_a_cache(ours, reference, chat_model, prompts, prompt):
    input_ids = prompts[prompt]
    expected = reference.generate(
        input_ids,
        attention_mask=torch.ones_like(input_ids),
        do_sample=False,
        max_new_tokens=20,
        eos_token_id=2,
        pad_token_id=2,
    )
    stop = chat_model.stop_token_ids
    assert generate(ours, input_ids, 20, stop_token_ids=stop).tolist() == expected.tolist()
    assert generate(ours, input_ids, 20, stop_token_ids=stop, use_cache=False).tolist() == expected.tolist()


def test_the_chat_answer_is_paris_and_ends_at_im_end(ours, chat_model, prompts):
    generated = generate(ours, prompts["chat"], 20, stop_token_ids=chat_model.stop_token_ids)
    answer = chat_model.tokenizer.decode(generated[0, prompts["chat"].size(1) :].tolist(), skip_special_tokens=False)
    assert answer == "The capital of France is Paris.<|im_end|>"


def test_logits_read_through_the_kv_cache_equal_a_full_recompute(ours, prompts):
    input_ids = prompts["chat"]  # 37 tokens: prefill 8, then one at a time
    full = ours(input_ids).logits
    cache = ours.new_cache()
    pieces = [ours(input_ids[:, :8], cache=cache).logits]
    pieces += [ours(input_ids[:, position : position + 1], cache=cache).logits for position in range(8, 37)]
    assert cache.layers[29].keys is not None and cache.layers[29].keys.shape == (1, 3, 37, 64)
    assert largest_difference(torch.cat(pieces, dim=1), full) <= CACHE_TOLERANCE
