"""What the forward-pass gate (lessons/common/ui/loaders.py) buys: many sessions asking for a new traced run at the
same moment, with the gate and without it, each in a fresh process.

Every session runs `run_encoder` on a text of its own in a thread of its own, as Streamlit runs each session's
script, and drops the result at once: what is measured is the memory the passes hold while in flight (the
process's peak VmRSS above its level before, sampled every 5 ms) and the wall time until all are done.

    python benchmarks/forward_gate.py                        # 16 sessions × 512 tokens, then 40 × 40 tokens
    python benchmarks/forward_gate.py --sessions 16 --tokens 128 --repeats 3
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def resident_bytes() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    return 0


def measure(sessions: int, tokens: int, gated: bool) -> dict:
    """In this process: `sessions` threads each compute one new traced run, through the gate or not."""
    from lessons.common import memory

    memory.configure_allocator()  # as app.py does first thing
    from anatomy.checkpoints.pretrained import load_pretrained
    from lessons.common.runs import run_encoder
    from lessons.common.ui import loaders

    pretrained = load_pretrained(device="cpu")
    texts = [" ".join([f"word{session}"] * tokens) for session in range(sessions)]
    run_encoder(pretrained.model, pretrained.tokenizer, "warm up", max_tokens=tokens)
    memory.trim()
    gate = loaders.FORWARD_GATE if gated else threading.Semaphore(sessions)
    before, peak, done = resident_bytes(), [0], threading.Event()

    def sample() -> None:
        while not done.is_set():
            peak[0] = max(peak[0], resident_bytes())
            time.sleep(0.005)

    def session(text: str) -> None:
        with gate:
            run_encoder(pretrained.model, pretrained.tokenizer, text, max_tokens=tokens)

    sampler = threading.Thread(target=sample)
    sampler.start()
    start = time.perf_counter()
    threads = [threading.Thread(target=session, args=(text,)) for text in texts]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    seconds = time.perf_counter() - start
    done.set()
    sampler.join()
    return {
        "passes_at_once": loaders.MAX_CONCURRENT_FORWARDS if gated else sessions,
        "peak_above_start_mb": round((peak[0] - before) / 2**20),
        "seconds": round(seconds, 2),
    }


def in_fresh_process(sessions: int, tokens: int, gated: bool) -> dict:
    command = [
        sys.executable,
        __file__,
        "--sessions",
        str(sessions),
        "--tokens",
        str(tokens),
        "--only",
        "gated" if gated else "ungated",
    ]
    return json.loads(subprocess.run(command, capture_output=True, text=True, check=True).stdout.splitlines()[-1])


def compare(sessions: int, tokens: int, repeats: int) -> None:
    print(f"{sessions} sessions at once, {tokens} tokens each")
    for _ in range(repeats):
        for gated in (False, True):
            figures = in_fresh_process(sessions, tokens, gated)
            print(
                f"  {'with the gate   ' if gated else 'without the gate'}  {figures['passes_at_once']:3} passes at "
                f"once  peak +{figures['peak_above_start_mb']:5} MB  all done in {figures['seconds']:.2f} s"
            )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int)
    parser.add_argument("--tokens", type=int)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--only", choices=("gated", "ungated"), help=argparse.SUPPRESS)  # one measurement
    arguments = parser.parse_args()
    if arguments.only:
        print(json.dumps(measure(arguments.sessions, arguments.tokens, arguments.only == "gated")))
        return 0
    cases = [(arguments.sessions, arguments.tokens)] if arguments.sessions else [(16, 512), (40, 40)]
    for sessions, tokens in cases:
        compare(sessions, tokens or 512, arguments.repeats)
    return 0


if __name__ == "__main__":
    sys.exit(main())
