"""How fast is SmolLM2-135M-Instruct in anatomy next to transformers' LlamaForCausalLM on the same GGUF file?

    python benchmarks/llm_speed.py                 # about 3 minutes on 2 cores
    python benchmarks/llm_speed.py --threads 2 --repeats 5

Three measurements, each printed with the ratio ours / transformers taken in the same run:

1. forward passes on 32, 128 and 512 random token ids (batch 1): ours with trace=False (fused attention) and
   trace=True (every intermediate, all attention maps), transformers eager with output_attentions=True and
   output_hidden_states=True (what a page that shows attention needs), and the largest logit difference;
2. generation of 32 new tokens, greedy, with and without the KV cache, ours (`anatomy.generation.generate`)
   and transformers (`generate(use_cache=...)`), in tokens per second, checked to produce the same tokens;
3. cold loads in fresh processes, from `python -c` to a model and tokenizer ready to run: ours
   (`lessons.common.llm.smollm2.load_chat_model`) and transformers (`from_pretrained(gguf_file=...)` and
   `AutoTokenizer`), wall time.

The contenders alternate inside each repetition so that machine noise falls on both; tables show the
minimum and the median. Informational only: the script asserts nothing about speed.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path

import torch

LENGTHS = (32, 128, 512)
NEW_TOKENS = 32
ROOT = Path(__file__).resolve().parents[1]

LOAD_OURS = """
import time; start = time.perf_counter()
from lessons.common.llm.smollm2 import load_chat_model
model = load_chat_model()
print(time.perf_counter() - start)
"""
LOAD_TRANSFORMERS = """
import time; start = time.perf_counter()
import torch
from transformers import AutoTokenizer, LlamaForCausalLM
from lessons.common.llm.smollm2 import smollm2_gguf_path
path = smollm2_gguf_path()
model = LlamaForCausalLM.from_pretrained(str(path.parent), gguf_file=path.name, attn_implementation="eager",
                                         dtype=torch.float32)
