"""Numbers written in a chart's cells are readable or not drawn: at 12 px, on rows tall enough for them, and only
where the chart is wide enough, which the figure records for the page (`charts.show` hides them on narrower
screens). tests/browser/test_layout.py measures every view's cells in Chromium."""

from __future__ import annotations

import numpy as np

from lessons.common import cell_numbers, plots
from lessons.common.cell_numbers import CELL_FONT_SIZE, DESKTOP_CHART, NUMBERS_FROM_PX

PHONE_CHART = 358  # px: a chart's width on a phone (390 px window)
BELOW = dict(orientation="h", y=0, yanchor="bottom")  # a colour bar laid across under the chart


def matrix(rows: int, columns: int, value: float = 0.5) -> np.ndarray:
    return np.full((rows, columns), value)


def numbers_from(figure) -> int | None:
    return (figure.layout.meta or {}).get(NUMBERS_FROM_PX)


def heatmap(values: np.ndarray, **options):
    rows, columns = values.shape
    labels = dict(row_labels=[f"layer {row}" for row in range(rows)], column_labels=[str(c) for c in range(columns)])
    return plots.heatmap(values, **labels, **options)


def test_a_wider_number_and_more_columns_need_a_wider_chart():
    assert cell_numbers.width_for_numbers(6, 4) < cell_numbers.width_for_numbers(6, 6)
    assert cell_numbers.width_for_numbers(6, 4) < cell_numbers.width_for_numbers(12, 4)
    # 12 cells of "0.50" at 12 px: 12 × (4 × 0.56 × 12 + 8) = 418 px besides the labels
    assert cell_numbers.width_for_numbers(12, 4, reserved=0) == 418


def test_the_widest_number_is_counted_as_the_cells_write_it_and_infinities_are_left_out():
    assert cell_numbers.widest_number(np.array([0.5, -12.25, -np.inf])) == len("-12.25")
    assert cell_numbers.widest_number(np.array([0.97]), number_format=".4f") == len("0.9700")
    assert cell_numbers.widest_number(np.array([np.inf])) == 1


def test_numbers_asked_for_are_written_at_12_px_and_the_figure_says_how_wide_a_chart_must_be_for_them():
    figure = heatmap(matrix(6, 12), show_values=True, value_format=".2f")
    trace = figure.data[0]
    assert trace.texttemplate == "%{z:.2f}" and trace.textfont.size == CELL_FONT_SIZE
    assert PHONE_CHART < numbers_from(figure) < DESKTOP_CHART  # a phone hides them, a desktop shows them


def test_a_heatmap_without_numbers_records_no_width():
    figure = heatmap(matrix(6, 12), show_values=False)
    assert figure.data[0].texttemplate is None and numbers_from(figure) is None


def test_by_default_numbers_are_written_only_where_a_desktop_has_room_for_them():
    assert heatmap(matrix(6, 12), show_values=None, value_format=".2f").data[0].texttemplate
    too_many_columns = heatmap(matrix(6, 40), show_values=None, value_format=".2f")
    assert too_many_columns.data[0].texttemplate is None and numbers_from(too_many_columns) is None


def test_a_colour_bar_under_the_chart_leaves_the_cells_more_of_its_width():
    beside = heatmap(matrix(6, 12), show_values=True)
    below = heatmap(matrix(6, 12), show_values=True, colorbar=BELOW)
    assert numbers_from(below) == numbers_from(beside) - plots.COLOUR_BAR_BESIDE_PX
    assert below.data[0].colorbar.orientation == "h"


def test_longer_row_labels_leave_the_cells_less_of_the_width():
    short = plots.heatmap(matrix(2, 3), ["a", "b"], ["x", "y", "z"], show_values=True)
    long = plots.heatmap(matrix(2, 3), ["a", "a much longer label"], ["x", "y", "z"], show_values=True)
    assert numbers_from(long) > numbers_from(short)


def test_rows_too_low_for_a_number_get_none_even_when_asked():
    # plotly's default 450 px hold 6 rows of numbers, not 24 (the 150 px of title, labels and colour bar apart)
    assert heatmap(matrix(6, 4), show_values=True).data[0].texttemplate
    assert heatmap(matrix(24, 4), show_values=True).data[0].texttemplate is None
    assert heatmap(matrix(24, 4), show_values=True, height=cell_numbers.height_for_numbers(24)).data[0].texttemplate


def test_in_presentation_style_larger_numbers_need_a_wider_chart():
    figure = heatmap(matrix(6, 12), show_values=True)
    larger = plots.with_larger_text(figure, 1.35)
    assert larger.data[0].textfont.size == round(CELL_FONT_SIZE * 1.35)
    assert numbers_from(larger) == round(numbers_from(figure) * 1.35)
    assert numbers_from(figure) < numbers_from(larger)  # the figure itself, perhaps cached, is left as it was


def test_recording_the_width_keeps_what_else_the_meta_holds():
    figure = heatmap(matrix(6, 12), show_values=False)
    figure.update_layout(meta={"lesson": "multihead"})
    cell_numbers.record_numbers(figure, 500)
    assert figure.layout.meta == {"lesson": "multihead", NUMBERS_FROM_PX: 500}
