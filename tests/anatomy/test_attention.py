"""Scaled dot-product attention: the loop form and the batched form agree, masks do what they promise,
and the recorded trace reproduces the weights it reports."""

from __future__ import annotations

import ast
import math
from pathlib import Path

import pytest
import torch

import anatomy.attention
from anatomy.attention import (
    AttentionTrace,
    MultiHeadAttention,
    MultiHeadAttentionLoop,
    apply_mask,
    attention_one_head_at_a_time,
    attention_scores,
    attention_weights,
    attention_written_out,
    masked_softmax,
    merge_heads,
    scaled_dot_product_attention,
)
from anatomy.masks import causal_mask, combine_masks, padding_mask
from lessons.common import examples as toy

pytestmark = pytest.mark.usefixtures("no_autograd")

WIDTH, HEADS = 16, 4
HEAD_WIDTH = WIDTH // HEADS


@pytest.fixture
def batched():
    torch.manual_seed(0)
    return MultiHeadAttention(WIDTH, HEADS).eval()


@pytest.fixture
def hidden():
    return torch.randn(2, 7, WIDTH, generator=torch.Generator().manual_seed(1))  # (B, T, D)


def random_qkv(tokens: int, seed: int = 2):
    generator = torch.Generator().manual_seed(seed)
    return [torch.randn(2, HEADS, tokens, HEAD_WIDTH, generator=generator) for _ in range(3)]


def largest_difference(left, right) -> float:
    return (left - right).abs().max().item()


REAL_TOKENS = torch.tensor([[1, 1, 1, 1, 1, 1, 1], [1, 1, 1, 1, 0, 0, 0]])  # second sentence: 3 pads


@pytest.mark.parametrize("mask", [None, padding_mask(REAL_TOKENS)], ids=["no-mask", "padding-mask"])
def test_loop_of_heads_equals_batched_attention(batched, hidden, mask):
    """Teach with the loop, run with the batch: same weights, same numbers."""
    looped = MultiHeadAttentionLoop.from_batched(batched)
    loop_output, loop_weights = looped(hidden, mask)
    batch_output, batch_trace = batched(hidden, mask=mask, trace=True)
    assert loop_weights.shape == batch_trace.weights.shape == (2, HEADS, 7, 7)
    assert largest_difference(loop_output, batch_output) <= 1e-6
    assert largest_difference(loop_weights, batch_trace.weights) <= 1e-6


def test_loop_form_really_owns_one_slice_of_each_projection_per_head(batched):
    looped = MultiHeadAttentionLoop.from_batched(batched)
    assert len(looped.heads) == HEADS
    third_head_rows = slice(2 * HEAD_WIDTH, 3 * HEAD_WIDTH)
    assert torch.equal(looped.heads[2].key.weight, batched.key.weight[third_head_rows])
    assert looped.heads[2].key.weight.shape == (HEAD_WIDTH, WIDTH)


@pytest.mark.parametrize("tokens", [1, 2, 7, 64])
def test_causal_mask_zeroes_every_future_position_and_rows_sum_to_one(tokens):
    query, key, value = random_qkv(tokens)
    _, weights = scaled_dot_product_attention(query, key, value, causal_mask(tokens))
    future = torch.ones(tokens, tokens, dtype=torch.bool).triu(diagonal=1)
    assert torch.all(weights[..., future] == 0.0)  # exactly zero, not small
    assert torch.all(weights[..., ~future] > 0.0)  # and the past is seen
    assert largest_difference(weights.sum(dim=-1), torch.ones(2, HEADS, tokens)) <= 1e-6
    assert torch.all(weights[..., 0, 0] == 1.0)  # token 0 sees only itself


def test_changing_future_tokens_leaves_earlier_outputs_untouched():
    query, key, value = random_qkv(7)
    mask = causal_mask(7)
    before, _ = scaled_dot_product_attention(query, key, value, mask)
    key[..., 4:, :], value[..., 4:, :] = 100.0, -100.0  # rewrite positions 4, 5, 6
    after, _ = scaled_dot_product_attention(query, key, value, mask)
    assert torch.equal(before[..., :4, :], after[..., :4, :])
    assert largest_difference(before[..., 4:, :], after[..., 4:, :]) > 1.0


