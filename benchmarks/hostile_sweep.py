"""Every hostile input (harness/hostile.py) through every input of every page, headlessly.

The CI tests run a bounded selection (tests/app/test_hostile_inputs.py); this script runs the whole cross
product once and prints, per input field, how many runs there were, how many failed and the slowest run:

    python benchmarks/hostile_sweep.py            # about 10 minutes on a 2-core machine
    python benchmarks/hostile_sweep.py --quick    # the sidebar on three pages only

A run fails when it raised, sent hostile markup to a markdown element, drew raw HTML, or made the server
reach a host other than loopback. Set ANATOMY_HOSTED=1 to sweep the hosted configuration.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time

from harness import hostile as hostile_corpus
from harness.apptest import open_page
from harness.hostile import NUMBER_PARAMETERS, NUMBER_TEXTS, TEXTS, OutboundConnections, problems_after
from harness.views import VIEWS

# Every view a link can open (harness/views.py: each page and each of its tabs), with the sidebar's text changed
# under it, and two variants no view names: the attention page on the embeddings alone, and the cheater.
SIDEBAR_VIEWS = {
    **{name: (f"lesson_pages/{view.path or 'home'}.py", view.query) for name, view in VIEWS.items()},
    "attention/embeddings": ("lesson_pages/attention.py", {"att_source": "embeddings"}),
    "causal/cheater": ("lesson_pages/causal.py", {"cm_tab": "A trained decoder", "cm_cheater": "true"}),
}
QUICK_VIEWS = ("tokenization", "attention", "encoder")

# The lessons' own text fields (harness/hostile.py), plus one entry of the toy matrix editor.
PAGE_FIELDS = {
    **hostile_corpus.PAGE_FIELDS,
    "att_toy_cell": ("lesson_pages/attention.py", {"att_source": "toy"}, None),  # one entry of the editable X
}


class Tally:
    def __init__(self):
        self.rows: dict[str, dict] = {}

    def add(self, field: str, name: str, seconds: float, problems: list[str]) -> None:
        row = self.rows.setdefault(field, {"runs": 0, "failures": [], "times": []})
        row["runs"] += 1
        row["times"].append((seconds, name))
        row["failures"] += [f"{name}: {problem}" for problem in problems]

    def print(self) -> int:
        print(f"\n{'field':44} {'runs':>5} {'failed':>6} {'median s':>9} {'slowest s':>10}  slowest input")
        failures = 0
        for field, row in self.rows.items():
            times = sorted(row["times"])
            slowest, slowest_name = times[-1]
            print(
                f"{field:44} {row['runs']:5d} {len(row['failures']):6d} "
                f"{statistics.median(t for t, _ in times):9.2f} {slowest:10.2f}  {slowest_name}"
            )
            failures += len(row["failures"])
        for field, row in self.rows.items():
            for failure in row["failures"]:
                print(f"FAIL {field}: {failure}")
        runs = sum(row["runs"] for row in self.rows.values())
        print(f"\n{runs} runs, {failures} problems")
        return failures


def timed_run(app):
    start = time.perf_counter()
    app.run()
    return time.perf_counter() - start


def sweep_sidebar(tally: Tally, views) -> None:
    for view in views:
        page, query = SIDEBAR_VIEWS[view]
        app = open_page(page, query=query)
        for name, text in TEXTS.items():
            app.session_state["text"] = text
            tally.add(f"sidebar text on {view}", name, timed_run(app), problems_after(app, text))


def sweep_page_fields(tally: Tally) -> None:
    for field, (page, query, key) in PAGE_FIELDS.items():
        app = open_page(page, query=query)
        for name, text in TEXTS.items():
            if key is None:
                cells = [["2", "0", "1", "1"], ["0", "1", "1", "1"], ["1", "1", "0", "1"]]
                cells[0][0] = text
                app.session_state["att_toy_cells"] = {"X": cells}
            else:
                app.session_state[key] = text
            tally.add(f"{field} (page field)", name, timed_run(app), problems_after(app, text))


def sweep_numbers(tally: Tally) -> None:
    for view, (page, opening, parameters) in NUMBER_PARAMETERS.items():
        for parameter in parameters:
            for name, raw in NUMBER_TEXTS.items():
                start = time.perf_counter()
                app = open_page(page, query={**opening, parameter: raw})
                tally.add(
                    f"?{parameter}= on {view} (link)", name, time.perf_counter() - start, problems_after(app, raw)
                )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="only the sidebar text, on three pages")
    arguments = parser.parse_args()
    tally = Tally()
    started = time.perf_counter()
    open_page("lesson_pages/home.py")  # load the model once, outside the timings
    with OutboundConnections() as outbound:
        sweep_sidebar(tally, QUICK_VIEWS if arguments.quick else SIDEBAR_VIEWS)
        if not arguments.quick:
            sweep_page_fields(tally)
            sweep_numbers(tally)
    failures = tally.print()
    print(
        f"{len(TEXTS)} texts, {len(NUMBER_TEXTS)} number strings; outbound connection attempts: "
        f"{len(outbound.attempts)} {sorted(set(outbound.attempts))}; {time.perf_counter() - started:.0f} s in all"
    )
    return 1 if failures or outbound.attempts else 0


if __name__ == "__main__":
    sys.exit(main())
