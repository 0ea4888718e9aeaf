"""The anatomy decoder runs Llama checkpoints exactly as transformers' LlamaForCausalLM does.

The checkpoint is a tiny random Llama with grouped-query attention (4 query heads sharing 2 key/value heads),
rotary positions, RMSNorm and the gated feed-forward, saved by transformers as model.safetensors (no
download). Weights drawn with std 0.3 make the next-token distributions far from uniform, so a wrong ranking
could not hide among near-ties, and make greedy decoding wander instead of repeating one token.
"""

from __future__ import annotations

from dataclasses import replace

import pytest
import torch

from anatomy.checkpoints.pretrained import load_pretrained
from anatomy.config import SMOLLM2_135M
from anatomy.generation import Sampling, generate
from harness.references import llama_config

pytestmark = pytest.mark.usefixtures("no_autograd")

VOCABULARY = 101
TOLERANCE = 1e-5
# A cached step multiplies a (1 × D) row where a recompute multiplies a (T × D) block, and BLAS sums those in
# different orders: 1.0e-5 to 1.3e-5 measured here on logits of size ~5 (transformers' own cache drifts alike).
CACHE_TOLERANCE = 5e-5
PROMPTS = ([7], [3, 14, 15, 92], [2, 71, 82, 81, 82, 84, 59])


# Two layers, four query heads sharing two key/value heads, SmolLM2's switches otherwise
TINY_LLAMA = replace(
    SMOLLM2_135M,
    vocab_size=VOCABULARY,
    max_positions=64,
    width=64,
    ff_width=96,
    num_layers=2,
    num_heads=4,
    num_kv_heads=2,
    rope_theta=500.0,
    layer_norm_eps=1e-6,
)


def save_tiny_llama(folder, tie: bool):
    from transformers import LlamaForCausalLM

    torch.manual_seed(0)
    config = llama_config(replace(TINY_LLAMA, tie_embeddings=tie), initializer_range=0.3)
    LlamaForCausalLM(config).eval().save_pretrained(folder)
    return folder


@pytest.fixture(scope="module", params=[True, False], ids=["tied", "untied"])
def checkpoint_folder(request, tmp_path_factory):
    return save_tiny_llama(tmp_path_factory.mktemp("tiny-llama"), tie=request.param)


@pytest.fixture(scope="module")
def ours(checkpoint_folder):
    return load_pretrained(str(checkpoint_folder), device="cpu").model


@pytest.fixture(scope="module")
def reference(checkpoint_folder):
    from transformers import LlamaForCausalLM

    model = LlamaForCausalLM.from_pretrained(str(checkpoint_folder), attn_implementation="eager")
    return model.eval().requires_grad_(False)


@pytest.fixture(scope="module")
def sdpa_reference(checkpoint_folder):
    """transformers' default attention: torch's fused kernel, told the mask is causal, reading shared heads in place."""
    from transformers import LlamaForCausalLM

    model = LlamaForCausalLM.from_pretrained(str(checkpoint_folder), attn_implementation="sdpa")
    return model.eval().requires_grad_(False)


@pytest.fixture(scope="module")
def input_ids():
    return torch.randint(0, VOCABULARY, (2, 13), generator=torch.Generator().manual_seed(3))


def largest_difference(left, right) -> float:
    return (left - right).abs().max().item()


def test_a_llama_folder_loads_as_a_decoder_with_every_modern_switch_on(ours, reference):
    config = ours.config
    assert (config.width, config.num_layers, config.num_heads, config.num_kv_heads) == (64, 2, 4, 2)
    assert (config.norm_kind, config.positions, config.feed_forward, config.bias) == ("rms", "rotary", "gated", False)
    assert config.tie_embeddings == reference.config.tie_word_embeddings == (ours.lm_head is None)
    assert ours.embeddings.position is None  # rotary: no position table


def test_logits_every_hidden_state_and_every_attention_map_match_llama_for_causal_lm(ours, reference, input_ids):
    mine = ours(input_ids, trace=True)
    theirs = reference(input_ids, output_attentions=True, output_hidden_states=True)
    assert mine.logits.shape == theirs.logits.shape == (2, 13, VOCABULARY)
    assert theirs.logits.std() > 0.5
    assert largest_difference(mine.logits, theirs.logits) <= TOLERANCE
    for layer, (weights, expected) in enumerate(zip(mine.attentions, theirs.attentions, strict=True)):
        assert weights.shape == expected.shape == (2, 4, 13, 13)  # one map per query head
        assert largest_difference(weights, expected) <= TOLERANCE, f"layer {layer}"
    # transformers' last hidden state is after the final norm; ours keeps the block outputs and norms last.
    for layer in range(2):
        assert largest_difference(mine.hidden_states[layer], theirs.hidden_states[layer]) <= TOLERANCE
    assert largest_difference(mine.last_hidden_state, theirs.hidden_states[-1]) <= TOLERANCE


def test_the_untraced_forward_gives_transformers_sdpa_logits_bit_for_bit(ours, sdpa_reference, input_ids):
    assert torch.equal(ours(input_ids).logits, sdpa_reference(input_ids).logits)


def test_the_fused_attention_path_without_trace_gives_the_same_logits(ours, input_ids):
    assert largest_difference(ours(input_ids).logits, ours(input_ids, trace=True).logits) <= TOLERANCE