@pytest.mark.parametrize("need_weights", [True, False])
def test_fully_masked_row_gives_zero_weights_and_zero_output_without_nan(need_weights):
    query, key, value = random_qkv(5)
    mask = causal_mask(5).clone()
    mask[2] = False  # query 2 may attend to nothing
    output, weights = scaled_dot_product_attention(query, key, value, mask, need_weights=need_weights)
    assert not torch.isnan(output).any()
    assert torch.all(output[..., 2, :] == 0.0)
    assert output[..., 3, :].abs().max() > 0.1  # the other rows are untouched
    if need_weights:
        assert not torch.isnan(weights).any()
        assert torch.all(weights[..., 2, :] == 0.0)
    else:
        assert weights is None


@pytest.mark.parametrize(
    "mask", [None, causal_mask(7), padding_mask(REAL_TOKENS)], ids=["no-mask", "causal", "padding"]
)
def test_fused_path_without_weights_gives_the_same_output(batched, hidden, mask):
    fast, no_trace = batched(hidden, mask=mask, trace=False)
    explicit, _ = batched(hidden, mask=mask, trace=True)
    assert no_trace is None
    assert largest_difference(fast, explicit) <= 1e-6
    query, key, value = random_qkv(7)
    fused, no_weights = scaled_dot_product_attention(query, key, value, mask, need_weights=False)
    written_out, _ = scaled_dot_product_attention(query, key, value, mask, need_weights=True)
    assert no_weights is None
    assert largest_difference(fused, written_out) <= 1e-6


@pytest.mark.parametrize("trace", [True, False])
def test_bfloat16_attention_gives_finite_values(batched, hidden, trace):
    batched = batched.to(torch.bfloat16)
    output, attention_trace = batched(hidden.to(torch.bfloat16), mask=causal_mask(7), trace=trace)
    assert output.dtype == torch.bfloat16
    assert torch.isfinite(output).all()
    if trace:
        assert torch.isfinite(attention_trace.weights).all()
        assert torch.all(attention_trace.weights.triu(diagonal=1) == 0)


@pytest.fixture
def attention_trace(batched, hidden):
    _, recorded = batched(hidden, mask=padding_mask(REAL_TOKENS), trace=True)
    return recorded


def test_trace_weights_are_the_softmax_of_the_masked_scores(attention_trace):
    masked_scores = attention_trace.masked_scores
    assert torch.isinf(masked_scores[1, :, :, 4:]).all()  # padding keys hold −∞
    recomputed = torch.softmax(masked_scores, dim=-1)
    assert largest_difference(recomputed, attention_trace.weights) <= 1e-6


def test_deriving_the_steps_again_gives_the_same_numbers_and_leaves_what_the_trace_keeps_untouched(attention_trace):
    """The scores are divided and masked in place, which must only ever touch a product made for the call."""
    kept = ("query", "key", "value", "head_outputs", "output")
    before = {name: getattr(attention_trace, name).clone() for name in kept}
    first = (attention_trace.scaled_scores, attention_trace.masked_scores, attention_trace.weights)
    again = (attention_trace.scaled_scores, attention_trace.masked_scores, attention_trace.weights)
    assert all(torch.equal(one, other) for one, other in zip(first, again))
    assert all(torch.equal(getattr(attention_trace, name), before[name]) for name in kept)
    assert torch.isneginf(first[1]).any() and not torch.isneginf(first[0]).any()  # the padding mask took effect


def test_trace_scaled_scores_are_raw_scores_over_root_head_width(attention_trace):
    assert attention_trace.scale == math.sqrt(HEAD_WIDTH) == 2.0
    expected = attention_trace.raw_scores / 2.0
    assert largest_difference(attention_trace.scaled_scores, expected) <= 1e-6
    expected_raw = torch.einsum("bhtd,bhsd->bhts", attention_trace.query, attention_trace.key)
    assert largest_difference(attention_trace.raw_scores, expected_raw) <= 1e-5


