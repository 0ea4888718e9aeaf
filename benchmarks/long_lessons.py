"""The lessons that read SmolLM2 on the longest text this device allows: each view opened cold and warm, timed,
with its peak device memory, and the numbers it draws checked against the model's own.

    PYTHONPATH=. python benchmarks/long_lessons.py                       # the device's cap: 8,192 on CUDA, 512 here
    PYTHONPATH=. python benchmarks/long_lessons.py --tokens 2048 --json OUT.json

On a CUDA GPU the decoder lessons read all 8,192 positions SmolLM2 has (`decoder_attention.max_tokens`); on a
CPU they stop at 512. Each view runs headless through Streamlit's AppTest, in this process, with the sidebar's
model set to SmolLM2 (so the embedded encoder need not be installed). "Cold" is the first open of the view with
this text (every cached builder of the view runs), "warm" the same view opened again by a new session (the
builders' results are shared, the page still derives what it draws). Memory: on CUDA the peak of
`torch.cuda.max_memory_allocated` during the cold open minus what was allocated before it (the weights and
what earlier views cached).

Checks, each printed with its result: the page read the text up to the cap; the attention tab's whole map is
the head's full map averaged over 64 × 64 blocks (by a reshape, not by the page's pooling) and its window is
that map's cells; the sinks tab's layer × head map is the first-token importance measured again here.
Informational otherwise: nothing is asserted about time or memory. The text is our own documentation, repeated
until it is long enough.
"""

from __future__ import annotations

import argparse
import json
import logging
import math
import sys
import time
from pathlib import Path

import numpy as np
import torch
from streamlit.testing.v1 import AppTest

from harness.apptest import assert_clean, chart, numbers, open_page
from lessons.causal import links as cm
from lessons.common import decoder_attention, hosting
from lessons.common.ui import loaders
from lessons.language_model import heads, reading
from lessons.language_model import links as lm
from lessons.positional import links as pos

ROOT = Path(__file__).resolve().parents[1]
SMOLLM2 = {"model": hosting.LANGUAGE_MODEL}  # the sidebar's model: SmolLM2 (lesson 9 runs it whatever is chosen)
LAYER, HEAD = 5, 2


def long_text(chat, tokens: int) -> str:
    """Our own docs, repeated until they make at least `tokens` tokens."""
    prose = "\n\n".join(path.read_text() for path in sorted((ROOT / "docs").glob("*.md")))
    text = prose
    while len(chat.encode(text)) < tokens:
        text += "\n\n" + prose
    return text


