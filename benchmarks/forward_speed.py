"""How fast is the anatomy encoder next to Hugging Face's BertModel on the same weights?

    python benchmarks/forward_speed.py                  # or: make bench
    python benchmarks/forward_speed.py --repeats 60 --json results.json

Three contenders run the embedded all-MiniLM-L6-v2 on one sentence of exactly 32, 128 and 512 tokens
(batch size 1, the all-ones attention mask a tokenizer returns), on the CPU and, where present, on CUDA:
HF `BertModel` from the same folder with attn_implementation="eager" and output_attentions=True (the fair
baseline for a forward that shows its attention weights), the anatomy Encoder with trace=False (fused
attention, nothing kept) and with trace=True (every intermediate returned).

The contenders take turns inside each repetition, so machine noise falls on all three alike; the table
shows medians. Before timing a length the script checks that anatomy and HF compute the same last hidden
states, so it cannot be comparing different computations. The goals are informational: the script exits
0 whether or not they are met, and non-zero only on an error.

`--served-allocator` first applies the malloc settings the app's server runs with (lessons/common/memory.py:
freed tensors go back to the system at once, which keeps the server small but makes fresh allocations
fault in their pages), so the figures are those of a forward pass inside the running app.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

import torch
from transformers import BertModel

from anatomy.checkpoints.pretrained import load_pretrained

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


def medians(contenders: dict, device: torch.device, repeats: int, warmup: int) -> dict[str, float]:
    """Median milliseconds per contender; each repetition runs all of them, in a rotating order."""
    for _ in range(warmup):
        for function in contenders.values():
            function()
    names = list(contenders)
    samples: dict[str, list[float]] = {name: [] for name in contenders}
    for repetition in range(repeats):
        shift = repetition % len(names)  # nobody always goes first, onto a cache the others warmed
        for name in names[shift:] + names[:shift]:
            samples[name].append(timed(contenders[name], device))
    return {name: statistics.median(values) for name, values in samples.items()}


def bench_device(device: torch.device, repeats: int, warmup: int) -> list[dict]:
    """One row per length: the three medians, the ratios to HF, and the largest hidden-state difference."""
    pretrained = load_pretrained(device=device)
    ours = pretrained.model
    hf = BertModel.from_pretrained(str(pretrained.folder), attn_implementation="eager")
    # transformers declares `to` through functools.wraps(nn.Module.to), whose type still expects `self` first
    hf = hf.to(device).eval()  # type: ignore[arg-type]
    rows = []
    for num_tokens in LENGTHS:
        ids, mask = make_inputs(pretrained.tokenizer, num_tokens, device)
        contenders = {
            "hf_eager": lambda ids=ids, mask=mask: hf(input_ids=ids, attention_mask=mask, output_attentions=True),
            "trace_off": lambda ids=ids, mask=mask: ours(ids, attention_mask=mask, trace=False),
            "trace_on": lambda ids=ids, mask=mask: ours(ids, attention_mask=mask, trace=True),
        }
        with torch.inference_mode():
            reference = contenders["hf_eager"]().last_hidden_state
            max_diff = max(
                (contenders[name]().last_hidden_state - reference).abs().max().item()
                for name in ("trace_off", "trace_on")
            )
            if max_diff > TOLERANCE:
                raise SystemExit(f"{num_tokens} tokens on {device}: anatomy and HF differ by {max_diff:.2e}")
            row = {"tokens": num_tokens, "device": device.type, "max_diff": max_diff}
            row.update({f"{name}_ms": ms for name, ms in medians(contenders, device, repeats, warmup).items()})
        for name in ("trace_off", "trace_on"):
            row[f"{name}_ratio"] = row[f"{name}_ms"] / row["hf_eager_ms"]
        rows.append(row)
    return rows


def print_table(rows: list[dict]) -> None:
    header = (
        f"{'tokens':>6}  {'device':<6}  {'HF eager ms':>11}  {'trace off ms':>12}  {'ratio':>6}  "
        f"{'trace on ms':>11}  {'ratio':>6}  {'max |diff|':>10}"
    )
    print(header)
    print("-" * len(header))
    for row in rows:
        print(
            f"{row['tokens']:>6}  {row['device']:<6}  {row['hf_eager_ms']:>11.2f}  "
            f"{row['trace_off_ms']:>12.2f}  {row['trace_off_ratio']:>5.2f}x  "
            f"{row['trace_on_ms']:>11.2f}  {row['trace_on_ratio']:>5.2f}x  {row['max_diff']:>10.1e}"
        )


def check_goals(rows: list[dict]) -> list[dict]:
    """PASS or MISS per goal and device, judged on the worst ratio among the lengths the goal covers."""
    verdicts = []
    for contender, tokens, limit in GOALS:
        for device in dict.fromkeys(row["device"] for row in rows):
            worst = max(
                row[f"{contender}_ratio"] for row in rows if row["device"] == device and tokens in (None, row["tokens"])
            )
            goal = f"{contender} <= {limit}x HF at {'every length' if tokens is None else f'{tokens} tokens'}"
            verdicts.append({"goal": goal, "device": device, "worst_ratio": worst, "passed": worst <= limit})
            print(f"{'PASS' if worst <= limit else 'MISS'}  {device:<5} {goal} (worst {worst:.2f}x)")
    return verdicts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=40, help="timed repetitions per contender and length")
    parser.add_argument("--warmup", type=int, default=5, help="untimed repetitions before timing")
    parser.add_argument("--json", metavar="PATH", help="also write the results to this JSON file")
    parser.add_argument(
        "--served-allocator",
        action="store_true",
        help="run with the app server's malloc settings (lessons.common.memory.configure_allocator)",
    )
    args = parser.parse_args()
    if args.served_allocator:
        from lessons.common import memory

        print(f"the app server's malloc settings applied: {memory.configure_allocator()}")

    devices = [torch.device("cpu")] + ([torch.device("cuda")] if torch.cuda.is_available() else [])
    print(
        f"torch {torch.__version__}, {torch.get_num_threads()} CPU threads (default), "
        f"{args.repeats} repeats, medians in milliseconds, batch size 1\n"
    )
    rows = [row for device in devices for row in bench_device(device, args.repeats, args.warmup)]
    print_table(rows)
    print("\nGoals (informational): trace off <= 1.0x HF eager at every length; trace on <= 1.5x at 128 tokens")
    verdicts = check_goals(rows)
    if args.json:
        with open(args.json, "w", encoding="utf-8") as file:
            json.dump(
                {
                    "torch": torch.__version__,
                    "threads": torch.get_num_threads(),
                    "repeats": args.repeats,
                    "rows": rows,
                    "goals": verdicts,
                },
                file,
                indent=2,
            )
        print(f"\nwrote {args.json}")


if __name__ == "__main__":
    main()