def test_trace_concatenation_is_the_head_outputs_side_by_side(batched, attention_trace):
    head_outputs = attention_trace.head_outputs  # (B, H, T, d_head)
    assert largest_difference(merge_heads(head_outputs), attention_trace.concatenated) == 0.0
    side_by_side = torch.cat([head_outputs[:, h] for h in range(HEADS)], dim=-1)  # (B, T, D)
    assert torch.equal(side_by_side, attention_trace.concatenated)
    assert largest_difference(attention_trace.weights @ attention_trace.value, head_outputs) <= 1e-6
    assert largest_difference(batched.output(attention_trace.concatenated), attention_trace.output) <= 1e-6


def test_the_causal_worked_example_keeps_the_past_and_zeroes_the_future():
    scores = apply_mask(toy.CAUSAL_EXAMPLE_SCORES, causal_mask(4))
    weights = masked_softmax(toy.CAUSAL_EXAMPLE_SCORES, causal_mask(4))
    assert torch.isinf(scores.triu(diagonal=1)[causal_mask(4).logical_not()]).all()
    assert torch.all(weights.triu(diagonal=1) == 0.0)
    assert torch.allclose(weights.sum(dim=-1), torch.ones(4, dtype=torch.float64), atol=1e-12)
    assert weights[0].tolist() == [1.0, 0.0, 0.0, 0.0]


def test_the_causal_worked_examples_second_row_is_0_45_0_55_not_0_2_0_8():
    """softmax([0.1, 0.3]) is easily misprinted as [0.2, 0.8]; e^0.1 / (e^0.1 + e^0.3) is 0.4502."""
    weights = masked_softmax(toy.CAUSAL_EXAMPLE_SCORES, causal_mask(4))
    first = math.exp(0.1) / (math.exp(0.1) + math.exp(0.3))
    assert weights[1].tolist() == pytest.approx([first, 1 - first, 0.0, 0.0], abs=1e-12)
    assert first == pytest.approx(0.45017, abs=1e-5)


def test_masked_softmax_leaves_the_scores_it_is_given_as_they_were():
    scores = toy.CAUSAL_EXAMPLE_SCORES.clone()
    masked_softmax(scores, causal_mask(4))
    apply_mask(scores, causal_mask(4))
    assert torch.equal(scores, toy.CAUSAL_EXAMPLE_SCORES)  # no −∞ written into a caller's (or a lesson's) matrix


# ── one home for the arithmetic ──────────────────────────────────────────────────────────────────────


def test_attention_weights_are_the_softmax_of_the_scaled_and_masked_scores_written_out():
    """softmax(QKᵀ/√d_k + M), checked against the formula typed out with an additive mask of 0 and −∞."""
    query, key, _ = random_qkv(5)
    mask = causal_mask(5)
    additive_mask = torch.zeros(5, 5).masked_fill(~mask, float("-inf"))  # M
    by_hand = torch.softmax(query @ key.transpose(-2, -1) / math.sqrt(HEAD_WIDTH) + additive_mask, dim=-1)
    assert largest_difference(attention_weights(query, key, mask), by_hand) <= 1e-6
    assert largest_difference(attention_scores(query, key), query @ key.transpose(-2, -1) / 2.0) <= 1e-6


@pytest.mark.parametrize("num_kv_heads", [HEADS, 2], ids=["multi-head", "grouped-query"])
def test_the_forward_and_its_trace_give_attention_weights_output_bit_for_bit(hidden, num_kv_heads):
    torch.manual_seed(0)
    grouped = MultiHeadAttention(WIDTH, HEADS, num_kv_heads=num_kv_heads).eval()
    mask = combine_masks(padding_mask(REAL_TOKENS), causal_mask(7))
    _, trace = grouped(hidden, mask=mask, trace=True)
    weights = attention_weights(trace.query, trace.key, mask)  # (B, H, T, S)
    assert torch.equal(trace.weights, weights)
    # What the forward itself computed with them: for 7 tokens, every head's products in one batch. Multiplied
    # one head at a time (as a long text is) they may round a last bit differently: seen on an AVX-512 CPU.
    assert torch.equal(trace.head_outputs, weights @ trace.value)
    assert torch.equal(trace.head_outputs, attention_written_out(trace.query, trace.key, trace.value, mask))
    one_by_one = attention_one_head_at_a_time(trace.query, trace.key, trace.value, mask)
    assert torch.allclose(trace.head_outputs, one_by_one, rtol=0, atol=1e-6)
    assert torch.equal(trace.masked_scores, apply_mask(attention_scores(trace.query, trace.key), mask))
    assert torch.equal(trace.scaled_scores, attention_scores(trace.query, trace.key))


