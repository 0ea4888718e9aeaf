"""Attention matrices over tokens, as every lesson with a causal mask draws them: rows are the queries, columns
the keys, first token at the top left; one or several panels over the same tokens; weights on a fixed 0–1 scale.

Every matrix here is self-attention or reads one list of tokens, so rows and columns share one list of names.
Each token is named as everywhere in the app, by `labels.token_labels` ("3: flies"), escaped here for plotly
(`token_names`): a repeated word keeps its own row, and the name doubles as the hover text, so no per-cell label
array has to be sent.

Numbers are written in the cells at CELL_FONT_SIZE or not at all (`cell_numbers`): where a desktop has room for
them, and hidden on narrower screens, where the hover and the tables still give every value.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go

from lessons.common.cell_numbers import CELL_FONT, numbers_fit, record_numbers, widest_number, width_for_numbers
from lessons.common.labels import token_labels
from lessons.common.plots import (
    ATTENTION_SCALE,
    as_array,
    cell_frame,
    compact,
    make_room_for_labels,
    safe_label,
    style,
)

MINUS_INFINITY = "−∞"
ALLOWED, FORBIDDEN = "✓", "✗"
FORBIDDEN_COLOUR = "#b8b8c0"  # neutral grey: "no score here", distinct from every value colour
ALLOWED_COLOUR = "#6a51a3"  # the purple of the attention scale
MARK_COLOUR = "#e6550d"  # the frame around the cell an exercise's answer points to
MASK_COLOURS = [[0.0, FORBIDDEN_COLOUR], [0.5, FORBIDDEN_COLOUR], [0.5, ALLOWED_COLOUR], [1.0, ALLOWED_COLOUR]]
# Keys up to which their labels may stand upright. Past it they read upwards on any screen (a 48-token window
# would need some 2,000 px a panel upright), so they are turned from the start.
UPRIGHT_KEYS = 24


def turned_labels(keys: int) -> bool:
    """Whether a matrix of this many keys reads its key labels upwards from the start (see UPRIGHT_KEYS)."""
    return keys > UPRIGHT_KEYS


def token_names(tokens: Sequence[str], positions: Sequence[int] | None = None) -> list[str]:
    """Each token named as everywhere in the app ("3: flies", `labels.token_labels`), escaped for plotly:
    unique even when a word repeats."""
    return [safe_label(label) for label in token_labels(tokens, positions)]


def token_axes(figure: go.Figure, names: list[str], row: int | None = None, col: int | None = None) -> None:
    """Keys (the tokens attended to) across the top, queries (the tokens attending) down the side, first
    token at the top left, as matrices are written on paper. Key labels stand upright where they fit and turn
    to read upwards where they do not (plotly chooses by the width it is drawn at, and leaves out every other
    label only where even upright ones would overlap: on a phone). Past UPRIGHT_KEYS keys they always read
    upwards, and the margins are made to hold them before plotly draws (`finish_token_axes`)."""
    where = dict(row=row, col=col) if row is not None else {}
    angles = dict(tickangle=-90) if turned_labels(len(names)) else {}  # else level or upright: the template's rule
    figure.update_xaxes(type="category", side="top", automargin=True, **angles, **where)
    figure.update_yaxes(type="category", autorange="reversed", automargin=True, **where)


def finish_token_axes(figure: go.Figure, names: list[str]) -> go.Figure:
    """Once the figure has its title and margins: room for labels that `token_axes` turned upwards."""
    if turned_labels(len(names)):
        make_room_for_labels(figure, names, names)
    return figure


def matrix_height(rows: int) -> int:
    """Tall enough for one readable label per row, within one screen."""
    return int(min(720, max(300, 160 + 14 * rows)))


def finish_matrix(figure: go.Figure, names: list[str], title: str) -> go.Figure:
    token_axes(figure, names)
    return finish_token_axes(style(figure, title, height=matrix_height(len(names))), names)


def mask_trace(mask, names: list[str], show: bool) -> go.Heatmap:
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
        textfont=dict(CELL_FONT, color="white"),
        hovertemplate="query %{y}<br>key %{x}<br>%{z} (1 = may attend, 0 = forbidden)<extra></extra>",
    )


def weights_trace(weights, names: list[str], show: bool, coloraxis: str) -> go.Heatmap:
    return go.Heatmap(
        z=compact(weights),
        x=names,
        y=names,
        name="weight",
        coloraxis=coloraxis,
        xgap=1,
        ygap=1,
        texttemplate="%{z:.2f}" if show else None,
        textfont=CELL_FONT,
        hovertemplate="query %{y}<br>key %{x}<br>weight = %{z:.4g}<extra></extra>",
    )


def weight_scale(show_scale: bool = True) -> dict:
    return dict(colorscale=ATTENTION_SCALE, cmin=0.0, cmax=1.0, showscale=show_scale, colorbar=dict(title="weight"))


TITLE_GAP_PX = 56  # between two rows of panels: the upper panels' titles go there
# A row of panels keeps its whole width for the panels: its colour bar lies under them, at the right.
COLOUR_BAR_ROW_PX = 50
PANEL_TITLES_PX = 40  # under a row of panels, for their titles
# Between two panels, as a fraction of the width: labels turned upwards stand a line's height wide, so the last
# key of one panel and the first of the next need some 16 px between them, which a phone gives at 0.06.
PANEL_GAP, PANEL_GAP_TURNED = 0.03, 0.06
COLOUR_BAR_UNDER = dict(
    orientation="h",
    x=1,
    xanchor="right",
    len=180,
    lenmode="pixels",
    thickness=12,
    y=0,
    yref="container",
    yanchor="bottom",
    ypad=6,
    title=dict(side="right"),
)


def panelmatrix_height(rows: int, columns: int) -> int:
    """A panel's height (px): about one readable label per row, about square on a desktop."""
    return int(min(max(30 * rows, 560 / columns), 700 / columns))


