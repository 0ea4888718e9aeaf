"""What one element adds to a page's first paint: a bare Streamlit page holding a title and one 2×2 plotly chart (the
one-chart floor of browser_vs_bertviz.py), and the same page with one more element, loaded cold in turns.

    python benchmarks/element_paint.py [--rounds 6] [--only dataframe-32,table-32]

A lesson paints later than the app's frame around one chart by the sum of what its own elements cost the browser:
each kind of element is a script chunk to fetch, compile and run on a first visit, and some draw slowly. This
measures each kind alone, so that a lesson's gap can be read as the sum of its parts (docs/performance.md).

One Streamlit server serves one page whose query parameter `element` chooses the element (ELEMENTS). Every page is
loaded once first (the server's caches warm), then every round loads each page once, cold (a fresh browser
context, empty HTTP cache), in an order drawn afresh each round. Printed: the median cold paint of each page and its
difference from the bare page's (positive: later). Paint is counted as the browser tests count it (script done, no
placeholder left, the chart drawn). Informational: the script exits 0 whatever it measures.
"""

from __future__ import annotations

import argparse
import random
import tempfile
from pathlib import Path

from browser_support import (
    ARTIFACTS,
    STREAMLIT_PAINTED,
    StreamlitServer,
    chromium_launch_options,
    load,
    median,
    new_context,
)
from playwright.sync_api import sync_playwright

BARE = "none"
# element name -> the Streamlit code that draws it, between the page's title and its chart
ELEMENTS = {
    BARE: "",
    "markdown-with-latex": r'st.markdown(r"Scores $QK^\top / \sqrt{d_k}$, then $\mathrm{softmax}$.")',
    "markdown-with-italics": 'st.markdown("Some *slanted* words.")',
    "selectbox": 'st.selectbox("Layer", range(6))',
    "toggle": 'st.toggle("Show more")',
    "segmented-control": 'st.segmented_control("Tab", ["One", "Two", "Three"], default="One")',
    "expander": 'st.expander("More").write("Inside.")',
    "download-button": 'st.download_button("CSV", "a,b\\n1,2\\n", "table.csv")',
    "table-32": "st.table(rows(32))",
    "dataframe-32": "st.dataframe(rows(32))",
    "table-512": "st.table(rows(512))",
    "dataframe-512": "st.dataframe(rows(512), height=400)",
    "chart-of-12-maps": "st.plotly_chart(twelve_maps())",
}
PAGE = """import pandas as pd
import plotly.graph_objects as go
import streamlit as st
from plotly.subplots import make_subplots


def rows(count):
    return pd.DataFrame({{"token": [f"token {{index}}" for index in range(count)], "id": range(count)}})


def twelve_maps():
    figure = make_subplots(rows=3, cols=4)
    for panel in range(12):
        figure.add_trace(go.Heatmap(z=[[0.1] * 32] * 32, coloraxis="coloraxis"), panel // 4 + 1, panel % 4 + 1)
    return figure


element = st.query_params.get("element", "{bare}")
st.title("Floor")
{branches}
st.plotly_chart(go.Figure(go.Heatmap(z=[[0.1, 0.9], [0.6, 0.4]])))
"""


def page_source(elements: dict[str, str]) -> str:
    branches = "\n".join(f"if element == {name!r}:\n    {code}" for name, code in elements.items() if code)
    return PAGE.format(bare=BARE, branches=branches)


def cold_paints(url: str, names: list[str], rounds: int) -> dict[str, list[float | None]]:
    """{element: [cold paint in ms, one per round]}, the pages loaded in an order drawn afresh each round."""
    paints: dict[str, list[float | None]] = {name: [] for name in names}
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(**chromium_launch_options())
        for round_number in range(-1, rounds):  # round −1 warms the server and is not counted
            order = list(names)
            random.Random(round_number).shuffle(order)
            for name in order:
                context = new_context(browser)
                try:
                    paint_ms = load(context, f"{url}/?element={name}", STREAMLIT_PAINTED, 1).paint_ms
                finally:
                    context.close()
                if round_number >= 0:
                    paints[name].append(paint_ms)
        browser.close()
    return paints


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--only", help=f"comma-separated elements, of: {', '.join(ELEMENTS)}")
    arguments = parser.parse_args()
    chosen = [name for name in arguments.only.split(",") if name] if arguments.only else list(ELEMENTS)
    names = [BARE, *(name for name in chosen if name != BARE)]
    unknown = sorted(set(names) - set(ELEMENTS))
    if unknown:
        parser.error(f"no such element: {', '.join(unknown)}")
    with tempfile.TemporaryDirectory(prefix="element-paint-") as folder:
        script = Path(folder) / "page.py"
        script.write_text(page_source({name: ELEMENTS[name] for name in names}))
        with StreamlitServer(script=script, log_path=ARTIFACTS / "streamlit-element-paint.log") as server:
            paints = cold_paints(server.url, names, arguments.rounds)
    bare = median([paint for paint in paints[BARE] if paint is not None])
    print(f"{'element':<24}{'cold s':>8}{'added s':>9}  each round's cold paint (s)")
    for name, values in paints.items():
        painted = [paint for paint in values if paint is not None]
        if len(painted) < len(values):
            print(f"{name:<24}{'not painted in some rounds':>17}  {values}")
            continue
        cold = median(painted)
        each = [round(paint / 1000, 2) for paint in painted]
        print(f"{name:<24}{cold / 1000:>8.2f}{(cold - bare) / 1000:>+9.2f}  {each}")


if __name__ == "__main__":
    main()