def test_every_weight_the_forward_and_its_trace_give_comes_from_the_one_masked_softmax(batched, hidden, monkeypatch):
    """Swap the softmax for even weights: the traced forward and the trace both follow, so there is no copy."""

    def even_weights(scores, mask=None, *, in_place=False):
        return torch.full_like(scores, 1 / scores.size(-1))

    monkeypatch.setattr(anatomy.attention, "masked_softmax", even_weights)
    _, trace = batched(hidden, mask=causal_mask(7), trace=True)
    assert torch.equal(trace.weights, torch.full((2, HEADS, 7, 7), 1 / 7))
    assert torch.allclose(trace.head_outputs, trace.value.mean(dim=-2, keepdim=True).expand(-1, -1, 7, -1))


def imported_modules(path: Path) -> set[str]:
    """Every module a file imports, at its top or inside a function (`from a import b` names a and a.b)."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
    return names


def test_the_attention_module_and_the_trace_module_do_not_import_each_other():
    """AttentionTrace lives beside the attention that makes it; anatomy.trace may import it, never the reverse."""
    anatomy_folder = Path(anatomy.attention.__file__).parent
    attention_imports = imported_modules(anatomy_folder / "attention.py")
    assert "anatomy.trace" not in attention_imports
    assert AttentionTrace.__module__ == "anatomy.attention"


# ── the fused path: a causal flag and shared heads read in place ───────────────────────────────────────


def grouped_qkv(tokens: int, num_keys: int | None = None, seed: int = 5):
    """Queries for 6 heads, keys and values for 2 shared heads (grouped-query attention, 3 query heads each)."""
    generator = torch.Generator().manual_seed(seed)
    query = torch.randn(2, 6, tokens, HEAD_WIDTH, generator=generator)
    key, value = (torch.randn(2, 2, num_keys or tokens, HEAD_WIDTH, generator=generator) for _ in range(2))
    return query, key, value


def old_fused_path(query, key, value, mask):
    """The fused path as it was: the full (T, S) mask handed to torch, every shared head copied per query head."""
    output = torch.nn.functional.scaled_dot_product_attention(
        query, key.repeat_interleave(3, dim=1), value.repeat_interleave(3, dim=1), attn_mask=mask
    )
    return output.masked_fill(~mask.any(dim=-1, keepdim=True), 0.0)


@pytest.mark.parametrize(
    "tokens, num_keys, padding",
    [(9, 9, None), (4, 9, None), (9, 9, torch.tensor([[1] * 9, [1] * 6 + [0] * 3]))],
    ids=["causal", "after-5-cached-tokens", "causal-and-padding"],
)
def test_the_fused_causal_path_reading_shared_heads_equals_the_explicit_mask_and_copied_heads_bit_for_bit(
    tokens, num_keys, padding
):
    query, key, value = grouped_qkv(tokens, num_keys)
    given = None if padding is None else padding_mask(padding)
    fused, _ = scaled_dot_product_attention(query, key, value, given, need_weights=False, causal=True)
    explicit_mask = combine_masks(causal_mask(tokens, num_cached=num_keys - tokens), given)
    assert torch.equal(fused, old_fused_path(query, key, value, explicit_mask))
    written_out, weights = scaled_dot_product_attention(query, key, value, given, causal=True)
    assert weights.shape == (2, 6, tokens, num_keys)  # one map per query head
    assert largest_difference(fused, written_out) <= 1e-6


def recorded_fused_calls(monkeypatch) -> list[dict]:
    """Every call of torch's fused attention from anatomy.attention, with its keyword arguments and key."""
    calls: list[dict] = []
    fused = torch.nn.functional.scaled_dot_product_attention

    def recording(query, key, value, **options):
        calls.append({"key_heads": key.size(1), **options})
        return fused(query, key, value, **options)

    monkeypatch.setattr(anatomy.attention.F, "scaled_dot_product_attention", recording)
    return calls


