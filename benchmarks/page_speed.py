"""Server-side rerun time and payload size of every page, at 32, 128 and 512 tokens.

Run:  python benchmarks/page_speed.py [--repeats 5] [--json results.json]

Each page is opened with Streamlit's AppTest on a text of exactly N tokens, run once to warm the caches
(model load, traced forward pass), then rerun `--repeats` times; the median rerun is reported. The payload is
the serialized size of every element the page produced (plotly figure JSON, dataframes, text): what the
server sends to the browser for that page. Goals (issue 3): median <= 150 ms and <= 1 MB per page at
128 tokens; <= 600 ms and <= 2 MB at 512 tokens.
"""

from __future__ import annotations

import argparse
import json
import logging
import statistics
import time
from pathlib import Path

from anatomy.checkpoints.pretrained import load_pretrained
from harness.apptest import new_app

logging.disable(logging.WARNING)  # AppTest warns on every run that it has no browser session

PAGES = ["home", "tokenization", "positional", "attention", "multihead", "causal", "encoder"]
LENGTHS = [32, 128, 512]
GOALS = {128: (150.0, 1_000_000), 512: (600.0, 2_000_000)}
SENTENCE = "The quick brown fox jumps over the lazy dog while attention heads watch every word. "


def text_of_exactly(tokenizer, num_tokens: int) -> str:
    """A text that the tokenizer turns into exactly num_tokens tokens, [CLS] and [SEP] included."""
    ids = tokenizer(SENTENCE * num_tokens, add_special_tokens=False, verbose=False)["input_ids"]
    text = tokenizer.decode(ids[: num_tokens - 2])
    assert len(tokenizer(text)["input_ids"]) == num_tokens, "decoded text re-tokenized to another length"
    return text


def payload_bytes(node) -> int:
    """Serialized size of every element below an AppTest tree node."""
    total = 0
    proto = getattr(node, "proto", None)
    if proto is not None and hasattr(proto, "ByteSize"):
        total += proto.ByteSize()
    for child in getattr(node, "children", {}).values():
        total += payload_bytes(child)
    return total


def measure(page: str, text: str, repeats: int) -> tuple[float, int]:
    app = new_app(timeout=300)  # the registry of installed components found once, as a server does
    app.session_state["text"] = text
    app.run()
    app.switch_page(f"lesson_pages/{page}.py").run()  # warm: model, traced run and figures cached
    if app.exception:
        raise RuntimeError(f"{page}: {[item.value for item in app.exception]}")
    timings = []
    for _ in range(repeats):
        start = time.perf_counter()
        app.run()
        timings.append((time.perf_counter() - start) * 1000)
    return statistics.median(timings), payload_bytes(app._tree)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--json", type=Path)
    arguments = parser.parse_args()

    tokenizer = load_pretrained(device="cpu").tokenizer
    rows = []
    print(f"{'page':<14}{'tokens':>7}{'rerun ms':>10}{'payload KB':>12}  goal")
    for length in LENGTHS:
        text = text_of_exactly(tokenizer, length)
        for page in PAGES:
            milliseconds, size = measure(page, text, arguments.repeats)
            goal = GOALS.get(length)
            verdict = ""
            if goal:
                verdict = "PASS" if milliseconds <= goal[0] and size <= goal[1] else "MISS"
                verdict += f" (<= {goal[0]:.0f} ms, <= {goal[1] / 1e6:.0f} MB)"
            print(f"{page:<14}{length:>7}{milliseconds:>10.1f}{size / 1000:>12.1f}  {verdict}")
            rows.append({"page": page, "tokens": length, "rerun_ms": milliseconds, "bytes": size, "verdict": verdict})
    if arguments.json:
        arguments.json.write_text(json.dumps(rows, indent=2))


if __name__ == "__main__":
    main()
