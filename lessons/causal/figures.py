"""Figures of the masking lesson: a mask, scores with their −∞ cells, and weights under several masks.

Plotly cannot draw an infinite value, so a forbidden score is sent as an empty cell of the score trace
and drawn by a second, grey trace that writes "−∞" in it: the learner sees exactly which cells the mask
removed, and the numbers the page sends stay finite. How a token matrix is laid out, named and sized for its
numbers is shared with the other lessons that draw one (`lessons.common.matrix_figures`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import plotly.graph_objects as go

from lessons.common.cell_numbers import (
    CELL_FONT,
    LABEL_ROOM,
    numbers_fit,
    record_numbers,
    widest_number,
    width_for_numbers,
)
from lessons.common.matrix_figures import (
    FORBIDDEN_COLOUR,
    MINUS_INFINITY,
    finish_matrix,
    finish_panels,
    finish_token_axes,
    mask_trace,
    panel_axes,
    panel_grid,
    token_axes,
    token_names,
    weight_scale,
    weights_trace,
)
from lessons.common.plots import ATTENTION_SCALE, DIVERGING_SCALE, compact, style


@dataclass(frozen=True)
class Panel:
    """One attention matrix of a side-by-side comparison."""

    title: str
    weights: object  # (T, T) array or tensor, values in [0, 1]
    labels: Sequence[str]  # the T tokens, for rows and columns alike
    positions: Sequence[int] | None = None  # their positions in the sequence (default 0 … T − 1)


def _score_traces(
    scores, names: list[str], show: bool, coloraxis: str, show_minus_infinity: bool | None = None
) -> list[go.Heatmap]:
    """Two layers: grey "−∞" cells where the mask forbids, the finite scores everywhere else. The numbers are
    written when `show`, the short "−∞" also when `show_minus_infinity` (default: with the numbers)."""
    marked = show if show_minus_infinity is None else show_minus_infinity
    values = compact(scores)
    forbidden = np.isneginf(values)
    minus_infinity_cells = go.Heatmap(
        z=np.where(forbidden, 0.0, np.nan).astype(np.float32),
        x=names,
        y=names,
        name="forbidden",
        colorscale=[[0.0, FORBIDDEN_COLOUR], [1.0, FORBIDDEN_COLOUR]],
        showscale=False,
        xgap=1,
        ygap=1,
        text=np.where(forbidden, MINUS_INFINITY, "").tolist() if marked else None,
        texttemplate="%{text}" if marked else None,
        textfont=CELL_FONT,
        hovertemplate=f"query %{{y}}<br>key %{{x}}<br>score = {MINUS_INFINITY} (masked)<extra></extra>",
    )
    score_cells = go.Heatmap(
        z=np.where(forbidden, np.nan, values),
        x=names,
        y=names,
        name="score",
        coloraxis=coloraxis,
        xgap=1,
        ygap=1,
        texttemplate="%{z:.2f}" if show else None,
        textfont=CELL_FONT,
        hovertemplate="query %{y}<br>key %{x}<br>score = %{z:.4f}<extra></extra>",
    )
    return [minus_infinity_cells, score_cells]


def _score_scale(*score_matrices, show_scale: bool = True) -> dict:
    """One diverging colour scale, centred on 0 and wide enough for every finite score shown."""
    finite = [values[np.isfinite(values)] for values in map(compact, score_matrices)]
    reach = max((float(np.abs(values).max()) for values in finite if values.size), default=1.0)
    return dict(
        colorscale=DIVERGING_SCALE,
        cmid=0.0,
        cmin=-reach,
        cmax=reach,
        showscale=show_scale,
        colorbar=dict(title="score"),
    )


def steps_figure(
    mask,
    scores,
    masked_scores,
    labels: Sequence[str],
    weights=None,
    title: str = "",
    positions: Sequence[int] | None = None,
    show_values: bool | None = None,
) -> go.Figure:
    """The masking recipe: the mask, the scores, the scores with −∞ filled in, and (when given) the softmax
    of each row, in reading order: three in a row, or four as a 2 × 2 grid so that each panel keeps room
    for its numbers. Both score panels share one colour scale.

    The cells carry ✓/✗, −∞ and the numbers when a desktop has room for them; the colour bars are left
    out where the numbers say it all."""
    names = token_names(labels, positions)
    columns = 2 if weights is not None else 3
    across = columns * len(names)  # cells side by side in one row of panels
    characters = widest_number(*map(compact, (scores, masked_scores, *([] if weights is None else [weights]))))
    numbers_px = width_for_numbers(across, characters, reserved=LABEL_ROOM // 2)
    glyphs_px = width_for_numbers(across, len(MINUS_INFINITY))  # ✓, ✗ and −∞
    show = numbers_fit(numbers_px, show_values)
    show_glyphs = show or numbers_fit(glyphs_px, show_values)
    titles = ["1 · the mask", "2 · scores QKᵀ/√d<sub>k</sub>", "3 · scores + mask"]
    if weights is not None:
        titles.append("4 · softmax rows")
    else:  # a third of the width: room for short lines only
        titles = ["1 · the<br>mask", "2 · scores<br>QKᵀ/√d<sub>k</sub>", "3 · scores<br>+ mask"]
    figure, height = panel_grid(titles, columns, len(names))
    figure.add_trace(mask_trace(mask, names, show_glyphs).update(panel_axes(0)))
    for panel, matrix in zip((1, 2), (scores, masked_scores)):  # in reading order, whatever the grid
        traces = _score_traces(matrix, names, show, "coloraxis", show_glyphs)
        figure.add_traces([trace.update(panel_axes(panel)) for trace in traces])
    layout = dict(coloraxis=_score_scale(scores, masked_scores, show_scale=not show))
    if weights is not None:
        figure.add_trace(weights_trace(weights, names, show, "coloraxis2").update(panel_axes(3)))
        layout["coloraxis2"] = weight_scale(show_scale=False)  # the score scale's bar sits there
    figure.update_layout(**layout)
    token_axes(figure, names)
    needed = numbers_px if show else glyphs_px if show_glyphs else None
    return finish_token_axes(finish_panels(figure, title, height, needed), names)


def mask_figure(mask, labels: Sequence[str], title: str = "", positions: Sequence[int] | None = None) -> go.Figure:
    """The mask alone: ✓ where a query may attend to a key, ✗ where it may not (the glyphs where they fit)."""
    names = token_names(labels, positions)
    glyphs_px = width_for_numbers(len(names), len(MINUS_INFINITY))
    show = numbers_fit(glyphs_px, None)
    figure = go.Figure(mask_trace(mask, names, show))
    if show:
        record_numbers(figure, glyphs_px)
    return finish_matrix(figure, names, title)


def compare_figure(panels: Sequence[Panel], title: str = "", show_values: bool | None = None) -> go.Figure:
    """Several attention matrices side by side on one shared 0–1 colour scale. Their rows share one axis
    (drawn once, at the left): a panel with more tokens than the others (a padded text) adds rows at the
    bottom, and panels are as wide as their number of keys, so every cell has the same size."""
    widths = [len(panel.labels) for panel in panels]
    figure, height = panel_grid([panel.title for panel in panels], len(panels), max(widths), column_widths=widths)
    values = [compact(panel.weights) for panel in panels]
    needed = width_for_numbers(sum(widths), widest_number(*values))
    show = numbers_fit(needed, show_values)
    rows: list[str] = []
    for column, (panel, matrix) in enumerate(zip(panels, values)):
        names = token_names(panel.labels, panel.positions)
        rows += [name for name in names if name not in rows]
        figure.add_trace(weights_trace(matrix, names, show, "coloraxis").update(panel_axes(column)))
    token_axes(figure, rows)
    figure.update_yaxes(categoryorder="array", categoryarray=rows)
    figure.update_layout(coloraxis=weight_scale())
    return finish_token_axes(finish_panels(figure, title, height, needed if show else None), rows)


def overview_figure(weights, title: str = "") -> go.Figure:
    """Every cell of a long sequence's matrix, without token labels: the shape of the whole pattern.

    Sent as float32 (about 5 characters a cell), so a 512 × 512 matrix is about 1.4 MB.
    """
    figure = go.Figure(
        go.Heatmap(
            z=compact(weights),
            colorscale=ATTENTION_SCALE,
            zmin=0.0,
            zmax=1.0,
            colorbar=dict(title="weight"),
            hovertemplate="query %{y}<br>key %{x}<br>weight = %{z:.4g}<extra></extra>",
        )
    )
    figure.update_xaxes(side="top", title="key position")
    figure.update_yaxes(autorange="reversed", title="query position", scaleanchor="x")
    return style(figure, title, height=720)
