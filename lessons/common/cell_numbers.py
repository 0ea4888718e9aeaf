"""Numbers (and ✓, ✗, −∞) written in a chart's cells: readable, or not drawn at all.

They are written at CELL_FONT_SIZE, never smaller. A figure is built once, before anyone knows how wide it will be
drawn (820 px on a desktop, 520 px zoomed to 150 %, 358 px on a phone), so its builder writes the numbers when a
desktop has room for them and records in the layout's meta how wide the chart must be to hold them
(`record_numbers`); `charts.show` hides them on narrower screens, where the hover and the tables beside the chart
still give every value. A row must also be tall enough for its numbers, and a figure's height is known when it is
built: where the rows are too low, the numbers are not written at all (`rows_fit`). `plots.heatmap` follows the rule,
and `plots.cell_numbers_px` measures it for the heatmaps built elsewhere.

Two figures write text of another kind and keep rules of their own: the tokenization lesson's strip, one letter a
cell (`tokenization.figures.LINE_WIDTH`: 32 a line, so that a phone holds them), and the masking lesson's next-token
grid, one ✓ a row (no neighbour to stand on). The layout check measures all of them in Chromium
(`harness/layout_problems.js`).
"""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

CELL_FONT_SIZE = 12  # px: a number written in a cell is never smaller (readable without zooming)
CELL_FONT = dict(size=CELL_FONT_SIZE)
DIGIT_WIDTH = 0.56  # of the font size: one character of "0.97" or "−1.25" in the app's sans-serif
CELL_PADDING = 8  # px a cell keeps free around its number
LABEL_ROOM = 140  # px of a chart's width that row labels and a colour bar take
DESKTOP_CHART = 820  # px: a chart's width on a desktop (1280 px window, Streamlit's centred column)
NUMBERS_FROM_PX = "numbers_from_px"  # layout.meta key: the narrowest chart whose cells hold their numbers
ROW_FOR_NUMBERS_PX = CELL_FONT_SIZE + CELL_PADDING // 2  # the lowest row a number is written in
# Of a chart's height, what its title, the labels on top and a colour bar underneath take from the rows.
FRAME_ROOM_PX = 150
PLOTLY_HEIGHT_PX = 450  # the height plotly gives a figure that sets none


def width_for_numbers(columns_across: int, characters: int, reserved: int = LABEL_ROOM) -> int:
    """The narrowest chart (px) whose cells hold a number of `characters` characters at CELL_FONT_SIZE, for a
    chart `columns_across` cells wide (all its panels together) that keeps `reserved` px for labels."""
    cell = characters * DIGIT_WIDTH * CELL_FONT_SIZE + CELL_PADDING
    return int(reserved + columns_across * cell)


def height_for_numbers(rows: int) -> int:
    """The lowest chart (px) whose `rows` rows are each tall enough for a number (ROW_FOR_NUMBERS_PX)."""
    return FRAME_ROOM_PX + rows * ROW_FOR_NUMBERS_PX


def rows_fit(rows: int, height: int | None) -> bool:
    """Whether a chart `height` px high (None: plotly's default) has rows tall enough for numbers."""
    return height_for_numbers(rows) <= (height or PLOTLY_HEIGHT_PX)


def numbers_fit(needed_px: int, show_values: bool | None) -> bool:
    """Write the numbers when asked to, or by default when a desktop has room for them."""
    return needed_px <= DESKTOP_CHART if show_values is None else show_values


def record_numbers(figure: go.Figure, needed_px: int | None) -> None:
    """Tell the page how wide the chart must be for the numbers written in its cells (what else the layout's meta
    holds is kept); None: it writes none, and nothing is recorded."""
    if needed_px is not None:
        figure.update_layout(meta={**(figure.layout.meta or {}), NUMBERS_FROM_PX: needed_px})


def widest_number(*matrices: np.ndarray, number_format: str = ".2f") -> int:
    """Characters of the widest finite value of the matrices as the cells write it ("−0.54": 5)."""
    finite = [values[np.isfinite(values)] for values in map(np.asarray, matrices)]
    return max((len(format(float(value), number_format)) for values in finite for value in values), default=1)
