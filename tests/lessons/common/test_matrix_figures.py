"""`panel_grid` lays out the grid plotly's `make_subplots` lays out, to the last digit, without its cost."""

from __future__ import annotations

import pytest
from plotly.subplots import make_subplots

from lessons.common.matrix_figures import (
    PANEL_GAP,
    PANEL_GAP_TURNED,
    TITLE_GAP_PX,
    axis_suffix,
    panel_axes,
    panel_grid,
    panelmatrix_height,
    turned_labels,
)


def grid_by_make_subplots(titles, columns, rows_per_panel, column_widths=None):
    """The grid as `panel_grid` built it with make_subplots before: shared axes, keys labelled on top of a grid
    of several rows, each panel's title under it."""
    rows = -(-len(titles) // columns)
    plots = rows * panelmatrix_height(rows_per_panel, columns) + (rows - 1) * TITLE_GAP_PX
    figure = make_subplots(
        rows=rows,
        cols=columns,
        subplot_titles=list(titles),
        shared_yaxes=True,
        shared_xaxes=rows > 1,
        horizontal_spacing=PANEL_GAP_TURNED if turned_labels(rows_per_panel) else PANEL_GAP,
        vertical_spacing=TITLE_GAP_PX / plots if rows > 1 else 0.0,
        column_widths=list(column_widths) if column_widths else None,
    )
    if rows > 1:
        figure.update_xaxes(showticklabels=False)
        figure.update_xaxes(showticklabels=True, row=1)
    for index, annotation in enumerate(figure.layout.annotations):
        panel = figure.get_subplot(index // columns + 1, index % columns + 1)
        annotation.update(y=panel.yaxis.domain[0], yanchor="top", yshift=-4)
    return figure


GRIDS = [
    (["one"], 1, 5, None),
    (["a", "b", "c"], 3, 30, None),  # key labels turned: wider gaps
    (["a", "b", "c", "d"], 2, 7, None),  # the masking steps' 2 × 2
    ([f"layer {layer} · head {head}" for layer in range(2) for head in range(2)], 2, 12, None),
    ([f"head {head}" for head in range(12)], 4, 9, None),
    ([f"layer {layer} · head {head}" for layer in range(6) for head in range(12)], 12, 10, None),  # a whole stack
    ([f"layer {layer}" for layer in range(8)], 1, 5, None),  # 8 rows: 7 heights summed differ from 7 × a height
    (["a", "b", "c", "d", "e"], 4, 6, None),  # a last row with empty cells
    (["plain", "padded"], 2, 9, [7, 9]),  # panels as wide as their keys
    (["x", "y", "z"], 3, 40, [40, 3, 17]),
]


@pytest.mark.parametrize(("titles", "columns", "rows_per_panel", "column_widths"), GRIDS)
def test_the_grid_is_the_one_make_subplots_lays_out_to_the_last_digit(titles, columns, rows_per_panel, column_widths):
    figure, height = panel_grid(titles, columns, rows_per_panel, column_widths)
    reference = grid_by_make_subplots(titles, columns, rows_per_panel, column_widths)
    assert figure.to_plotly_json() == reference.to_plotly_json()
    rows = -(-len(titles) // columns)
    assert height == rows * panelmatrix_height(rows_per_panel, columns) + (rows - 1) * TITLE_GAP_PX + 150


def test_a_trace_lands_on_the_panel_its_axes_name_row_by_row_from_the_top_left():
    figure, _ = panel_grid(["a", "b", "c", "d", "e", "f"], 3, 4)
    assert [panel_axes(panel) for panel in (0, 1, 5)] == [
        {"xaxis": "x", "yaxis": "y"},
        {"xaxis": "x2", "yaxis": "y2"},
        {"xaxis": "x6", "yaxis": "y6"},
    ]
    reference = grid_by_make_subplots(["a", "b", "c", "d", "e", "f"], 3, 4)
    for panel in range(6):
        row, column = divmod(panel, 3)
        drawn_there = reference.get_subplot(row + 1, column + 1)
        axes = figure.layout[f"xaxis{axis_suffix(panel)}"], figure.layout[f"yaxis{axis_suffix(panel)}"]
        assert (axes[0].domain, axes[1].domain) == (drawn_there.xaxis.domain, drawn_there.yaxis.domain)


def test_an_empty_title_leaves_its_panel_untitled_and_the_others_under_their_own_panels():
    figure, _ = panel_grid(["a", "", "c"], 3, 4)
    assert [annotation.text for annotation in figure.layout.annotations] == ["a", "c"]
    third = figure.layout.xaxis3.domain
    assert figure.layout.annotations[1].x == pytest.approx((third[0] + third[1]) / 2)
