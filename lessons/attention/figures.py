"""Figures for the attention lesson: each step's matrix, score cells that explain themselves on hover,
the whole attention pattern of one head, and one score taken apart feature by feature."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Literal

import numpy as np
import plotly.graph_objects as go

from lessons.common.cell_numbers import CELL_FONT, record_numbers
from lessons.common.labels import token_labels
from lessons.common.matrix_figures import COLOUR_BAR_UNDER, finish_panels
from lessons.common.plots import (
    ATTENTION_SCALE,
    DIVERGING_SCALE,
    as_array,
    cell_frame,
    cell_numbers_px,
    safe_label,
    style,
)

ScoreStage = Literal["raw", "scaled", "weights"]
SIGNIFICANT_DIGITS = 4  # what a reader can compare by eye; fewer bytes per cell for long texts
# The values written in the cells: four significant digits without trailing zeros ("3", "0.25", "−12.34"). Written
# by Python, which also measures their width: plotly's d3-format keeps the zeros ("3.000") and cannot drop them.
NUMBER_FORMAT = f".{SIGNIFICANT_DIGITS}g"
HIGHLIGHT_COLOUR = "#f59e0b"
MIN_SCORE_ROWS = 3

_STAGE_TITLES = {"raw": "QKᵀ", "scaled": "QKᵀ / √d<sub>k</sub>", "weights": "softmax weight"}


def round_significant(values, digits: int = SIGNIFICANT_DIGITS) -> np.ndarray:
    """Values kept to `digits` significant figures (0, ±∞ and NaN unchanged)."""
    array = as_array(values)
    finite = np.isfinite(array) & (array != 0)
    magnitude = np.zeros_like(array)
    magnitude[finite] = np.floor(np.log10(np.abs(array[finite])))
    scale = 10.0 ** (digits - 1 - magnitude)
    return np.where(finite, np.round(array * scale) / scale, array)


def step_matrix(
    matrix,
    row_labels: Sequence[str],
    column_labels: Sequence[str],
    title: str = "",
    show_values: bool | None = None,
    row_title: str = "token",
    column_title: str = "feature",
) -> go.Figure:
    """A signed matrix (X, a projection, Q, K, V, an output) on a scale centred on zero, so that the
    sign of every entry reads at a glance. Its values are written in its cells where `plots.heatmap` would write them
    (`show_values`: True, None where a desktop has room, False never).

    Unlike `common.heatmap`, hover text is built from the axis names rather than stored per cell: a
    48-token window of 384-wide embeddings is 18,000 cells, and per-cell labels would triple its size.
    """
    values = round_significant(matrix)
    bound = _largest_magnitude(values)
    rows, columns = _category_names(row_labels), _category_names(column_labels)
    height = _height_for(len(rows))
    needed_px = cell_numbers_px([values], len(columns), rows, height, show_values, NUMBER_FORMAT)
    figure = go.Figure(
        go.Heatmap(
            z=values.astype(np.float32),
            x=columns,
            y=rows,
            colorscale=DIVERGING_SCALE,
            zmin=-bound,
            zmax=bound,
            hovertemplate=f"{row_title} %{{y}}<br>{column_title} %{{x}}<br>value = %{{z:.4g}}<extra></extra>",
            **_cell_text(values, needed_px),
        )
    )
    _label_axes(figure, row_title, column_title, len(rows), len(columns))
    record_numbers(figure, needed_px)
    return style(figure, title, height=height)


def projection_panels(
    matrices: Mapping[str, object],
    row_labels: Sequence[str],
    column_labels: Sequence[str],
    title: str = "",
    show_values: bool | None = None,
) -> go.Figure:
    """Q, K and V (or any few matrices with the same rows) side by side in one figure, on one colour scale
    centred on zero so that their entries compare directly, their values written as `step_matrix` writes them.
    One figure rather than three: each plotly figure costs a fixed build time, and this one is redrawn on every
    change of the page."""
    named = {name: round_significant(matrix) for name, matrix in matrices.items()}
    bound = max(_largest_magnitude(values) for values in named.values())
    rows, columns = _category_names(row_labels), _category_names(column_labels)
    gap = 0.04
    width = (1.0 - gap * (len(named) - 1)) / len(named)
    height = _height_for(len(rows))
    # The panels' cells share the plot's width with the gaps between them: as wide as this many cells.
    columns_across = math.ceil(len(columns) / width)
    needed_px = cell_numbers_px(list(named.values()), columns_across, rows, height, show_values, NUMBER_FORMAT)
    figure = go.Figure()
    for index, (name, values) in enumerate(named.items()):
        axis = "" if index == 0 else str(index + 1)
        figure.add_trace(
            go.Heatmap(
                z=values.astype(np.float32),
                x=columns,
                y=rows,
                xaxis=f"x{axis}",
                yaxis="y",
                coloraxis="coloraxis",
                name=name,
                hovertemplate=f"{name}<br>token %{{y}}<br>feature %{{x}}<br>value = %{{z:.4g}}<extra></extra>",
                **_cell_text(values, needed_px),
            )
        )
        start = index * (width + gap)
        figure.update_layout(
            {
                f"xaxis{axis}": dict(
                    domain=[start, start + width],
                    type="category",
                    side="top",
                    title=name,
                    anchor="y",
                    showticklabels=len(columns) <= 64,
                )
            }
        )
    figure.update_yaxes(type="category", autorange="reversed", title="token", showticklabels=len(rows) <= 64)
    figure.update_layout(coloraxis=dict(colorscale=DIVERGING_SCALE, cmin=-bound, cmax=bound))
    record_numbers(figure, needed_px)
    return style(figure, title, height=height)


def score_matrix(
    raw_scores,
    scaled_scores,
    weights,
    row_labels: Sequence[str],
    column_labels: Sequence[str],
    stage: ScoreStage,
    title: str = "",
    show_values: bool | None = None,
    highlight: tuple[int, int] | None = None,
) -> go.Figure:
    """One stage of the (query × key) score matrix, its values written as `step_matrix` writes them. Hovering a
    cell shows its whole story: q·k = raw, ÷√dₖ = scaled, and the softmax weight it became. `highlight` outlines
    one cell.

    The colour bar lies under the matrix, as under the lesson's other matrices: beside a matrix of a few rows
    it would be as short as they are, and on a phone its five numbers (−40 to 40) stood on each other."""
    raw, scaled, weight = (round_significant(m) for m in (raw_scores, scaled_scores, weights))
    shown = {"raw": raw, "scaled": scaled, "weights": weight}[stage]
    rows, columns = _category_names(row_labels), _category_names(column_labels)
    if stage == "weights":
        colours = dict(colorscale=ATTENTION_SCALE, cmin=0.0, cmax=1.0)
    else:
        bound = _largest_magnitude(shown)
        colours = dict(colorscale=DIVERGING_SCALE, cmin=-bound, cmax=bound)
    # At least MIN_SCORE_ROWS rows' height: one query's row alone (an exercise's figure) was left two pixels
    # under its title, its key labels and their axis title.
    height = _height_for(max(len(rows), MIN_SCORE_ROWS))
    needed_px = cell_numbers_px([shown], len(columns), rows, height, show_values, NUMBER_FORMAT, COLOUR_BAR_UNDER)
    figure = go.Figure(
        go.Heatmap(
            z=shown.astype(np.float32),
            x=columns,
            y=rows,
            customdata=np.stack([raw, scaled, weight], axis=-1).astype(np.float32),  # (T, S, 3)
            hovertemplate=(
                "query %{y} · key %{x}<br>"
                "q·k = %{customdata[0]:.4g}<br>"
                "÷ √d<sub>k</sub> = %{customdata[1]:.4g}<br>"
                "softmax weight = %{customdata[2]:.4g}<extra></extra>"
            ),
            coloraxis="coloraxis",
            **_cell_text(shown, needed_px),
        )
    )
    figure.update_layout(coloraxis=colours)
    _label_axes(figure, "query", "key", len(rows), len(columns))
    if highlight is not None:
        figure.add_shape(cell_frame(*highlight, HIGHLIGHT_COLOUR))
    return finish_panels(figure, title or _STAGE_TITLES[stage], height, needed_px, titles_under=False)


def full_pattern(weights, labels: Sequence[str], title: str = "") -> go.Figure:
    """Every query against every key of one head, kept light for 512 tokens: no printed values, values
    sent as float32, and each axis the tokens' names ("3: flies", `labels.token_labels`) rather than per-cell
    hover text."""
    values = round_significant(weights).astype(np.float32)
    names = _category_names(labels)
    figure = go.Figure(
        go.Heatmap(
            z=values,
            x=names,
            y=names,
            colorscale=ATTENTION_SCALE,
            zmin=0.0,
            zmax=1.0,
            hovertemplate="query %{y}<br>key %{x}<br>weight = %{z:.4g}<extra></extra>",
        )
    )
    _label_axes(figure, "query", "key", len(names), len(names))
    return style(figure, title, height=700)


def neuron_view(
    query,
    key,
    products,
    query_label: str,
    key_label: str,
    feature_labels: Sequence[str] | None = None,
    title: str = "",
) -> go.Figure:
    """Query i, key j and their feature-by-feature products as three rows of bars. The products' sum
    is the score QKᵀ[i, j]: tall bars of one sign are the features that make the two tokens agree."""
    query, key, products = (round_significant(vector).astype(np.float32) for vector in (query, key, products))
    features = _category_names(feature_labels if feature_labels is not None else range(len(query)))
    panels = [
        ("query", f"query {safe_label(query_label)}", query, "#6366f1", "y", [0.70, 1.0]),
        ("key", f"key {safe_label(key_label)}", key, "#10b981", "y2", [0.36, 0.64]),
        ("q × k", "query × key", products, HIGHLIGHT_COLOUR, "y3", [0.0, 0.30]),
    ]
    figure = go.Figure()
    # Three stacked panels sharing the feature axis, laid out by axis domains: the same picture as
    # make_subplots at a fraction of the build time.
    for axis_title, name, values, colour, axis, domain in panels:
        figure.add_trace(
            go.Bar(
                x=features,
                y=values,
                name=name,
                marker_color=colour,
                yaxis=axis,
                hovertemplate=f"{name}<br>feature %{{x}}: %{{y:.4g}}<extra></extra>",
            )
        )
        layout_name = "yaxis" if axis == "y" else f"yaxis{axis[1:]}"
        figure.update_layout({layout_name: dict(domain=domain, title=axis_title, anchor="x", zeroline=True)})
    # The three panels share one feature axis, drawn once, under the bottom panel.
    figure.update_xaxes(type="category", title="feature", showticklabels=len(features) <= 64, anchor="y3")
    figure.update_layout(showlegend=False, bargap=0.15)
    return style(figure, title, height=460)


def _category_names(labels: Sequence[object]) -> list[str]:
    """Axis names that plotly shows literally (escaped) and keeps apart: a repeated token, or a label
    that looks like a number, would otherwise be merged or moved by the category axis."""
    names = [safe_label(str(label)) for label in labels]
    if len(set(names)) < len(names):
        names = token_labels(names)
    return names


def _label_axes(figure: go.Figure, row_title: str, column_title: str, rows: int, columns: int) -> None:
    """Row 0 at the top, as matrices are written; tick labels only where they can be read."""
    figure.update_xaxes(type="category", side="top", title=column_title, showticklabels=columns <= 64)
    figure.update_yaxes(type="category", autorange="reversed", title=row_title, showticklabels=rows <= 64)


def _largest_magnitude(values: np.ndarray) -> float:
    """The symmetric colour range of a signed matrix (1 for an all-zero one, so the scale stays valid)."""
    return float(np.max(np.abs(values[np.isfinite(values)]), initial=0.0)) or 1.0


def _height_for(rows: int) -> int:
    """Tall enough for every row label, never taller than a screen."""
    return min(120 + 34 * rows, 760)


def _cell_text(values: np.ndarray, needed_px: int | None) -> dict:
    """A heatmap trace's settings that write `values` in its cells (none where `needed_px` is None)."""
    if needed_px is None:
        return {}
    written = [[format(float(value), NUMBER_FORMAT).replace("-", "−") for value in row] for row in values]
    return dict(text=written, texttemplate="%{text}", textfont=CELL_FONT)
