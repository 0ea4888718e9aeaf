"""What keeps the server's memory bounded: a trace holds nothing of size T × T and recomputes what it leaves
out bit for bit, per-layer statistics equal those of the full stack, and the traced-run cache keeps within
its byte budget. (The resident-memory goal itself is measured by benchmarks/cold_start.py, not here.)"""

from __future__ import annotations

import pytest
import torch

from anatomy.attention import attention_written_out, scaled_dot_product_attention
from anatomy.config import DecoderConfig, EncoderConfig
from anatomy.models import DecoderOnlyLM, Encoder
from lessons.common import memory, pooling
from lessons.common.runs import run_encoder
from lessons.common.ui import loaders
from lessons.multihead import statistics as head_stats

SMALL = dict(vocab_size=50, max_positions=64, width=24, num_layers=2, num_heads=3, ff_width=40, dropout=0.0)


def every_tensor(value):
    """Each tensor a run or trace holds, found through its dataclasses, tuples and dicts."""
    todo = [value]
    while todo:
        item = todo.pop()
        if isinstance(item, torch.Tensor):
            yield item
        elif hasattr(item, "__dataclass_fields__"):
            todo.extend(getattr(item, name) for name in item.__dataclass_fields__)
        elif isinstance(item, (tuple, list)):
            todo.extend(item)
        elif isinstance(item, dict):
            todo.extend(item.values())


def assert_trace_recomputes_the_forward(trace):
    """What the trace keeps (queries, keys, values, mask) gives again what the traced forward computed, bit for
    bit: its weights, and its head outputs multiplied out as the forward does (`attention_written_out`: every head
    at once for a short text, one at a time for a long one). The two ways agree to a bit or two only (seen on an
    AVX-512 CPU: 1.2e-7 apart)."""
    for layer in trace.layers:
        attention = layer.attention
        every_head_at_once, weights = scaled_dot_product_attention(
            attention.query, attention.key, attention.value, attention.mask
        )
        assert torch.equal(attention.weights, weights)
        as_the_forward_did = attention_written_out(
            attention.query, attention.shared_key, attention.shared_value, attention.mask
        )
        assert torch.equal(attention.head_outputs, as_the_forward_did)
        assert torch.allclose(attention.head_outputs, every_head_at_once, rtol=0, atol=1e-6)


# ── the trace ────────────────────────────────────────────────────────────────────────────────────────


@pytest.mark.slow
def test_a_traced_run_holds_no_token_by_token_matrix_and_grows_linearly(embedded):
    texts = {tokens: " ".join(["word"] * (tokens - 2)) for tokens in (50, 100)}
    runs = {tokens: run_encoder(embedded.model, embedded.tokenizer, text) for tokens, text in texts.items()}
    for tokens, run in runs.items():
        assert len(run.tokenized) == tokens
        assert all(tensor.shape[-2:] != (tokens, tokens) for tensor in every_tensor(run))
    assert memory.tensor_bytes(runs[100]) == 2 * memory.tensor_bytes(runs[50])
    # Per token, in float32: each of the 6 layers keeps 8 vectors of width 384 (Q, K, V, head outputs, two
    # residual sums, the first norm's output, the layer output); the heads' concatenation, the attention output
    # and everything of the feed-forward sublayer are derived from them. The embeddings keep 5. That is 41 MB at
    # 512 tokens.
    assert memory.tensor_bytes(runs[100]) == 100 * 4 * (6 * (8 * 384) + 5 * 384)


def test_the_weights_a_trace_reports_are_the_forwards_bit_for_bit_with_a_padding_mask():
    torch.manual_seed(0)
    model = Encoder(EncoderConfig(**SMALL)).eval()
    input_ids = torch.randint(1, 50, (2, 9))
    attention_mask = torch.tensor([[1] * 9, [1] * 5 + [0] * 4])
    with torch.inference_mode():
        trace = model(input_ids, attention_mask=attention_mask, trace=True).trace
    assert_trace_recomputes_the_forward(trace)
    assert torch.equal(trace.layers[0].attention.weights[1, :, :, 5:], torch.zeros(3, 9, 4))


