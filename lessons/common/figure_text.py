"""A figure in words, for screen readers: what it is, how large, and its key numbers.

Every chart of the app is drawn with this text as its accessible name (`lessons.common.ui.charts.show`), so a
reader who cannot see it hears, for example: "Layer 0, head 3: a heatmap of 6 rows by 6 columns, values from
0.01 to 0.87; the largest, 0.87, at row “flies”, column “time”." The text is computed from the figure's own
data, so it says what is drawn, whatever the lesson.
"""

from __future__ import annotations

import html
import re

import numpy as np
import plotly.graph_objects as go

from lessons.common.words import counted

MAX_TRACES = 3  # traces described one by one; the rest are counted
MAX_LABEL_CHARACTERS = 24


def describe(figure: go.Figure, name: str = "") -> str:
    """One or two sentences: the figure's title (or `name`), then each of its first traces in numbers."""
    title = figure.layout.title.text if figure.layout.title is not None and figure.layout.title.text else name
    drawn = [trace for trace in figure.data if _has_data(trace)]
    parts = [_describe_trace(trace) for trace in drawn[:MAX_TRACES]]
    panels = [_plain(note.text) for note in figure.layout.annotations if note.text]
    if len(drawn) > 1 and len(panels) == len(drawn):  # subplots, each titled: name the panel of each
        parts = [f"{panel}, {part}" for panel, part in zip(panels, parts, strict=False)]
    if len(drawn) > MAX_TRACES:
        parts.append(f"and {len(drawn) - MAX_TRACES} more traces")
    body = "; ".join(part for part in parts if part) or "a figure without data"
    heading = _plain(title)
    return f"{heading}: {body}." if heading else f"{body[0].upper()}{body[1:]}."


def _describe_trace(trace) -> str:
    if isinstance(trace, go.Heatmap):
        return _describe_heatmap(trace)
    if isinstance(trace, go.Bar):
        return _describe_bars(trace)
    if isinstance(trace, go.Scatter):
        return _describe_scatter(trace)
    return f"a {trace.type} chart"


def _describe_heatmap(trace: go.Heatmap) -> str:
    values = _numbers(trace.z)
    if values.ndim != 2 or not np.isfinite(values).any():
        return "an empty heatmap"
    rows, columns = values.shape
    row, column = (int(index) for index in np.unravel_index(np.nanargmax(values), values.shape))
    where = f"row {_label(trace.y, row)}, column {_label(trace.x, column)}"
    return (
        f"a heatmap of {counted(rows, 'row')} by {counted(columns, 'column')}, values from {_number(np.nanmin(values))}"
        f" to {_number(np.nanmax(values))}; the largest at {where}"
    )


def _describe_bars(trace: go.Bar) -> str:
    horizontal = trace.orientation == "h"
    values, labels = (_numbers(trace.x), trace.y) if horizontal else (_numbers(trace.y), trace.x)
    if values.ndim != 1 or not np.isfinite(values).any():
        return "an empty bar chart"
    top = int(np.nanargmax(values))
    name = f" ({_plain(trace.name)})" if trace.name else ""
    return f"{counted(len(values), 'bar')}{name}, the tallest {_label(labels, top)} at {_number(values[top])}"


def _describe_scatter(trace: go.Scatter) -> str:
    y = _numbers(trace.y)
    if y.ndim != 1 or not np.isfinite(y).any():
        return ""  # a legend entry without points
    kind = "line" if trace.mode is None or "lines" in trace.mode else "set of points"
    name = f" {_plain(trace.name)}" if trace.name else ""
    return f"a {kind}{name} of {counted(len(y), 'point')}, from {_number(np.nanmin(y))} to {_number(np.nanmax(y))}"


def _has_data(trace) -> bool:
    return any(getattr(trace, axis, None) is not None for axis in ("z", "y", "x"))


def _numbers(values) -> np.ndarray:
    if values is None:
        return np.array([])
    try:
        return np.asarray(values, dtype=float)
    except (TypeError, ValueError):  # labels, not numbers
        return np.array([])


def _label(labels, index: int) -> str:
    if labels is None or index >= len(labels):
        return str(index)
    return f"“{_plain(str(labels[index]))[:MAX_LABEL_CHARACTERS]}”"


def _plain(text: str) -> str:
    """Plotly's label markup (<br>, <b>, &lt;) as the plain text it shows."""
    return html.unescape(re.sub(r"<[^>]*>", " ", text or "")).replace("  ", " ").strip()


def _number(value: float) -> str:
    return f"{value:,.2f}" if abs(value) < 1000 else f"{value:,.0f}"
