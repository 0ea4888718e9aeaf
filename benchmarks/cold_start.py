"""Cold start: seconds from `streamlit run app.py` to the first page painted in Chromium, and the server's
memory with the model loaded and after a 512-token text on every page.

    python benchmarks/cold_start.py [--repeats 3] [--tokens-of minilm|smollm2] [--json out.json]

Each repetition starts a fresh server on a free loopback port. Chromium is already running when the clock
starts (a visitor's browser is open before the app is). The clock reads, from the moment the server process
is spawned:
  health       the server's /_stcore/health answers
  welcome      the first page (/) has painted: title drawn, script done (the sidebar loads the model then)
  first chart  the same tab then opens /multihead, until its chart is drawn: the first chart a visitor sees
Memory is the resident set (VmRSS in /proc/<pid>/status) of the server and any child process, read after
the first chart (the model is loaded) and after a 512-token text has been opened on every page and every tab
(tests/browser/lessons.py: VIEWS; only the open tab runs, so each tab is a view of its own); the peak is the
server's VmHWM, reset before each view so that each view's own peak is printed too. Goals (issue 4):
<= 10 s to the first page painted, <= 700 MB resident, peaks included (a free hosting tier's limit); every
memory figure is in MB of 10⁶ bytes (/proc's KiB converted), as the issues state their goals. They
are informational: the script exits 0 whether or not they are met. `benchmarks/memory_profile.py` shows
where the memory goes. By default the server leaves SmolLM2 off, as a hosted class server does unless told
otherwise (lesson 9 then says so instead of loading it): the 700 MB goal is a hosted one. With
`--tokens-of smollm2` the long text is 512 of SmolLM2's tokens instead, the server serves SmolLM2 beside
MiniLM, and the memory goal is issue 15's 1.2 GB.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from browser_support import (
    ARTIFACTS,
    STREAMLIT_PAINTED,
    StreamlitServer,
    charts_awaited,
    chromium_launch_options,
    load_average,
    median,
    megabytes,
    new_context,
    reset_peak,
    smollm2_text_of_exactly,
    status_kb,
    text_of_exactly,
    view_link,
)
from playwright.sync_api import sync_playwright

from anatomy.checkpoints.pretrained import load_pretrained
from harness.views import VIEWS
from lessons.common import hosting

LESSON_9 = "language_model"  # SmolLM2's own lesson, left out when the server leaves SmolLM2 off

GOAL_SECONDS, GOAL_MB = 10.0, 700.0
GOAL_MB_WITH_SMOLLM2 = 1200.0  # issue 15: both embedded models and a 512-token SmolLM2 text on every page
LONG = 512


def process_tree(pid: int) -> list[int]:
    """`pid` and every process below it."""
    parents: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        parents.setdefault(int(fields[1]), []).append(int(stat.parent.name))
    tree, todo = [], [pid]
    while todo:
        current = todo.pop()
        tree.append(current)
        todo.extend(parents.get(current, []))
    return tree


def resident_mb(pid: int) -> float:
    return megabytes(sum(status_kb(member, "VmRSS") for member in process_tree(pid)))


def wait_painted(page, plots: int) -> None:
    page.wait_for_function(STREAMLIT_PAINTED, arg=plots, polling="raf", timeout=180_000)


def one_cold_start(browser, long_text: str, index: int, with_language_model: bool) -> dict:
    context = new_context(browser)
    page = context.new_page()
    server = StreamlitServer(
        log_path=ARTIFACTS / f"streamlit-cold-start-{index}.log",
        environment={hosting.LANGUAGE_MODEL_VARIABLE: "1" if with_language_model else "0"},
    )
    start = time.perf_counter()
    server.start()
    try:
        server.wait_until_healthy()
        health = time.perf_counter() - start
        page.goto(server.url, wait_until="commit")
        wait_painted(page, 0)
        welcome = time.perf_counter() - start
        page.goto(f"{server.url}/multihead", wait_until="commit")
        wait_painted(page, 1)
        first_chart = time.perf_counter() - start
        loaded_mb = resident_mb(server.started_process.pid)
        peak_mb = megabytes(status_kb(server.started_process.pid, "VmHWM"))
        by_page, peak_by_page = {}, {}
        views = {name: lesson for name, lesson in VIEWS.items() if with_language_model or lesson.path != LESSON_9}
        for name, lesson in views.items():
            reset_peak(server.started_process.pid)
            page.goto(server.url + view_link(lesson, long_text), wait_until="commit")
            wait_painted(page, charts_awaited(lesson))
            by_page[name] = resident_mb(server.started_process.pid)
            peak_by_page[name] = megabytes(status_kb(server.started_process.pid, "VmHWM"))
        after_long_mb = resident_mb(server.started_process.pid)
        peak_mb = max(peak_mb, *peak_by_page.values())
    finally:
        context.close()
        server.stop()
    return {
        "health_s": health,
        "welcome_s": welcome,
        "first_chart_s": first_chart,
        "rss_model_loaded_mb": loaded_mb,
        "rss_after_512_every_page_mb": after_long_mb,
        "peak_mb": peak_mb,
        "rss_after_each_512_page_mb": by_page,
        "peak_during_each_512_page_mb": peak_by_page,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--json", type=Path)
    parser.add_argument(
        "--tokens-of",
        choices=("minilm", "smollm2"),
        default="minilm",
        help="whose tokens the long text is 512 of (smollm2: both embedded models get loaded, against 1.2 GB)",
    )
    arguments = parser.parse_args()

    if arguments.tokens_of == "smollm2":
        long_text, goal_mb = smollm2_text_of_exactly(LONG), GOAL_MB_WITH_SMOLLM2
    else:
        long_text, goal_mb = text_of_exactly(load_pretrained(device="cpu").tokenizer, LONG), GOAL_MB
    print(f"load average before: {load_average()}")
    runs = []
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(**chromium_launch_options())
        print(
            f"{'run':>3}{'health s':>10}{'welcome s':>11}{'1st chart s':>13}{'RSS loaded MB':>15}"
            f"{'RSS 512 MB':>12}{'peak MB':>9}"
        )
        for index in range(arguments.repeats):
            run = one_cold_start(browser, long_text, index, arguments.tokens_of == "smollm2")
            runs.append(run)
            print(
                f"{index + 1:>3}{run['health_s']:>10.2f}{run['welcome_s']:>11.2f}{run['first_chart_s']:>13.2f}"
                f"{run['rss_model_loaded_mb']:>15.0f}{run['rss_after_512_every_page_mb']:>12.0f}"
                f"{run['peak_mb']:>9.0f}"
            )
        browser.close()
    print("RSS (MB) after opening each view with the 512-token text, in this order, and (its peak while it ran):")
    for run in runs:
        print(
            "   "
            + ", ".join(
                f"{name} {mb:.0f} ({run['peak_during_each_512_page_mb'][name]:.0f})"
                for name, mb in run["rss_after_each_512_page_mb"].items()
            )
        )
    medians = {key: median([run[key] for run in runs]) for key in runs[0] if not isinstance(runs[0][key], dict)}
    print(
        f"{'med':>3}{medians['health_s']:>10.2f}{medians['welcome_s']:>11.2f}{medians['first_chart_s']:>13.2f}"
        f"{medians['rss_model_loaded_mb']:>15.0f}{medians['rss_after_512_every_page_mb']:>12.0f}"
        f"{medians['peak_mb']:>9.0f}"
    )
    print(f"load average after: {load_average()}")
    print("\nGoals")
    print(
        f"  first page painted <= {GOAL_SECONDS:.0f} s: {'PASS' if medians['welcome_s'] <= GOAL_SECONDS else 'MISS'}"
        f" (first chart: {'PASS' if medians['first_chart_s'] <= GOAL_SECONDS else 'MISS'})"
    )
    largest = max(max(run["rss_after_512_every_page_mb"], run["peak_mb"]) for run in runs)
    print(
        f"  resident memory <= {goal_mb:.0f} MB (largest reading or peak, every run): "
        f"{'PASS' if largest <= goal_mb else 'MISS'} ({largest:.0f} MB)"
    )
    if arguments.json:
        arguments.json.write_text(json.dumps({"runs": runs, "medians": medians}, indent=2))


if __name__ == "__main__":
    main()