def test_the_weights_a_trace_reports_are_the_forwards_bit_for_bit_with_the_causal_mask():
    torch.manual_seed(0)
    model = DecoderOnlyLM(DecoderConfig(**SMALL)).eval()
    with torch.inference_mode():
        trace = model(torch.randint(0, 50, (1, 11)), trace=True).trace
    assert_trace_recomputes_the_forward(trace)
    future = torch.ones(11, 11, dtype=torch.bool).triu(1)
    assert torch.equal(trace.layers[1].attention.weights[0][:, future], torch.zeros(3, 55))


LLAMA_SWITCHES = dict(norm_kind="rms", positions="rotary", feed_forward="gated", activation="silu", bias=False)


def record_projections(model) -> dict[tuple[int, str], tuple[torch.Tensor, torch.Tensor]]:
    """What each layer's output projection and feed-forward projections were given and returned in the forward."""
    seen: dict[tuple[int, str], tuple[torch.Tensor, torch.Tensor]] = {}
    for index, layer in enumerate(model.layers):
        named = {"attention output": layer.attention.output, "contract": layer.feed_forward.contract}
        named.update(expand=layer.feed_forward.expand, gate=layer.feed_forward.gate)
        for name, module in named.items():
            if module is not None:
                module.register_forward_hook(
                    lambda _, given, result, key=(index, name): seen.__setitem__(key, (given[0], result))
                )
    return seen


@pytest.mark.parametrize(
    "model",
    [
        lambda: Encoder(EncoderConfig(**SMALL)),
        lambda: DecoderOnlyLM(DecoderConfig(**{**SMALL, "num_heads": 6, "num_kv_heads": 2}, **LLAMA_SWITCHES)),
    ],
    ids=["post-LN encoder", "llama decoder"],
)
def test_what_a_trace_derives_is_what_the_forward_computed_bit_for_bit(model):
    torch.manual_seed(0)
    model = model().eval()
    seen = record_projections(model)
    with torch.inference_mode():
        trace = model(torch.randint(1, 50, (2, 7)), trace=True).trace
    gated = any(name == "gate" for _, name in seen)
    for index, layer in enumerate(trace.layers):  # read outside inference mode, as a page may
        feed_forward = layer.feed_forward
        assert torch.equal(layer.attention.output, seen[index, "attention output"][1])
        assert torch.equal(feed_forward.hidden_preactivation, seen[index, "expand"][1])
        assert torch.equal(feed_forward.hidden_activation, seen[index, "contract"][0])
        assert torch.equal(feed_forward.output, seen[index, "contract"][1])
        if gated:
            assert torch.equal(feed_forward.gate_preactivation, seen[index, "gate"][1])
    assert gated == isinstance(model, DecoderOnlyLM)


@pytest.mark.slow
def test_statistics_computed_one_layer_at_a_time_equal_those_of_the_whole_stack(embedded):
    run = run_encoder(embedded.model, embedded.tokenizer, "time flies like an arrow; fruit flies like a banana")
    cls_keys = head_stats.token_marks(run.tokenized.tokens, "[CLS]")
    sep_keys = head_stats.token_marks(run.tokenized.tokens, "[SEP]")
    whole = head_stats.head_statistics(run.attention_weights, cls_keys, sep_keys)
    by_layer = run.over_layers(lambda weights: head_stats.head_statistics(weights, cls_keys, sep_keys))
    for name in ("entropy", "distance", "cls_share", "sep_share", "self_share", "previous_share"):
        assert getattr(by_layer, name).shape == (6, 12)
        assert torch.equal(getattr(by_layer, name), getattr(whole, name))
    pooled_whole, pooled_by_layer = (
        pooling.average_pool(run.attention_weights, 4, balanced=True),
        run.over_layers(lambda weights: pooling.average_pool(weights, 4, balanced=True)),
    )
    assert pooled_by_layer.row_bins == pooled_whole.row_bins and len(pooled_whole.row_bins) == 4
    assert torch.equal(pooled_by_layer.values, pooled_whole.values)


