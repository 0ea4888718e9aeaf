"""Numbers written in a chart's cells are hidden wherever the chart is narrower than its figure says they need
(`cell_numbers`): `charts.show` adds a style for the chart's box, found by the chart's key, so a chart that writes
numbers cannot be shown without one. tests/browser/test_layout.py measures the result in Chromium."""

from __future__ import annotations

import plotly.graph_objects as go
import pytest

from harness.apptest import chart, open_page, page_from_function
from harness.views import VIEWS
from lessons.common.cell_numbers import NUMBERS_FROM_PX
from lessons.common.ui import charts


def style_sheets(app) -> list[str]:
    return [element.proto.body for element in app.get("html") if element.proto.body.startswith("<style>")]


def chart_writing_numbers(key: str | None, present: bool) -> None:
    import plotly.graph_objects as go
    import streamlit as st

    from lessons.common.cell_numbers import record_numbers
    from lessons.common.ui import charts, presentation

    st.session_state[presentation.KEY] = present
    figure = go.Figure(go.Heatmap(z=[[0.5, 0.25]], texttemplate="%{z:.2f}"))
    record_numbers(figure, 500)  # its cells hold their numbers in a chart 500 px wide or wider
    charts.show(figure, key)


def test_a_chart_that_writes_numbers_in_its_cells_is_refused_without_a_key():
    figure = go.Figure(go.Heatmap(z=[[0.5]], texttemplate="%{z:.2f}"), layout=dict(meta={NUMBERS_FROM_PX: 500}))
    with pytest.raises(ValueError, match="writes numbers in its cells: show it with a key"):
        charts.show(figure)


def test_its_numbers_are_hidden_in_any_narrower_chart():
    app = page_from_function(chart_writing_numbers, "numbers", False).run()
    assert not app.exception
    (sheet,) = style_sheets(app)
    assert ".st-key-numbers { container-type: inline-size; }" in sheet
    assert "@container (max-width: 499px) { .st-key-numbers .heatmaplayer text { display: none; } }" in sheet


def test_in_presentation_style_the_larger_numbers_need_a_chart_as_much_wider():
    app = page_from_function(chart_writing_numbers, "numbers", True).run()
    assert not app.exception
    assert "@container (max-width: 674px)" in style_sheets(app)[0]  # 500 × 1.35 = 675


def test_the_head_statistics_map_writes_its_numbers_where_a_desktop_has_room_and_hides_them_on_a_phone():
    view = VIEWS["multihead/Head statistics"]
    app = open_page(f"lesson_pages/{view.path}.py", query=view.query)
    assert not app.exception
    figure = chart(app, "mh_statistics_chart")
    needed = figure["layout"]["meta"][NUMBERS_FROM_PX]
    assert figure["data"][0]["texttemplate"] == "%{z:.2f}"
    assert 358 < needed <= 820  # a phone's chart is 358 px wide, a desktop's 820
    assert any(
        f"@container (max-width: {needed - 1}px) {{ .st-key-mh_statistics_chart" in sheet for sheet in style_sheets(app)
    )
