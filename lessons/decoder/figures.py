"""Figures of the encoder-decoder lesson: each head's attention (square or rectangular), the alignment that
cross-attention learned, the next-token distribution of every generation step, and the masks of the three
families of transformer.

Rows are always the positions that read (queries), columns the positions read (keys), first position at the
top left. Each position is named "index token" (`matrix_figures.token_names`), so a repeated letter keeps its own
row and column, and every label is escaped for plotly.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from lessons.common.cell_numbers import (
    CELL_FONT,
    LABEL_ROOM,
    numbers_fit,
    record_numbers,
    widest_number,
    width_for_numbers,
)
from lessons.common.matrix_figures import (
    ALLOWED,
    COLOUR_BAR_ROW_PX,
    FORBIDDEN,
    MASK_COLOURS,
    MINUS_INFINITY,
    finish_panels,
    panel_axes,
    panel_grid,
    token_axes,
    token_names,
)
from lessons.common.plots import ATTENTION_SCALE, as_array, compact, style

MARK_COLOUR = "#E4572E"  # the app's orange: stands out on the purple attention scale
LEGEND_ROW_PX = 30  # under the panels' titles: the legend of the outlined cells


def _category_axes(figure: go.Figure, column: int, tilt: bool) -> None:
    figure.update_xaxes(type="category", side="top", tickangle=-45 if tilt else 0, row=1, col=column)
    figure.update_yaxes(type="category", autorange="reversed", row=1, col=column)


def _panel_gap(shared_rows: bool) -> float:
    """Between two panels, as a fraction of the width: panels that label their own rows need room for them."""
    return 0.04 if shared_rows else 0.1


def _panels(titles: Sequence[str], shared_rows: bool) -> go.Figure:
    figure = make_subplots(
        rows=1,
        cols=len(titles),
        subplot_titles=list(titles),
        shared_yaxes=shared_rows,
        horizontal_spacing=_panel_gap(shared_rows),
    )
    figure.update_annotations(y=0, yanchor="top", yshift=-6)  # titles under the panels: keys sit on top
    return figure


def _panel_height(rows: int) -> int:
    return int(min(620, max(300, 190 + 34 * rows)))


def heads_figure(
    weights,
    row_labels: Sequence[str],
    column_labels: Sequence[str],
    title: str = "",
    row_title: str = "query",
    column_title: str = "key",
    marks=None,
    mark_name: str = "largest weight in the row",
    framed_row: int | None = None,
) -> go.Figure:
    """One panel per head of (H, R, C) attention weights on one shared 0–1 colour scale, the rows labelled
    once, at the left. The numbers are written in the cells where a desktop has room for them.

    `marks` (H, R), optional: for each head and row, a column to outline (such as the source letter an output
    step reads most). Each panel's heatmap trace is named "head h"; the outlines are named `mark_name`.
    `framed_row`, optional: a row (counted from 0) framed across every panel, such as the step a question asks
    about.
    """
    values = compact(weights)  # (H, R, C)
    num_heads, num_rows, num_columns = values.shape
    rows, columns = token_names(row_labels), token_names(column_labels)
    needed = width_for_numbers(num_heads * num_columns, widest_number(values))
    show_text = numbers_fit(needed, None)
    figure, height = panel_grid([f"head {head}" for head in range(num_heads)], num_heads, num_rows)
    for head in range(num_heads):
        axes = panel_axes(head)
        figure.add_trace(
            go.Heatmap(
                z=values[head],
                x=columns,
                y=rows,
                name=f"head {head}",
                coloraxis="coloraxis",
                xgap=1,
                ygap=1,
                texttemplate="%{z:.2f}" if show_text else None,
                textfont=CELL_FONT,
                hovertemplate=(
                    f"head {head}<br>{row_title} %{{y}}<br>{column_title} %{{x}}<br>weight = %{{z:.4f}}<extra></extra>"
                ),
                **axes,
            )
        )
        if marks is not None:
            chosen = as_array(marks)[head].astype(int)
            figure.add_trace(
                go.Scatter(
                    x=[columns[index] for index in chosen],
                    y=rows,
                    mode="markers",
                    name=mark_name,
                    showlegend=head == 0,
                    hoverinfo="skip",
                    marker=dict(symbol="square-open", size=18, color=MARK_COLOUR, line=dict(width=3)),
                    **axes,
                )
            )
        if framed_row is not None:  # a category axis puts category i at coordinate i
            figure.add_shape(
                type="rect",
                x0=-0.5,
                x1=num_columns - 0.5,
                y0=framed_row - 0.5,
                y1=framed_row + 0.5,
                line=dict(color=MARK_COLOUR, width=2, dash="dot"),
                xref=axes["xaxis"],
                yref=axes["yaxis"],
            )
    token_axes(figure, columns)
    figure.update_layout(coloraxis=dict(colorscale=ATTENTION_SCALE, cmin=0.0, cmax=1.0, colorbar=dict(title="weight")))
    figure.update_layout(xaxis_title=column_title, yaxis_title=row_title)  # the first panel's axes
    if marks is not None:  # the legend under the panels' titles, above the colour bar
        height += LEGEND_ROW_PX
        figure.update_layout(
            legend=dict(orientation="h", x=0, y=COLOUR_BAR_ROW_PX / height, yref="container", yanchor="bottom"),
        )
    figure = finish_panels(figure, title, height, needed if show_text else None)
    if marks is not None:
        figure.update_layout(margin=dict(b=figure.layout.margin.b + LEGEND_ROW_PX))
    return figure


def distribution_figure(
    probabilities, step_labels: Sequence[str], vocabulary: Sequence[str], chosen: Sequence[int], title: str = ""
) -> go.Figure:
    """(T, V) next-token probabilities, one row per generation step, the chosen token of each step outlined."""
    values = compact(probabilities)
    rows, columns = token_names(step_labels), token_names(vocabulary)
    figure = go.Figure(
        [
            go.Heatmap(
                z=values,
                x=columns,
                y=rows,
                name="probability",
                colorscale=ATTENTION_SCALE,
                zmin=0.0,
                zmax=1.0,
                xgap=1,
                ygap=1,
                colorbar=dict(title="probability"),
                hovertemplate="step %{y}<br>next token %{x}<br>probability = %{z:.3g}<extra></extra>",
            ),
            go.Scatter(
                x=[columns[int(index)] for index in chosen],
                y=rows,
                mode="markers",
                name="written (greedy)",
                hoverinfo="skip",
                marker=dict(symbol="square-open", size=16, color=MARK_COLOUR, line=dict(width=2)),
            ),
        ]
    )
    figure.update_xaxes(type="category", side="top", tickangle=-60, title="next token")
    figure.update_yaxes(type="category", autorange="reversed", title="step: decoder's last input → written")
    figure.update_layout(legend=dict(orientation="h", x=0, y=-0.08))
    return style(figure, title, height=_panel_height(len(rows)) + 60)


def family_masks_figure(masks: Sequence, title: str = "") -> go.Figure:
    """Who may read whom in each family: one panel per `families.FamilyMask`, ✓ allowed, ✗ forbidden (colour
    says it too: the marks are written where the chart has room for them, as numbers are, `cell_numbers`).

    In the encoder-decoder panel, lines split the source positions from the target ones, so the three
    blocks (encoder self-attention, cross-attention, decoder self-attention) can be told apart.
    """
    # "encoder-<br>decoder": a name on one line is wider than its panel on a phone
    figure = _panels([pattern.family.replace("-", "-<br>") for pattern in masks], shared_rows=False)
    across = sum(len(pattern.column_labels) for pattern in masks)
    gaps = _panel_gap(shared_rows=False) * (len(masks) - 1)  # of the width, between the panels
    # ✓ and ✗ are no wider than −∞; the panels' short labels take half the usual room (there is no colour bar)
    marks_px = int(width_for_numbers(across, len(MINUS_INFINITY), reserved=LABEL_ROOM // 2) / (1 - gaps))
    for column, pattern in enumerate(masks, start=1):
        allowed = as_array(pattern.mask) > 0
        rows, columns = list(pattern.row_labels), list(pattern.column_labels)
        figure.add_trace(
            go.Heatmap(
                z=allowed.astype(np.int8),
                x=columns,
                y=rows,
                name=pattern.family,
                colorscale=MASK_COLOURS,
                zmin=0,
                zmax=1,
                showscale=False,
                xgap=2,
                ygap=2,
                text=np.where(allowed, ALLOWED, FORBIDDEN).tolist(),
                texttemplate="%{text}",
                textfont=dict(CELL_FONT, color="white"),
                hovertemplate="%{y} reads %{x}: %{text}<extra></extra>",
            ),
            row=1,
            col=column,
        )
        _category_axes(figure, column, tilt=False)
        if pattern.source_length:
            edge = pattern.source_length - 0.5  # between the last source and the first target position
            line = dict(color=MARK_COLOUR, width=2, dash="dot")
            figure.add_vline(x=edge, line=line, row=1, col=column)
            figure.add_hline(y=edge, line=line, row=1, col=column)
    record_numbers(figure, marks_px)
    return style(figure, title, height=360).update_layout(margin=dict(b=60))
