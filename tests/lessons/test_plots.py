"""The common look of every chart (lessons/common/plots.py)."""

from __future__ import annotations

import plotly.graph_objects as go

from lessons.common.plots import style


def test_a_title_of_one_line_stands_alone_and_pushes_the_top_margin_itself():
    figure = style(go.Figure(), "Attention weights", height=300)
    assert figure.layout.title.text == "Attention weights"
    assert figure.layout.title.subtitle.text is None
    assert figure.layout.title.automargin and figure.layout.title.yref == "container"


def test_the_lines_after_a_titles_first_go_to_the_subtitle_where_none_is_lifted_off_the_chart():
    figure = style(go.Figure(), "Cross-attention (T × S):<br>each step's row<br>over the source letters")
    assert figure.layout.title.text == "Cross-attention (T × S):"
    assert figure.layout.title.subtitle.text == "each step's row<br>over the source letters"


def test_no_title_leaves_room_above_the_plot_all_the_same():
    figure = style(go.Figure())
    assert figure.layout.title.text is None
    assert figure.layout.margin.t == 30
