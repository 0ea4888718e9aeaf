"""Room for tick labels, given before plotly draws: upper bounds of label widths and the margins built on them.
(tests/browser/test_room_for_labels.py checks the bounds against what Chromium draws.)"""

from __future__ import annotations

import plotly.graph_objects as go

from lessons.common import plots


def test_every_printable_ascii_character_has_a_bound_of_its_own():
    missing = [chr(code) for code in range(32, 127) if chr(code) not in plots._EM_OF]
    assert missing == []


def test_a_label_is_measured_as_plotly_shows_it_entities_as_the_characters_they_stand_for():
    assert plots.label_width_px("&lt;b&gt;") == plots.label_width_px("<b>")
    assert plots.label_width_px("a&amp;b") == plots.label_width_px("a&b")


def test_wider_characters_and_more_of_them_make_a_wider_label():
    assert plots.label_width_px("iiii") < plots.label_width_px("nnnn") < plots.label_width_px("mmmm")
    assert plots.label_width_px("the") < plots.label_width_px("the cat")
    assert plots.label_width_px("x", font_px=26) == 2 * plots.label_width_px("x", font_px=13)


def test_characters_from_beyond_latin_greek_and_cyrillic_get_the_widest_bound():
    assert plots.label_width_px("日") == plots.label_width_px("😀") > plots.label_width_px("ж") > 0


def titled(title: str = "A one-line title") -> go.Figure:
    return plots.style(go.Figure(go.Heatmap(z=[[0, 1], [1, 0]])), title)


def test_the_margins_hold_the_widest_row_label_at_the_left_and_column_label_on_top_under_the_title():
    figure = titled()
    rows, columns = ["0 a", "1 a much longer row"], ["0 key", "1 an even longer key label"]
    plots.make_room_for_labels(figure, rows, columns)
    widest_row = plots.label_width_px("1 a much longer row")
    widest_column = plots.label_width_px("1 an even longer key label")
    assert figure.layout.margin.l >= widest_row + plots.LEFT_LABEL_REACH_PX
    assert figure.layout.margin.t >= widest_column + plots.TOP_TURNED_LABEL_REACH_PX + plots.ONE_LINE_TITLE_PX
    assert figure.layout.margin.l < widest_row + plots.LEFT_LABEL_REACH_PX + 2  # and no more than that


def test_a_figure_without_a_title_keeps_no_room_for_one():
    with_title, without = titled(), titled("")
    for figure in (with_title, without):
        plots.make_room_for_labels(figure, ["row"], ["column"])
    assert with_title.layout.margin.t - without.layout.margin.t == plots.ONE_LINE_TITLE_PX


def test_a_title_of_several_lines_leaves_the_margins_to_plotly():
    figure = titled("A title<br>over two lines")  # the second line becomes plotly's subtitle
    before = figure.layout.margin.to_plotly_json()
    plots.make_room_for_labels(figure, ["row"], ["column"])
    assert figure.layout.margin.to_plotly_json() == before


def test_margins_already_wider_than_the_labels_need_are_kept():
    figure = titled().update_layout(margin=dict(l=400, t=300))
    plots.make_room_for_labels(figure, ["row"], ["column"])
    assert (figure.layout.margin.l, figure.layout.margin.t) == (400, 300)
