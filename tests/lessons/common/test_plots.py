"""Room for tick labels, given before plotly draws: upper bounds of label widths and the margins built on them.
(tests/browser/test_room_for_labels.py checks the bounds against what Chromium draws.)"""

from __future__ import annotations

import plotly.graph_objects as go
import plotly.io as pio

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


def test_tick_labels_that_do_not_fit_level_read_upwards_in_every_figure_never_turned_by_30_degrees(monkeypatch):
    """Found so (2026-11-30): plotly's default 30° stood neighbouring labels on each other on a projector."""
    from plotly.subplots import make_subplots

    # The app's template, the default once the app's figures are imported: in the server Streamlit is imported
    # first, but a test may import Streamlit's plotly element afterwards, which makes its own the default.
    monkeypatch.setattr(pio.templates, "default", "anatomy")
    for figure in (go.Figure(go.Heatmap(z=[[0, 1]])), make_subplots(rows=1, cols=2)):
        assert tuple(figure.layout.template.layout.xaxis.autotickangles) == (0, -90)


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


# --- Titles on a phone ---------------------------------------------------------------------------------------


def test_a_long_title_is_broken_between_phrases_its_heading_first_and_its_details_under_it():
    assert plots.title_lines("Decoder masked self-attention (T × T, causal)") == [
        "Decoder masked self-attention",
        "(T × T, causal)",
    ]
    assert plots.title_lines("Token vectors: row id of the token table, first 64 dimensions") == [
        "Token vectors",
        "row id of the token table, first 64 dimensions",
    ]
    assert plots.title_lines(
        "Teacher forcing: each model's loss on the true next token (log scale; lower is surer)"
    ) == [
        "Teacher forcing",
        "each model's loss on the true next token",
        "(log scale; lower is surer)",
    ]


def test_a_title_that_fits_a_phone_stays_on_one_line():
    assert plots.title_lines("Layer 0: every head") == ["Layer 0: every head"]
    assert plots.title_lines("cosine similarity of each token with itself") == [
        "cosine similarity of each token with itself"
    ]


def test_a_list_is_broken_between_its_items_and_never_inside_brackets():
    lines = plots.title_lines("The weights of query 3 over every key, the largest outlined (a, b, c)")
    assert lines == ["The weights of query 3 over every key", "the largest outlined (a, b, c)"]


def test_only_a_phrase_too_long_for_a_line_is_broken_between_words():
    lines = plots.title_lines("a phrase of many words that goes on and on without any other break in it at all")
    assert len(lines) == 2 and all(map(plots.fits_subtitle, lines)) and plots.fits_title(lines[0])
    assert " ".join(lines) == "a phrase of many words that goes on and on without any other break in it at all"
    assert plots.title_lines("x" * 90) == ["x" * 90]  # one word: drawn as it is


def test_lines_the_caller_broke_stay_apart_and_a_figure_grows_only_by_the_lines_added():
    assert plots.title_lines("Bets before step 1<br>loss 3.2") == ["Bets before step 1", "loss 3.2"]
    short, broken = plots.base_layout("A title<br>a detail", 400), plots.base_layout("Token vectors: row id", 400)
    long = plots.base_layout("Token vectors: row id of the token table, first 64 dimensions", 400)
    assert short["height"] == 400 and broken["height"] == 400
    assert long["title"]["text"] == "Token vectors"
    assert long["title"]["subtitle"]["text"] == "row id of the token table, first 64 dimensions"
    assert long["height"] == 400 + plots.SUBTITLE_LINE_PX