def small_llama():
    from anatomy.config import DecoderConfig
    from anatomy.models import DecoderOnlyLM

    torch.manual_seed(0)
    config = DecoderConfig(
        vocab_size=40, max_positions=32, width=24, num_layers=2, num_heads=6, num_kv_heads=2, ff_width=32,
        dropout=0.0, norm_kind="rms", positions="rotary", feed_forward="gated", activation="silu", bias=False,
    )  # fmt: skip
    return DecoderOnlyLM(config).eval()


def test_an_unpadded_decoder_tells_torch_its_mask_is_causal_and_reads_the_shared_heads_in_place(monkeypatch):
    model = small_llama()
    calls = recorded_fused_calls(monkeypatch)
    model(torch.randint(0, 40, (2, 9), generator=torch.Generator().manual_seed(0)))
    assert len(calls) == 2  # one per layer
    for call in calls:
        assert call["attn_mask"] is None and call["is_causal"] and call["enable_gqa"]
        assert call["key_heads"] == 2  # the two shared heads, not six copies


@pytest.mark.parametrize(("device", "in_place"), [("cpu", True), ("mps", True), ("cuda", False), ("cuda:1", False)])
def test_shared_heads_are_read_in_place_except_on_cuda_where_no_fused_kernel_takes_them(device, in_place):
    assert anatomy.attention.fused_kernel_reads_shared_heads(torch.device(device)) is in_place


def test_where_shared_heads_cannot_be_read_in_place_the_kernel_gets_copies_and_the_same_output(monkeypatch):
    model = small_llama()
    ids = torch.randint(0, 40, (2, 9), generator=torch.Generator().manual_seed(0))
    in_place = model(ids).logits
    monkeypatch.setattr(anatomy.attention, "fused_kernel_reads_shared_heads", lambda device: False)  # as on CUDA
    calls = recorded_fused_calls(monkeypatch)
    copied = model(ids).logits
    assert len(calls) == 2
    for call in calls:
        assert call["key_heads"] == 6 and not call["enable_gqa"] and call["is_causal"]  # six copies of two heads
    assert torch.equal(copied, in_place)


def test_a_padded_batch_keeps_the_explicit_mask_and_its_real_tokens_see_no_padding(monkeypatch):
    model = small_llama()
    input_ids = torch.randint(0, 40, (2, 9), generator=torch.Generator().manual_seed(0))
    real_tokens = torch.tensor([[1] * 9, [1] * 6 + [0] * 3])  # the second text: 6 tokens, then 3 pads
    calls = recorded_fused_calls(monkeypatch)
    padded = model(input_ids, attention_mask=real_tokens).logits
    for call in calls:
        assert call["attn_mask"] is not None and not call.get("is_causal", False)
        assert call["attn_mask"].shape == (2, 1, 9, 9)  # causal and padding together
    alone = model(input_ids[1:, :6]).logits  # the second text without its pads
    assert largest_difference(padded[1, :6], alone[0]) <= 1e-5
    traced = model(input_ids, attention_mask=real_tokens, trace=True).logits
    assert largest_difference(padded, traced) <= 1e-5


def record_weighings(monkeypatch) -> list[torch.Tensor]:
    """Every weights tensor `attention_weights` computes from now on, in order (until monkeypatch.undo())."""
    recorded: list[torch.Tensor] = []
    one_weighing = anatomy.attention.attention_weights

    def recording(query, key, mask=None):
        recorded.append(one_weighing(query, key, mask))
        return recorded[-1]

    monkeypatch.setattr(anatomy.attention, "attention_weights", recording)
    return recorded


