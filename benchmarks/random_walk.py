"""Random walks through the app in Chromium, several seeds, to find what clicking in odd orders breaks.

Each walk starts a fresh server and takes the given number of steps (harness/walk.py says what a step is and
what is checked after it). Prints, per seed, the steps taken, the time, and the problems with the steps that led
to them, then a summary. Replay a failure with the same seed.

    python benchmarks/random_walk.py --seeds 1 2 3 4 5 --steps 400
    python benchmarks/random_walk.py --seeds 2 --steps 120 --app /path/to/another/checkout/app.py
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from playwright.sync_api import sync_playwright

from anatomy.checkpoints.pretrained import load_pretrained
from harness.browser import ARTIFACTS, VIEWPORT
from harness.server import StreamlitServer, chromium_launch_options
from harness.walk import Walk


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3, 4, 5])
    parser.add_argument("--steps", type=int, default=400)
    parser.add_argument("--app", type=Path, help="another checkout's app.py (default: this one)")
    arguments = parser.parse_args()
    tokenizer = load_pretrained(device="cpu").tokenizer

    def tokens_of(text: str) -> list[str]:
        return tokenizer.convert_ids_to_tokens(tokenizer(text, truncation=True, max_length=512)["input_ids"])

    results = []
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(**chromium_launch_options())
        for seed in arguments.seeds:
            log = ARTIFACTS / f"streamlit-random-walk-{seed}.log"
            environment = {"ANATOMY_TRAINING_BUDGET_SECONDS": "2"}
            script = arguments.app or Path(__file__).resolve().parents[1] / "app.py"
            if arguments.app:
                environment["PYTHONPATH"] = str(arguments.app.parent)
            with StreamlitServer(log_path=log, script=script, environment=environment) as server:
                page = browser.new_page(viewport=VIEWPORT)
                walk = Walk(page, server.url, seed, server_log=log, tokens_of=tokens_of)
                started = time.monotonic()
                try:
                    problems = walk.run(arguments.steps)
                except Exception as error:
                    problems = [f"the walk itself broke: {type(error).__name__}: {error}"]
                    walk.problems = problems
                seconds = time.monotonic() - started
                page.close()
            results.append((seed, len(walk.steps), seconds, problems))
            print(f"seed {seed}: {len(walk.steps)} steps in {seconds:.0f} s, {len(problems)} problem(s)", flush=True)
            if problems:
                print(walk.report(), flush=True)
        browser.close()
    print("\nseed  steps  seconds  problems")
    for seed, steps, seconds, problems in results:
        print(f"{seed:4d}  {steps:5d}  {seconds:7.0f}  {len(problems)}")
    return 1 if any(problems for *_, problems in results) else 0


if __name__ == "__main__":
    raise SystemExit(main())