# ── the byte budget ──────────────────────────────────────────────────────────────────────────────────


class Sized:
    def __init__(self, size: int):
        self.size = size


def small_budget(budget_bytes: int, max_entries: int | None = None) -> memory.ByteBudget:
    return memory.ByteBudget(budget_bytes, max_entries, measure=lambda value: value.size)


def test_the_budget_drops_the_least_recently_used_entries_until_the_rest_fit():
    budget = small_budget(100)
    values = {key: Sized(40) for key in "abc"}
    assert budget.use("a", values["a"]) == []
    assert budget.use("b", values["b"]) == []
    assert budget.use("a", values["a"]) == []  # a is now the most recently used
    assert budget.use("c", values["c"]) == ["b"]  # 120 bytes > 100: b goes, a and c (80 bytes) stay
    assert "b" not in budget and len(budget) == 2 and budget.total_bytes == 80


def test_the_budget_keeps_the_entry_just_used_even_alone_over_budget():
    budget = small_budget(100)
    budget.use("small", Sized(10))
    assert budget.use("huge", Sized(500)) == ["small"]
    assert "huge" in budget and budget.total_bytes == 500


def test_the_budget_also_caps_the_number_of_entries():
    budget = small_budget(10**9, max_entries=3)
    dropped = [budget.use(key, Sized(1)) for key in "abcde"]
    assert dropped == [[], [], [], ["a"], ["b"]] and len(budget) == 3


def test_a_value_the_cache_released_on_its_own_no_longer_counts():
    budget = small_budget(100)
    kept, released = Sized(30), Sized(50)
    budget.use("kept", kept)
    budget.use("released", released)
    budget.release(released)
    assert "released" not in budget and budget.total_bytes == 30


@pytest.mark.slow
def test_the_traced_run_cache_holds_at_most_its_byte_budget(embedded, monkeypatch):
    sentences = [f"sentence number {index} is about {'cats ' * index}" for index in range(6)]
    sizes = [memory.tensor_bytes(run_encoder(embedded.model, embedded.tokenizer, text)) for text in sentences]
    budget = memory.ByteBudget(sizes[-1] + sizes[-2] + sizes[-3], max_entries=loaders.MAX_CACHED_RUNS)
    monkeypatch.setattr(loaders, "_RUN_BUDGET", budget)
    loaders._traced_run.clear()
    try:
        runs = [loaders.get_encoder_run("", text) for text in sentences]
        assert len(budget) == 3 and budget.total_bytes <= budget.budget_bytes
        assert all(loaders.get_encoder_run("", text) is run for text, run in zip(sentences[3:], runs[3:]))
        assert loaders.get_encoder_run("", sentences[0]) is not runs[0]  # dropped, so computed afresh
        assert len(budget) == 3 and budget.total_bytes <= budget.budget_bytes
    finally:
        loaders._traced_run.clear()
    assert len(budget) == 0  # clearing the cache released every run it held


# ── the garbage collector ────────────────────────────────────────────────────────────────────────────


@pytest.mark.slow  # a fresh interpreter: 4-5 s
@pytest.mark.parametrize("loader", ["get_model", "get_chat_model"])
def test_once_a_model_is_loaded_a_full_collection_walks_only_objects_made_since(loader):
    """Streamlit collects garbage in full after every script run; with the modules and the model exempted, that
    walk no longer costs a few hundred milliseconds on every page. (In a fresh interpreter: the exemption is
    for the life of the process.)"""
    import subprocess
    import sys

    script = f"""
import gc, logging, weakref
logging.disable(logging.WARNING)
from lessons.common.ui import loaders
loaders.{loader}()
exempt, walked = gc.get_freeze_count(), len(gc.get_objects())

class Node:
    pass
first, second = Node(), Node()
first.other, second.other = second, first  # a reference cycle, made after the exemption
alive = weakref.ref(first)
del first, second
gc.collect(2)
print(exempt, walked, alive() is None)
"""
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    exempt, walked, cycle_collected = result.stdout.split()
    assert int(exempt) > 100_000  # torch, transformers, streamlit, plotly and the model
    assert int(walked) < 1_000
    assert cycle_collected == "True"  # garbage made later is still collected