def axis_suffix(panel: int) -> str:
    """Plotly names the first panel's axes "x" and "y" and the next ones "x2", "y2", …: `panel` counted from 0."""
    return "" if panel == 0 else str(panel + 1)


def panel_axes(panel: int) -> dict[str, str]:
    """The axes of panel `panel` of a `panel_grid` (counted from 0, row by row from the top left), for a trace."""
    suffix = axis_suffix(panel)
    return dict(xaxis=f"x{suffix}", yaxis=f"y{suffix}")


def panel_grid(
    titles: Sequence[str], columns: int, rows_per_panel: int, column_widths: Sequence[float] | None = None
) -> tuple[go.Figure, int]:
    """Panels over the same queries, `columns` to a row, and the figure's height (px). The query labels are
    drawn once per row of panels, at the left; on a grid of several rows, whose panels also share their keys,
    the key labels once per column, on top. Each panel's title goes underneath it (the keys are on top).
    A trace goes into a panel by its axes (`panel_axes`).

    The grid is the one plotly's `make_subplots` lays out (shared axes, spacing, column widths, its arithmetic
    to the last digit: tests/lessons/common/test_matrix_figures.py holds them equal), written as one layout:
    make_subplots took 46 ms for a grid of 12 panels, this 6 ms, and a page pays it for every new text."""
    rows = -(-len(titles) // columns)
    plots = rows * panelmatrix_height(rows_per_panel, columns) + (rows - 1) * TITLE_GAP_PX
    across = PANEL_GAP_TURNED if turned_labels(rows_per_panel) else PANEL_GAP  # between columns, of the width
    down = TITLE_GAP_PX / plots if rows > 1 else 0.0  # between rows, of the height
    if column_widths:
        widths = [(1.0 - across * (columns - 1)) * (width / float(sum(column_widths))) for width in column_widths]
    else:
        widths = [(1.0 - across * (columns - 1)) / columns] * columns
    height = (1.0 - down * (rows - 1)) / rows
    layout: dict[str, object] = {}
    domains: list[tuple[list[float], list[float]]] = []  # (x, y) of each panel, in reading order
    for panel in range(rows * columns):  # every cell of the grid gets its axes, as make_subplots gives them
        row, column = divmod(panel, columns)  # row 0 at the top
        left = sum(widths[:column]) + column * across
        below = rows - 1 - row  # rows of panels under this one
        bottom = sum([height] * below) + below * down  # summed as plotly sums it, to the same last digit
        top = min(bottom + height, 1.0)
        suffix = axis_suffix(panel)
        domains.append(([left, left + widths[column]], [max(bottom, 0.0), top]))
        x_axis: dict[str, object] = dict(anchor=f"y{suffix}", domain=domains[-1][0])
        y_axis: dict[str, object] = dict(anchor=f"x{suffix}", domain=domains[-1][1])
        if column > 0:  # the queries: one axis per row of panels, labelled at the left
            y_axis.update(matches=f"y{axis_suffix(row * columns)}", showticklabels=False)
        if rows > 1:  # the keys: one axis per column of panels, labelled on top
            x_axis["showticklabels"] = row == 0
            if row < rows - 1:
                x_axis["matches"] = f"x{axis_suffix((rows - 1) * columns + column)}"
        layout[f"xaxis{suffix}"], layout[f"yaxis{suffix}"] = x_axis, y_axis
    layout["annotations"] = [
        dict(
            text=title,
            font=dict(size=16),
            showarrow=False,
            x=sum(domains[panel][0]) / 2.0,
            xanchor="center",
            xref="paper",
            y=domains[panel][1][0],  # the panel's foot
            yanchor="top",
            yref="paper",
            yshift=-4,
        )
        for panel, title in enumerate(titles)
        if title
    ]
    # Above: the key labels (up to ~90 px upright) and the figure's title; below: the last panels' titles.
    return go.Figure(layout=layout), plots + 150


def finish_panels(
    figure: go.Figure, title: str, height: int, needed_px: int | None, titles_under: bool = True
) -> go.Figure:
    """The app's look, the colour bar under the panels, and room under them for the panels' titles (unless the
    figure has none: a single matrix)."""
    record_numbers(figure, needed_px)
    figure.update_coloraxes(colorbar=COLOUR_BAR_UNDER)
    under = (PANEL_TITLES_PX if titles_under else 0) + COLOUR_BAR_ROW_PX
    return style(figure, title, height=height + COLOUR_BAR_ROW_PX).update_layout(margin=dict(b=10 + under))


def weights_figure(
    weights,
    labels: Sequence[str],
    title: str = "",
    positions: Sequence[int] | None = None,
    show_values: bool | None = None,
    marked: tuple[int, int] | None = None,
) -> go.Figure:
    """Attention weights on the fixed 0–1 scale, so that figures can be compared by colour. The cell
    `marked` (row, column, counted within `weights`), when given, is framed: an exercise's answer."""
    names = token_names(labels, positions)
    values = compact(weights)
    needed = width_for_numbers(len(names), widest_number(values))
    show = numbers_fit(needed, show_values)
    figure = go.Figure(weights_trace(values, names, show, "coloraxis"))
    figure.update_layout(coloraxis=weight_scale())
    if marked is not None:
        figure.add_shape(cell_frame(*marked, MARK_COLOUR, width=4))
    token_axes(figure, names)
    # The colour bar under the matrix, as under a row of panels: the matrix keeps the whole width.
    finish_panels(figure, title, matrix_height(len(names)), needed if show else None, titles_under=False)
    return finish_token_axes(figure, names)
