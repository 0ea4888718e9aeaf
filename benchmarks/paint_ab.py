"""Does a change make pages paint sooner? The working tree and a base revision, served side by side and loaded
in turn in Chromium, so that both see the same machine at the same moment.

    python benchmarks/paint_ab.py [--base HEAD] [--rounds 6] [--only multihead,causal] [--tokens 512]

Paint times on a 2-core machine move by a few hundred milliseconds from one minute to the next (other
processes, the CPU's clock), more than most changes gain; two runs of browser_vs_bertviz.py minutes apart
cannot tell a 0.1 s gain from noise. Here every round loads each view once from each server, in an order
drawn afresh each round: a cold load in a fresh browser context (empty HTTP cache), then a warm one in the same
context. Printed: the median of each, per view and server, and the difference of the medians (negative: the
working tree paints sooner). Every view is loaded once from each server before the rounds, so the servers'
own caches (the model's run on the text) are warm in both.

The base revision is checked out into a temporary git worktree and served from there, with this checkout's
virtual environment. Informational: the script exits 0 whatever it measures.
"""

from __future__ import annotations

import argparse
import random
import subprocess
import tempfile
from pathlib import Path

from browser_support import (
    ARTIFACTS,
    ROOT,
    STREAMLIT_PAINTED,
    StreamlitServer,
    charts_awaited,
    chromium_launch_options,
    load,
    load_average,
    measure,
    median,
    new_context,
    text_of_exactly,
    view_link,
)
from playwright.sync_api import sync_playwright

from anatomy.checkpoints.pretrained import load_pretrained
from harness.views import VIEWS

DEFAULT_VIEWS = "tokenization,positional,attention,multihead,causal,encoder,decoder,language_model"


def view_paths(names: list[str], text: str) -> dict[str, tuple[str, int]]:
    """Each view's link (without the server's address) and the charts its load waits for."""
    return {name: (view_link(VIEWS[name], text), charts_awaited(VIEWS[name])) for name in names}


def rounds_of_loads(servers: dict[str, str], paths: dict[str, tuple[str, int]], rounds: int) -> dict:
    """{(view, server): [(cold ms, warm ms), ...]}: one cold and one warm load per round, servers in a random
    order each round."""
    times: dict[tuple[str, str], list[tuple[float | None, float | None]]] = {}
    order = list(servers)
    shuffle = random.Random(0).shuffle
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(**chromium_launch_options())
        for path, charts in paths.values():  # warm the servers' caches
            for url in servers.values():
                context = new_context(browser)
                load(context, url + path, STREAMLIT_PAINTED, charts)
                context.close()
        for _ in range(rounds):
            for view, (path, charts) in paths.items():
                shuffle(order)
                for name in order:
                    cold, warm = measure(browser, servers[name] + path, STREAMLIT_PAINTED, charts, 1)
                    times.setdefault((view, name), []).append((cold[0].paint_ms, warm[0].paint_ms if warm else None))
        browser.close()
    return times


def report(times: dict, views: list[str], base: str) -> None:
    print(f"{'view':<18}{'base cold':>10}{'tree cold':>10}{'change':>8}{'base warm':>11}{'tree warm':>10}{'change':>8}")
    for view in views:
        cold, warm = (
            {name: median([pair[index] for pair in times[(view, name)]]) for name in ("base", "tree")}
            for index in (0, 1)
        )
        print(
            f"{view:<18}{cold['base']:>10.0f}{cold['tree']:>10.0f}{cold['tree'] - cold['base']:>+8.0f}"
            f"{warm['base']:>11.0f}{warm['tree']:>10.0f}{warm['tree'] - warm['base']:>+8.0f}"
        )
    print(f"(ms, medians; base = {base}, tree = the working tree)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", default="HEAD", help="the revision to compare the working tree with")
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--only", default=DEFAULT_VIEWS, help="comma-separated views of harness/views.py")
    parser.add_argument("--tokens", type=int, default=512, help="the text's length in MiniLM tokens")
    arguments = parser.parse_args()
    names = arguments.only.split(",")
    text = text_of_exactly(load_pretrained(device="cpu").tokenizer, arguments.tokens)
    paths = view_paths(names, text)
    with tempfile.TemporaryDirectory(prefix="paint-ab-") as folder:
        worktree = Path(folder) / "base"
        subprocess.run(["git", "worktree", "add", "--detach", str(worktree), arguments.base], cwd=ROOT, check=True)
        try:
            with (
                StreamlitServer(
                    log_path=ARTIFACTS / "paint-ab-base.log", script=worktree / "app.py", folder=worktree
                ) as base,
                StreamlitServer(log_path=ARTIFACTS / "paint-ab-tree.log") as tree,
            ):
                print(f"load average before: {load_average()}")
                times = rounds_of_loads({"base": base.url, "tree": tree.url}, paths, arguments.rounds)
                print(f"load average after: {load_average()}")
        finally:
            subprocess.run(["git", "worktree", "remove", "--force", str(worktree)], cwd=ROOT, check=False)
    report(times, names, arguments.base)


if __name__ == "__main__":
    main()