def traced_smollm2_shaped_attention(tokens: int) -> AttentionTrace:
    """SmolLM2's shape of attention (9 query heads sharing 3 key/value heads, d_head 64), traced on `tokens`."""
    torch.manual_seed(0)
    grouped = MultiHeadAttention(576, 9, num_kv_heads=3, bias=False).eval()
    hidden = torch.randn(1, tokens, 576, generator=torch.Generator().manual_seed(1))
    _, trace = grouped(hidden, causal=True, trace=True)
    assert trace is not None
    return trace


def test_a_traced_forward_weighs_one_head_at_a_time_and_its_trace_derives_those_weights_bit_for_bit(monkeypatch):
    """300 tokens: 9 maps of 300 × 300 together are 3.2 MB, above `ALL_HEADS_AT_ONCE_BYTES`."""
    forward_weights = record_weighings(monkeypatch)
    trace = traced_smollm2_shaped_attention(300)
    assert [weights.shape for weights in forward_weights] == [(1, 1, 300, 300)] * 9  # one head's map at a time
    monkeypatch.undo()
    assert torch.equal(trace.weights, torch.cat(forward_weights, dim=1))
    assert torch.equal(
        trace.head_outputs, torch.cat([w @ v for w, v in zip(forward_weights, trace.value.split(1, 1))], 1)
    )


def test_a_short_texts_traced_forward_weighs_every_head_in_one_call_and_keeps_those_products(monkeypatch):
    """40 tokens: 9 maps of 40 × 40 together are 57.6 kB, far below the size where one head at a time pays
    (`ALL_HEADS_AT_ONCE_BYTES`)."""
    forward_weights = record_weighings(monkeypatch)
    trace = traced_smollm2_shaped_attention(40)
    assert [weights.shape for weights in forward_weights] == [(1, 9, 40, 40)]  # every head's map in one call
    monkeypatch.undo()
    assert torch.equal(trace.weights, forward_weights[0])
    assert torch.equal(trace.head_outputs, forward_weights[0] @ trace.value)


@pytest.mark.parametrize(("limit", "calls"), [(2 * 3 * 5 * 5, 1), (2 * 3 * 5 * 5 - 1, 3)])
def test_every_heads_maps_are_weighed_together_up_to_the_size_limit_and_one_head_at_a_time_beyond(
    monkeypatch, limit, calls
):
    """2 texts, 3 heads, 5 queries, 5 keys: 150 float32 weights, 600 bytes."""
    generator = torch.Generator().manual_seed(3)
    query, key, value = (torch.randn(2, 3, 5, 4, generator=generator) for _ in range(3))
    monkeypatch.setattr(anatomy.attention, "ALL_HEADS_AT_ONCE_BYTES", limit * 4)
    weighings = record_weighings(monkeypatch)
    head_outputs = attention_written_out(query, key, value, causal_mask(5))
    assert len(weighings) == calls
    assert head_outputs.shape == (2, 3, 5, 4)
    expected, _ = scaled_dot_product_attention(query, key, value, causal_mask(5))
    assert torch.allclose(head_outputs, expected, rtol=0, atol=1e-6)


def test_one_head_derived_alone_is_that_heads_slice_of_every_heads_weights_bit_for_bit():
    """What a page shows of one head of a long text (its map alone, a ninth of the memory) is the forward's."""
    torch.manual_seed(0)
    grouped = MultiHeadAttention(576, 9, num_kv_heads=3, bias=False).eval()
    hidden = torch.randn(1, 40, 576, generator=torch.Generator().manual_seed(2))
    _, trace = grouped(hidden, causal=True, trace=True)
    every_head = trace.weights  # (1, 9, 40, 40)
    for head in range(9):
        alone = trace.head_weights(head)  # (1, 40, 40)
        assert alone.shape == (1, 40, 40)
        assert torch.equal(alone, every_head[:, head])
    assert torch.count_nonzero(trace.head_weights(4)[0].triu(1)) == 0  # the causal mask came along