tokenizer = AutoTokenizer.from_pretrained(str(path.parent), gguf_file=path.name)
print(time.perf_counter() - start)
"""


def seconds(function: Callable[[], object]) -> float:
    start = time.perf_counter()
    function()
    return time.perf_counter() - start


def summary(times: list[float]) -> str:
    return f"{min(times) * 1000:8.0f} ms (median {statistics.median(times) * 1000:6.0f})"


def forward_passes(ours, theirs, repeats: int) -> None:
    print(f"\n## Forward pass, batch 1 ({repeats} alternating runs per length, minimum and median)")
    print(f"{'tokens':>6}  {'ours, trace off':>27}  {'ours, trace on':>27}  {'transformers eager + maps':>27}  "
          f"{'on/HF':>6}  {'off/HF':>6}  max |Δlogit|")  # fmt: skip
    contenders: dict[str, Callable[[torch.Tensor], object]] = {
        "off": lambda ids: ours(ids),
        "on": lambda ids: ours(ids, trace=True).attentions,
        "hf": lambda ids: theirs(ids, output_attentions=True, output_hidden_states=True),
    }
    for length in LENGTHS:
        input_ids = torch.randint(0, 49152, (1, length), generator=torch.Generator().manual_seed(length))
        difference = (ours(input_ids, trace=True).logits - theirs(input_ids).logits).abs().max().item()
        times: dict[str, list[float]] = {name: [] for name in contenders}
        for _ in range(repeats):
            for name, run in contenders.items():
                times[name].append(seconds(partial(run, input_ids)))
        best = {name: min(values) for name, values in times.items()}
        print(
            f"{length:>6}  {summary(times['off'])}  {summary(times['on'])}  {summary(times['hf'])}  "
            f"{best['on'] / best['hf']:6.2f}  {best['off'] / best['hf']:6.2f}  {difference:.1e}"
        )


def generation(ours, theirs, tokenizer_encode, repeats: int) -> None:
    from anatomy.generation import generate

    prompt = torch.tensor([tokenizer_encode("Once upon a time, in a small village,")])
    print(f"\n## Greedy generation of {NEW_TOKENS} tokens after a {prompt.size(1)}-token prompt ({repeats} runs)")
    contenders: dict[str, Callable[[], torch.Tensor]] = {
        "ours, KV cache": lambda: generate(ours, prompt, NEW_TOKENS),
        "ours, no cache": lambda: generate(ours, prompt, NEW_TOKENS, use_cache=False),
        "transformers, use_cache=True": lambda: theirs.generate(
            prompt, attention_mask=torch.ones_like(prompt), do_sample=False, max_new_tokens=NEW_TOKENS,
            min_new_tokens=NEW_TOKENS, use_cache=True, pad_token_id=2,
        ),
        "transformers, use_cache=False": lambda: theirs.generate(
            prompt, attention_mask=torch.ones_like(prompt), do_sample=False, max_new_tokens=NEW_TOKENS,
            min_new_tokens=NEW_TOKENS, use_cache=False, pad_token_id=2,
        ),
    }  # fmt: skip
    outputs = {name: run().tolist() for name, run in contenders.items()}
    same = len({str(output) for output in outputs.values()}) == 1
    times: dict[str, list[float]] = {name: [] for name in contenders}
    for _ in range(repeats):
        for name, run in contenders.items():
            times[name].append(seconds(run))
    rates = {name: NEW_TOKENS / min(values) for name, values in times.items()}
    for name, rate in rates.items():
        print(f"{name:>30}: {rate:5.1f} tokens/s (best of {repeats})")
    with_cache = rates["ours, KV cache"] / rates["transformers, use_cache=True"]
    print(f"ratio ours / transformers: with cache {with_cache:.2f}, "
          f"without {rates['ours, no cache'] / rates['transformers, use_cache=False']:.2f}; "
          f"the KV cache speeds ours up {rates['ours, KV cache'] / rates['ours, no cache']:.1f}×; "
          f"same {NEW_TOKENS} tokens from all four: {same}")  # fmt: skip


def cold_loads(threads: int, repeats: int) -> None:
    print(f"\n## Cold load in a fresh process, to a model and tokenizer ready to run ({repeats} runs each)")
    environment = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": str(threads)}
    times: dict[str, list[float]] = {"ours": [], "transformers": []}
    for _ in range(repeats):
        for name, script in (("ours", LOAD_OURS), ("transformers", LOAD_TRANSFORMERS)):
            start = time.perf_counter()
            subprocess.run([sys.executable, "-c", script], env=environment, check=True, capture_output=True, cwd=ROOT)
            times[name].append(time.perf_counter() - start)
    for name, values in times.items():
        print(
            f"{name:>13}: {min(values):5.1f} s wall (median {statistics.median(values):5.1f} s), import torch included"
        )
    print(f"ratio ours / transformers: {min(times['ours']) / min(times['transformers']):.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--threads", type=int, default=1, help="torch threads (1: steady on a shared machine)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--load-repeats", type=int, default=2)
    arguments = parser.parse_args()
    torch.set_num_threads(arguments.threads)

    from transformers import LlamaForCausalLM
    from transformers.utils import logging

    from lessons.common.llm.smollm2 import load_chat_model, smollm2_gguf_path

    logging.set_verbosity_error()
    path = smollm2_gguf_path()
    print(f"SmolLM2-135M-Instruct ({path.name}), torch {torch.__version__}, {arguments.threads} thread(s), "
          f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")  # fmt: skip
    chat_model = load_chat_model()
    theirs = LlamaForCausalLM.from_pretrained(
        str(path.parent), gguf_file=path.name, attn_implementation="eager", dtype=torch.float32
    ).eval()
    with torch.no_grad():
        forward_passes(chat_model.loaded.model, theirs, arguments.repeats)
        generation(chat_model.loaded.model, theirs, chat_model.encode, arguments.repeats)
    cold_loads(arguments.threads, arguments.load_repeats)
    print(f"\nload average at the end: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
