"""How fast is the anatomy encoder next to Hugging Face's BertModel on the same weights?

Run it from the repository root:

    python benchmarks/forward_speed.py                  # or: make bench
    python benchmarks/forward_speed.py --repeats 50 --json results.json

Three contenders run the embedded all-MiniLM-L6-v2 on one sentence of exactly 32, 128 and 512 tokens
(batch size 1, with the all-ones attention mask a tokenizer returns), on the CPU and, where there is one,
on CUDA:

* `BertModel` loaded from the same folder with attn_implementation="eager" and output_attentions=True,
  the fair baseline for a forward that shows its attention weights;
* the anatomy Encoder with trace=False (the fused attention kernel, no intermediates kept);
* the anatomy Encoder with trace=True (every intermediate returned, attention weights included).

The contenders take turns inside each repetition, so machine noise falls on all three alike; the table
shows medians. Before timing a length, the script checks that anatomy and Hugging Face compute the same
last hidden states, so it cannot be comparing different computations. The goals are informational: the
script exits 0 whether they are met or not, and non-zero only on an error.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import torch
from transformers import BertModel

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run as a script, find the repo's anatomy
import anatomy  # noqa: E402

LENGTHS = (32, 128, 512)
TOLERANCE = 1e-4
GOALS = (  # (contender, tokens or None for every length, largest ratio to HF allowed)
    ("trace_off", None, 1.0),
    ("trace_on", 128, 1.5),
)
SENTENCE = "The quick brown fox jumps over the lazy dog while the cat watches from the warm windowsill. "


def make_inputs(tokenizer, num_tokens: int, device: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
    """(1, num_tokens) ids: [CLS], a repeated sentence cut to fit, [SEP]; and its all-ones mask."""
    sentence = tokenizer(SENTENCE, add_special_tokens=False)["input_ids"]
    words = sentence * (num_tokens // len(sentence) + 1)
    ids = [tokenizer.cls_token_id] + words[: num_tokens - 2] + [tokenizer.sep_token_id]
    input_ids = torch.tensor([ids], device=device)
    return input_ids, torch.ones_like(input_ids)


def timed(function, device: torch.device) -> float:
    """Milliseconds one call takes, waiting for the GPU to finish before and after."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    start = time.perf_counter()
    function()
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    return (time.perf_counter() - start) * 1e3


def bench_device(device: torch.device, repeats: int, warmup: int) -> list[dict]:
    pretrained = anatomy.load_pretrained(device=device)
    ours = pretrained.model
    hf = BertModel.from_pretrained(str(pretrained.folder), attn_implementation="eager").to(device).eval()
    rows = []
    for num_tokens in LENGTHS:
        ids, mask = make_inputs(pretrained.tokenizer, num_tokens, device)
        contenders = {
            "hf_eager": lambda: hf(input_ids=ids, attention_mask=mask, output_attentions=True),
            "trace_off": lambda: ours(ids, attention_mask=mask, trace=False),
            "trace_on": lambda: ours(ids, attention_mask=mask, trace=True),
        }
        with torch.inference_mode():
            reference = contenders["hf_eager"]().last_hidden_state
            max_diff = max(
                (contenders[name]().last_hidden_state - reference).abs().max().item()
                for name in ("trace_off", "trace_on")
            )
            if max_diff > TOLERANCE:
                raise SystemExit(f"{num_tokens} tokens on {device}: anatomy and HF differ by {max_diff:.2e}")
            for _ in range(warmup):
                for function in contenders.values():
                    function()
            samples = {name: [] for name in contenders}
            for repetition in range(repeats):
                names = list(contenders)
                shift = repetition % len(names)  # rotate who goes first, so no one always runs on a cold cache
                for name in names[shift:] + names[:shift]:
                    samples[name].append(timed(contenders[name], device))
        medians = {name: statistics.median(values) for name, values in samples.items()}
        rows.append({"tokens": num_tokens, "device": device.type, "max_diff": max_diff, **{
            f"{name}_ms": value for name, value in medians.items()
        }, "trace_off_ratio": medians["trace_off"] / medians["hf_eager"],
            "trace_on_ratio": medians["trace_on"] / medians["hf_eager"]})
    return rows


def print_table(rows: list[dict]) -> None:
    header = f"{'tokens':>6}  {'device':<6}  {'HF eager ms':>11}  {'trace off ms':>12}  {'ratio':>6}  " \
             f"{'trace on ms':>11}  {'ratio':>6}  {'max |diff|':>10}"
    print(header)
    print("-" * len(header))
    for row in rows:
        print(f"{row['tokens']:>6}  {row['device']:<6}  {row['hf_eager_ms']:>11.2f}  "
              f"{row['trace_off_ms']:>12.2f}  {row['trace_off_ratio']:>5.2f}x  "
              f"{row['trace_on_ms']:>11.2f}  {row['trace_on_ratio']:>5.2f}x  {row['max_diff']:>10.1e}")


def check_goals(rows: list[dict]) -> list[dict]:
    """One verdict per goal and device; a goal over every length passes only if each length does."""
    verdicts = []
    for contender, tokens, limit in GOALS:
        for device in dict.fromkeys(row["device"] for row in rows):
            ratios = [row[f"{contender}_ratio"] for row in rows
                      if row["device"] == device and tokens in (None, row["tokens"])]
            where = "every length" if tokens is None else f"{tokens} tokens"
            passed = max(ratios) <= limit
            verdicts.append({"goal": f"{contender} <= {limit}x HF at {where}", "device": device,
                             "worst_ratio": max(ratios), "passed": passed})
            print(f"{'PASS' if passed else 'MISS'}  {device:<5} {contender} <= {limit}x HF at {where} "
                  f"(worst {max(ratios):.2f}x)")
    return verdicts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=50, help="timed repetitions per contender and length")
    parser.add_argument("--warmup", type=int, default=5, help="untimed repetitions before timing")
    parser.add_argument("--json", metavar="PATH", help="also write the results to this JSON file")
    args = parser.parse_args()

    devices = [torch.device("cpu")] + ([torch.device("cuda")] if torch.cuda.is_available() else [])
    print(f"torch {torch.__version__}, {torch.get_num_threads()} CPU threads (default), "
          f"{args.repeats} repeats, medians in milliseconds, batch size 1\n")
    rows = [row for device in devices for row in bench_device(device, args.repeats, args.warmup)]
    print_table(rows)
    print("\nGoals (informational): trace off <= 1.0x HF eager at every length; trace on <= 1.5x at 128 tokens")
    verdicts = check_goals(rows)
    if args.json:
        with open(args.json, "w", encoding="utf-8") as file:
            json.dump({"torch": torch.__version__, "threads": torch.get_num_threads(),
                       "repeats": args.repeats, "rows": rows, "goals": verdicts}, file, indent=2)
        print(f"\nwrote {args.json}")


if __name__ == "__main__":
    main()