@pytest.mark.slow  # a fresh interpreter: 4-5 s
def test_modules_a_page_imports_late_and_in_bulk_are_exempted_at_the_next_run():
    """torch.optim's first step (lesson 8's Train button) imports torch._dynamo and sympy: some 800 modules
    that every later full collection would walk. The next run of any page exempts them. (Stand-ins here: forty
    modules of a thousand functions each, made after the model loaded.)"""
    import subprocess
    import sys

    script = """
import gc, logging, sys, types
logging.disable(logging.WARNING)
from harness.apptest import open_page
app = open_page("lesson_pages/multihead.py")  # loads the model, which exempts everything alive then
for index in range(40):
    module = types.ModuleType(f"imported_late_{index}")
    module.functions = [lambda: index for _ in range(1_000)]
    sys.modules[module.__name__] = module
gc.collect(2)
before = len(gc.get_objects())
app.run()
gc.collect(2)
print(before, len(gc.get_objects()))
"""
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    walked_before, walked_after = map(int, result.stdout.split())
    assert walked_before > 40_000  # the stand-ins, walked by every full collection until the next run
    assert walked_after < 5_000


@pytest.mark.slow  # a fresh interpreter: 4-5 s
def test_the_app_collects_garbage_every_few_seconds_instead_of_after_every_run():
    """Streamlit's full collection after every run of every session walks everything the caches and sessions
    hold, several times a second under a class. The app turns it off and runs one every few seconds while
    pages run, from a thread of its own. (In a fresh interpreter: the thread lives as long as the process.)"""
    import subprocess
    import sys
    import tomllib
    from pathlib import Path

    config = tomllib.loads((Path(__file__).parents[2] / ".streamlit" / "config.toml").read_text())
    assert config["runner"]["postScriptGC"] is False

    script = """
import logging, threading
logging.disable(logging.WARNING)
from harness.apptest import open_page
from lessons.common import memory, pooling
open_page("lesson_pages/tokenization.py")
collectors = [thread for thread in threading.enumerate() if thread.name == "garbage-collector"]
print(len(collectors), all(thread.daemon for thread in collectors), memory.FULL_COLLECTION_SECONDS)
"""
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    collectors, daemon, interval = result.stdout.split()
    assert collectors == "1"  # one for the process, however many runs and sessions
    assert daemon == "True"  # it never keeps the server from stopping
    assert 1 <= float(interval) <= 10  # garbage in reference cycles waits seconds, not minutes


@pytest.mark.slow  # a fresh interpreter: 4-5 s
def test_garbage_in_reference_cycles_goes_within_an_interval_while_pages_run_and_an_idle_server_collects_none():
    """Python's own collector is off in this interpreter, so only the app's thread can free a reference cycle."""
    import subprocess
    import sys

    script = """
import gc, time, weakref
gc.disable()
from lessons.common import memory, pooling

class Node:
    pass

def cycle():
    first, second = Node(), Node()
    first.other, second.other = second, first
    return weakref.ref(first)

def freed_within(alive, seconds):
    deadline = time.monotonic() + seconds
    while alive() is not None and time.monotonic() < deadline:
        time.sleep(0.02)
    return alive() is None

alive = cycle()
memory.collect_garbage_now_and_then(interval_seconds=0.1)  # a page ran
print(freed_within(alive, 10))
time.sleep(0.3)  # the page's collection is done
idle = cycle()
print(freed_within(idle, 0.6))  # six intervals and no page ran: nothing collected
memory.collect_garbage_now_and_then(interval_seconds=0.1)  # a page ran again
print(freed_within(idle, 10))
"""
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    assert result.stdout.split() == ["True", "False", "True"]
