"""Heatmaps with numbers in their cells, drawn so that a number is readable or not drawn at all.

A figure is built once, before anyone knows how wide it will be drawn: 820 px on a desktop, 520 px on a
desktop zoomed to 150 %, 358 px on a phone. Its builder writes the numbers at a fixed, readable size and
records in the layout's meta the narrowest chart that has room for them (`figures.NUMBERS_FROM_PX`). Here,
a CSS container query on the chart's own box (Streamlit gives a keyed element the class `st-key-<key>`)
hides the numbers in any narrower chart; the hover and the tables beside the chart still give every value.
A style-only `st.html` takes no room on the page.
"""

from __future__ import annotations

from collections.abc import Callable

import plotly.graph_objects as go
import streamlit as st

from lessons.causal.figures import NUMBERS_FROM_PX
from lessons.common.ui import charts


def numbers_rule(key: str, narrowest_px: int) -> str:
    """CSS that hides the cell numbers of the chart keyed `key` wherever it is narrower than `narrowest_px`."""
    box = f".st-key-{key}"
    return (
        f"<style>{box} {{ container-type: inline-size; }} "
        f"@container (max-width: {narrowest_px - 1}px) {{ {box} .heatmaplayer text {{ display: none; }} }}</style>"
    )


def show_chart(figure: go.Figure, key: str, about: str | None = None) -> None:
    """`charts.show`, with the numbers in the cells left out where the chart has no room for them."""
    charts.show(figure, key=key, about=about)
    narrowest = (figure.layout.meta or {}).get(NUMBERS_FROM_PX)
    if narrowest:
        st.html(numbers_rule(key, int(narrowest)))


@st.cache_resource(max_entries=16, show_spinner=False)
def _cached_figure(chart_key: str, inputs: tuple, _build: Callable[[], go.Figure]) -> go.Figure:
    return _build()


def show_figure(chart_key: str, inputs: tuple, build: Callable[[], go.Figure]) -> None:
    """`show_chart(build())`, built once per `inputs` (everything `build` reads)."""
    show_chart(_cached_figure(chart_key, inputs, build), chart_key)
