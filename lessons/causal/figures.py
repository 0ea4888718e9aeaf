"""Figures of the masking lesson: a mask, scores with their −∞ cells, and weights under several masks.

Plotly cannot draw an infinite value, so a forbidden score is sent as an empty cell of the score trace
and drawn by a second, grey trace that writes "−∞" in it: the learner sees exactly which cells the mask
removed, and the numbers the page sends stay finite.

Every matrix here is self-attention, so rows and columns share one list of tokens. Each token is named
by its position and its text ("3 flies"): a repeated word keeps its own row, and the name doubles as the
hover text, so no per-cell label array has to be sent.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from lessons.common.plots import ATTENTION_SCALE, DIVERGING_SCALE, as_array, safe_label, style

MINUS_INFINITY = "−∞"
ALLOWED, FORBIDDEN = "✓", "✗"
FORBIDDEN_COLOUR = "#b8b8c0"  # neutral grey: "no score here", distinct from every value colour
ALLOWED_COLOUR = "#6a51a3"  # the purple of the attention scale
MASK_COLOURS = [[0.0, FORBIDDEN_COLOUR], [0.5, FORBIDDEN_COLOUR], [0.5, ALLOWED_COLOUR], [1.0, ALLOWED_COLOUR]]
MAX_CELLS_WITH_TEXT = 16 * 16  # beyond this, numbers written in the cells of a full-width figure are unreadable
MAX_PANEL_CELLS_WITH_TEXT = 9 * 9  # the same for one panel of a row of three or four


@dataclass(frozen=True)
class Panel:
    """One attention matrix of a side-by-side comparison."""

    title: str
    weights: object  # (T, T) array or tensor, values in [0, 1]
    labels: Sequence[str]  # the T tokens, for rows and columns alike
    positions: Sequence[int] | None = None  # their positions in the sequence (default 0 … T − 1)


def compact(values) -> np.ndarray:
    """float32 copy of the values: half the bytes of float64 on the wire, still about 7 significant digits,
    and exact where it matters here (a masked weight stays exactly 0.0, −∞ stays −∞)."""
    return as_array(values).astype(np.float32)


def token_names(labels: Sequence[str], positions: Sequence[int] | None = None) -> list[str]:
    """ "position token" for each token, escaped for plotly: unique even when a word repeats."""
    positions = range(len(labels)) if positions is None else positions
    return [f"{position} {safe_label(label)}" for position, label in zip(positions, labels)]


def _show_text(values: np.ndarray, show_values: bool | None, limit: int = MAX_CELLS_WITH_TEXT) -> bool:
    """Write the numbers in the cells when asked to, or by default when the cells are big enough."""
    return values.size <= limit if show_values is None else show_values


def _token_axes(figure: go.Figure, names: list[str], row: int | None = None, col: int | None = None) -> None:
    """Keys (the tokens attended to) across the top, queries (the tokens attending) down the side, first
    token at the top left, as matrices are written on paper."""
    where = dict(row=row, col=col) if row is not None else {}
    crowded = len(names) > 8 or max(map(len, names), default=0) > 6
    figure.update_xaxes(type="category", side="top", tickangle=-60 if crowded else 0, **where)
    figure.update_yaxes(type="category", autorange="reversed", **where)


def _height(rows: int) -> int:
    """Tall enough for one readable label per row, within one screen."""
    return int(min(720, max(300, 160 + 14 * rows)))


def _finish(figure: go.Figure, names: list[str], title: str) -> go.Figure:
    _token_axes(figure, names)
    return style(figure, title, height=_height(len(names)))


def _mask_trace(mask, names: list[str], show: bool) -> go.Heatmap:
    allowed = as_array(mask) > 0
    text = np.where(allowed, ALLOWED, FORBIDDEN).tolist() if show else None
    return go.Heatmap(
        z=allowed.astype(np.int8),
        x=names,
        y=names,
        name="mask",
        colorscale=MASK_COLOURS,
        zmin=0,
        zmax=1,
        showscale=False,
        xgap=1,
        ygap=1,
        text=text,
        texttemplate="%{text}" if show else None,
        textfont=dict(color="white", size=15),
        hovertemplate="query %{y}<br>key %{x}<br>%{z} (1 = may attend, 0 = forbidden)<extra></extra>",
    )


def _score_traces(scores, names: list[str], show: bool, coloraxis: str) -> list[go.Heatmap]:
    """Two layers: grey "−∞" cells where the mask forbids, the finite scores everywhere else."""
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
        text=np.where(forbidden, MINUS_INFINITY, "").tolist() if show else None,
        texttemplate="%{text}" if show else None,
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
        hovertemplate="query %{y}<br>key %{x}<br>score = %{z:.4f}<extra></extra>",
    )
    return [minus_infinity_cells, score_cells]


def _weights_trace(weights, names: list[str], show: bool, coloraxis: str) -> go.Heatmap:
    return go.Heatmap(
        z=compact(weights),
        x=names,
        y=names,
        name="weight",
        coloraxis=coloraxis,
        xgap=1,
        ygap=1,
        texttemplate="%{z:.2f}" if show else None,
        hovertemplate="query %{y}<br>key %{x}<br>weight = %{z:.4g}<extra></extra>",
    )


def _score_scale(*score_matrices) -> dict:
    """One diverging colour scale, centred on 0 and wide enough for every finite score shown."""
    finite = [values[np.isfinite(values)] for values in map(compact, score_matrices)]
    reach = max((float(np.abs(values).max()) for values in finite if values.size), default=1.0)
    return dict(colorscale=DIVERGING_SCALE, cmid=0.0, cmin=-reach, cmax=reach, colorbar=dict(title="score"))


def _weight_scale(show_scale: bool = True) -> dict:
    return dict(colorscale=ATTENTION_SCALE, cmin=0.0, cmax=1.0, showscale=show_scale, colorbar=dict(title="weight"))


def _side_by_side(titles: Sequence[str], same_rows: bool = False) -> go.Figure:
    """One row of panels; panels over the same tokens share their query labels (drawn once, at the left)."""
    return make_subplots(
        rows=1,
        cols=len(titles),
        subplot_titles=list(titles),
        shared_yaxes=same_rows,
        horizontal_spacing=0.03 if same_rows else 0.08,
    )


def _finish_side_by_side(figure: go.Figure, title: str, panels: int) -> go.Figure:
    # About square panels on a wide page (~1000 px of plots), plus room for the rotated token labels.
    styled = style(figure, title, height=int(1000 / panels) + 170)
    # The key labels sit on top of each panel, so the panel titles go underneath.
    styled.update_annotations(y=0, yanchor="top", yshift=-6)
    return styled.update_layout(margin=dict(t=110, b=40))


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
    """The masking recipe left to right: the mask, the scores, the scores with −∞ filled in, and
    (when given) the softmax of each row. Both score panels share one colour scale."""
    names = token_names(labels, positions)
    show = _show_text(compact(scores), show_values, MAX_PANEL_CELLS_WITH_TEXT)
    titles = ["1 · the mask", "2 · scores QKᵀ/√d", "3 · scores + mask"]
    if weights is not None:
        titles.append("4 · softmax rows")
    figure = _side_by_side(titles, same_rows=True)
    figure.add_trace(_mask_trace(mask, names, show), row=1, col=1)
    for column, matrix in ((2, scores), (3, masked_scores)):
        figure.add_traces(_score_traces(matrix, names, show, "coloraxis"), rows=1, cols=column)
    layout = dict(coloraxis=_score_scale(scores, masked_scores))
    if weights is not None:
        figure.add_trace(_weights_trace(weights, names, show, "coloraxis2"), row=1, col=4)
        # the numbers are written in the cells; a second colour bar would sit on top of the first
        layout["coloraxis2"] = _weight_scale(show_scale=not show)
    figure.update_layout(**layout)
    for column in range(1, len(titles) + 1):
        _token_axes(figure, names, row=1, col=column)
    return _finish_side_by_side(figure, title, len(titles))


def weights_figure(
    weights,
    labels: Sequence[str],
    title: str = "",
    positions: Sequence[int] | None = None,
    show_values: bool | None = None,
) -> go.Figure:
    """Attention weights on the fixed 0–1 scale, so that figures can be compared by colour."""
    names = token_names(labels, positions)
    values = compact(weights)
    figure = go.Figure(_weights_trace(values, names, _show_text(values, show_values), "coloraxis"))
    figure.update_layout(coloraxis=_weight_scale())
    return _finish(figure, names, title)


def compare_figure(panels: Sequence[Panel], title: str = "", show_values: bool | None = None) -> go.Figure:
    """Several attention matrices side by side on one shared 0–1 colour scale."""
    figure = _side_by_side([panel.title for panel in panels])
    for column, panel in enumerate(panels, start=1):
        names = token_names(panel.labels, panel.positions)
        values = compact(panel.weights)
        show = _show_text(values, show_values, MAX_PANEL_CELLS_WITH_TEXT)
        figure.add_trace(_weights_trace(values, names, show, "coloraxis"), row=1, col=column)
        _token_axes(figure, names, row=1, col=column)
    figure.update_layout(coloraxis=_weight_scale())
    return _finish_side_by_side(figure, title, len(panels))


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