def views(cap: int) -> dict[str, tuple[str, dict[str, str]]]:
    middle = str(max(cap // 2, 0))
    return {
        "lesson 9, next token": ("lesson_pages/language_model.py", {lm.TAB: lm.NEXT_TOKEN}),
        "lesson 9, attention": (
            "lesson_pages/language_model.py",
            {lm.TAB: lm.ATTENTION, lm.LAYER: str(LAYER), lm.HEAD: str(HEAD), lm.WINDOW_START: middle},
        ),
        "lesson 9, sinks": ("lesson_pages/language_model.py", {lm.TAB: lm.SINKS}),
        "lesson 9, sink removed": (
            "lesson_pages/language_model.py",
            {lm.TAB: lm.SINKS, lm.SINK_REMOVAL: "true", lm.SINK_LAYER: "3"},
        ),
        "lesson 9, logit lens": ("lesson_pages/language_model.py", {lm.TAB: lm.LOGIT_LENS}),
        "lesson 9, writing": ("lesson_pages/language_model.py", {lm.TAB: lm.WRITING}),
        "causal masking, a real head": (
            "lesson_pages/causal.py",
            {cm.TAB: cm.REAL_HEAD, cm.LAYER: str(LAYER), cm.HEAD: str(HEAD), cm.WINDOW_START: middle},
        ),
        "positions, rotary": ("lesson_pages/positional.py", {pos.TAB: pos.ROTARY}),
    }


def synchronize() -> None:
    if torch.cuda.is_available():
        torch.cuda.synchronize()


def open_timed(page: str, text: str, query: dict[str, str]) -> tuple[AppTest, float, float | None]:
    """The page opened once: the app, its seconds, and its peak device memory over what was held before (MB)."""
    before = None
    if torch.cuda.is_available():
        synchronize()
        before = torch.cuda.memory_allocated()
        torch.cuda.reset_peak_memory_stats()
    start = time.perf_counter()
    app = open_page(page, text=text, query={**SMOLLM2, **query})
    synchronize()
    seconds = time.perf_counter() - start
    peak = None if before is None else (torch.cuda.max_memory_allocated() - before) / 1e6
    return app, seconds, peak


def check(name: str, passed: bool, detail: str, checks: list[dict]) -> None:
    checks.append({"check": name, "passed": bool(passed), "detail": detail})
    print(f"  {'ok  ' if passed else 'FAIL'} {name}: {detail}", flush=True)


def check_attention(app, chat, ids: tuple[int, ...], cap: int, checks: list[dict]) -> None:
    model = reading.decoder_of(chat)
    full = decoder_attention.layer_attention(model, ids, LAYER).head_weights(HEAD)[0].double()  # (T, T) on device
    block = math.ceil(len(ids) / 64)
    padded = torch.nn.functional.pad(full, (0, block * 64 - len(ids), 0, block * 64 - len(ids)))
    sums = padded.reshape(64, block, 64, block).sum(dim=(1, 3))  # block sums, the last blocks perhaps shorter
    sizes = torch.tensor([min(block, len(ids) - start) for start in range(0, block * 64, block)], dtype=torch.double)
    expected = (sums / sizes.to(sums.device)[:, None] / sizes.to(sums.device)[None, :]).cpu().numpy()
    shown = numbers(chart(app, "lm_attention_whole")["data"][0]["z"])
    error = float(np.abs(shown - expected[: shown.shape[0], : shown.shape[1]]).max())
    check(
        "whole map = full map averaged by blocks",
        shown.shape == (64, 64) and error <= 1e-6,
        f"{shown.shape[0]} × {shown.shape[1]} blocks of {block} tokens, largest difference {error:.1e}",
        checks,
    )
    (heatmap,) = chart(app, "lm_attention")["data"]
    first = int(heatmap["x"][0].split(":")[0])  # the window the page shows, by its labels ("4096: ·the")
    shown_positions = range(first, first + len(heatmap["x"]))
    window = numbers(heatmap["z"])
    cells = full[shown_positions.start : shown_positions.stop, shown_positions.start : shown_positions.stop]
    error = float(np.abs(window - cells.cpu().numpy()).max())
    check(
        "window = the full map's cells",
        window.shape == (len(shown_positions),) * 2 and error <= 1e-6,
        f"positions {shown_positions.start}–{shown_positions.stop - 1}, largest difference {error:.1e}",
        checks,
    )


def check_sinks(app, chat, ids: tuple[int, ...], checks: list[dict]) -> None:
    scanned = heads.scan(reading.decoder_of(chat), ids, {"first": heads.importance})["first"].numpy()  # (L, H)
    shown = numbers(chart(app, "lm_sinks_text")["data"][0]["z"])
    error = float(np.abs(shown - scanned).max())
    rate = float((scanned > 0.3).mean())
    check(
        "sink map = the importance measured again",
        shown.shape == scanned.shape and error <= 1e-6,
        f"{shown.shape}, largest difference {error:.1e}; sink rate {rate:.1%}",
        checks,
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tokens", type=int, default=None, help="text length (default: the device's cap)")
    parser.add_argument("--only", nargs="*", default=None, help="views to run (names as printed)")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    logging.disable(logging.WARNING)  # AppTest's "missing ScriptRunContext" warnings, twice per open

    chat = loaders.get_chat_model()
    model = reading.decoder_of(chat)
    device = model.embeddings.token.weight.device
    cap = decoder_attention.max_tokens(model)
    tokens = args.tokens or cap
    text = long_text(chat, tokens)
    if args.tokens and args.tokens < cap:  # a shorter text: the first `tokens` tokens, as text
        text = chat.tokenizer.decode(list(chat.encode(text)[: args.tokens]))
    ids = tuple(chat.encode(text)[:cap])
    name = torch.cuda.get_device_name(device) if device.type == "cuda" else "CPU"
    print(f"device {device} ({name}), cap {cap:,} tokens, text read {len(ids):,} tokens, torch {torch.__version__}")
    results: list[dict] = []
    checks: list[dict] = []
    for view, (page, query) in views(len(ids)).items():
        if args.only and view not in args.only:
            continue
        app, cold, peak = open_timed(page, text, query)
        assert_clean(app)
        _, warm, _ = open_timed(page, text, query)
        memory = "" if peak is None else f", peak {peak:,.0f} MB over what was held"
        print(f"{view}: cold {cold:.2f} s, warm {warm:.2f} s{memory}", flush=True)
        results.append({"view": view, "cold_s": cold, "warm_s": warm, "peak_mb": peak})
        if view == "lesson 9, next token":
            read = f"{len(ids):,} tokens, positions counted from 0."
            found = [caption.value for caption in app.caption if caption.value == read]
            warned = " ".join(warning.value for warning in app.warning)
            check("the page reads the text up to the cap", bool(found), f"{read} {warned}".strip(), checks)
        if view == "lesson 9, attention":
            check_attention(app, chat, ids, len(ids), checks)
        if view == "lesson 9, sinks":
            check_sinks(app, chat, ids, checks)
    if torch.cuda.is_available():
        print(
            f"device memory held at the end: {torch.cuda.memory_allocated() / 1e6:,.0f} MB allocated, "
            f"{torch.cuda.memory_reserved() / 1e6:,.0f} MB reserved"
        )
    if args.json:
        args.json.write_text(json.dumps({"device": name, "tokens": len(ids), "views": results, "checks": checks}))
    return 0 if all(item["passed"] for item in checks) else 1


if __name__ == "__main__":
    sys.exit(main())