@pytest.mark.parametrize("prompt", PROMPTS, ids=lambda prompt: f"{len(prompt)}-token-prompt")
def test_greedy_continuation_of_12_tokens_is_identical_to_hf_generate(ours, reference, prompt):
    prompt_ids = torch.tensor([prompt])
    expected = reference.generate(
        prompt_ids, attention_mask=torch.ones_like(prompt_ids), do_sample=False, max_new_tokens=12, pad_token_id=0
    )
    assert generate(ours, prompt_ids, 12).tolist() == expected.tolist()
    assert generate(ours, prompt_ids, 12, use_cache=False).tolist() == expected.tolist()


def test_greedy_continuations_differ_between_prompts_so_the_generation_test_can_fail(ours):
    continuations = [tuple(generate(ours, torch.tensor([p]), 12)[0, len(p) :].tolist()) for p in PROMPTS]
    assert len(set(continuations)) == len(PROMPTS)
    assert max(len(set(continuation)) for continuation in continuations) >= 5


def test_logits_read_through_a_kv_cache_equal_a_full_recompute(ours, input_ids):
    """Prefill 5 tokens, then 1, then the remaining 7: each call sees only its new tokens."""
    full = ours(input_ids).logits
    cache = ours.new_cache()
    pieces = [ours(input_ids[:, start:stop], cache=cache).logits for start, stop in ((0, 5), (5, 6), (6, 13))]
    assert cache.length == 13
    assert cache.layers[0].keys is not None and cache.layers[0].keys.shape == (2, 2, 13, 16)  # 2 KV heads, not 4
    assert largest_difference(torch.cat(pieces, dim=1), full) <= CACHE_TOLERANCE


def test_a_forward_that_keeps_no_hidden_states_returns_none_and_the_same_last_logits(ours, input_ids):
    kept = ours(input_ids)
    lean = ours(input_ids, last_logits_only=True, keep_hidden_states=False)
    assert len(kept.hidden_states) == 3  # the embeddings, then each of the 2 blocks' outputs
    assert lean.hidden_states == ()
    assert torch.equal(lean.last_hidden_state, kept.last_hidden_state)
    assert lean.logits is not None and lean.logits.shape == (2, 1, VOCABULARY)
    assert largest_difference(lean.logits, kept.logits[:, -1:]) <= TOLERANCE


def test_attention_maps_read_through_a_cache_are_the_rows_of_the_full_map(ours, input_ids):
    full = ours(input_ids, trace=True).attentions
    cache = ours.new_cache()
    ours(input_ids[:, :9], cache=cache)
    last_rows = ours(input_ids[:, 9:], cache=cache, trace=True).attentions  # 4 queries against all 13 keys
    for layer in range(2):
        assert last_rows[layer].shape == (2, 4, 4, 13)
        assert largest_difference(last_rows[layer], full[layer][:, :, 9:]) <= CACHE_TOLERANCE


def test_sampling_with_the_same_generator_seed_gives_the_same_tokens(ours):
    prompt = torch.tensor([PROMPTS[1]])
    sampling = Sampling(temperature=1.3, top_k=20, top_p=0.9)
    first = generate(ours, prompt, 15, sampling=sampling, generator=torch.Generator().manual_seed(1))
    again = generate(ours, prompt, 15, sampling=sampling, generator=torch.Generator().manual_seed(1))
    other = generate(ours, prompt, 15, sampling=sampling, generator=torch.Generator().manual_seed(2))
    assert first.tolist() == again.tolist()
    assert first.tolist() != other.tolist()


def test_sampling_from_the_single_best_token_is_greedy_decoding(ours):
    prompt = torch.tensor([PROMPTS[2]])
    greedy = generate(ours, prompt, 10)
    for sampling in (Sampling(top_k=1), Sampling(top_p=1e-6), Sampling(temperature=1e-4)):
        assert generate(ours, prompt, 10, sampling=sampling, generator=torch.Generator().manual_seed(0)).tolist() == (
            greedy.tolist()
        )


def test_generation_stops_once_every_sequence_has_produced_a_stop_token(ours):
    prompt = torch.tensor([PROMPTS[1]])
    greedy = generate(ours, prompt, 12)[0, 4:].tolist()
    stop = greedy[3]  # the fourth new token
    stopped = generate(ours, prompt, 12, stop_token_ids={stop})[0, 4:].tolist()
    assert stopped == greedy[: greedy.index(stop) + 1]


def test_two_conversations_interleaved_on_one_model_keep_apart(ours, input_ids):
    """The model stores nothing between calls: each conversation's state is its own cache, so one model
    object can serve every browser session at once."""
    first, second = input_ids[:1], input_ids[1:]
    alone = ours(first).logits
    first_cache, second_cache = ours.new_cache(), ours.new_cache()
    pieces = [ours(first[:, :6], cache=first_cache).logits]
    ours(second[:, :9], cache=second_cache)
    pieces.append(ours(first[:, 6:], cache=first_cache).logits)
    ours(second[:, 9:], cache=second_cache)
    assert (first_cache.length, second_cache.length) == (13, 13)
    assert largest_difference(torch.cat(pieces, dim=1), alone) <= CACHE_TOLERANCE


def test_a_config_that_is_not_a_llama_is_refused_with_what_differs():
    with pytest.raises(ValueError, match="'positions': 'learned'"):
        llama_config(replace(TINY_LLAMA, positions="learned"))
