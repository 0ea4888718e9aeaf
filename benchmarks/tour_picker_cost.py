"""What the sidebar's "Guided tour" section costs a page: server time of a fresh session's first run, and bytes.

Run:  python benchmarks/tour_picker_cost.py [--repeats 15] [--pages home tokenization attention]

The section (`lessons.common.ui.tour.show_picker`) is drawn on every run of every page: a collapsed expander
whose content (a selectbox, a button, a file uploader and a path field) is sent only while it is open. Each
repetition opens a page in a new AppTest session (what a visitor's first visit costs the server once the model
and caches are warm), once as shipped and once with `show_picker` replaced by a function that draws nothing, in
alternating order so that both see the same machine. Printed: the median milliseconds of each, their difference
and ratio, and the serialized bytes the section adds to the page. Informational: the script exits 0 whatever it
measures. What the section costs the browser: `benchmarks/paint_ab.py`.
"""

from __future__ import annotations

import argparse
import logging
import statistics
import time
from contextlib import nullcontext
from unittest import mock

from page_speed import payload_bytes

from harness.apptest import new_app

logging.disable(logging.WARNING)  # AppTest warns on every run that it has no browser session


def first_run(page: str, with_picker: bool) -> tuple[float, int]:
    """Milliseconds of a new session's first run of `page` (through app.py), and the bytes it drew."""
    app = new_app(timeout=300)  # the registry of installed components found once, as a server does
    if page != "home":
        app.switch_page(f"lesson_pages/{page}.py")
    without = mock.patch("lessons.common.ui.tour.show_picker", lambda: None)
    with nullcontext() if with_picker else without:
        start = time.perf_counter()
        app.run()
        milliseconds = (time.perf_counter() - start) * 1000
    if app.exception:
        raise RuntimeError(f"{page}: {[item.value for item in app.exception]}")
    return milliseconds, payload_bytes(app._tree)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--pages", nargs="+", default=["home", "tokenization", "attention"])
    arguments = parser.parse_args()
    print(f"{'page':<14}{'with ms':>9}{'without ms':>12}{'difference':>12}{'ratio':>7}{'section bytes':>15}")
    for page in arguments.pages:
        first_run(page, True)  # warm: the model, the traced run and every cached figure
        timings: dict[bool, list[float]] = {True: [], False: []}
        sizes: dict[bool, int] = {}
        for repeat in range(arguments.repeats):
            for with_picker in (True, False) if repeat % 2 == 0 else (False, True):
                milliseconds, sizes[with_picker] = first_run(page, with_picker)
                timings[with_picker].append(milliseconds)
        with_ms, without_ms = (statistics.median(timings[flag]) for flag in (True, False))
        print(
            f"{page:<14}{with_ms:>9.1f}{without_ms:>12.1f}{with_ms - without_ms:>+12.1f}"
            f"{with_ms / without_ms:>7.2f}{sizes[True] - sizes[False]:>15,}"
        )


if __name__ == "__main__":
    main()
