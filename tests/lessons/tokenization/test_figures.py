"""Figures of the tokenization lesson, as pure functions: which cell gets which colour, what labels say."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from lessons.common import plots
from lessons.tokenization.figures import CELL_KINDS, embedding_rows, highlight_rows, token_highlight

NO_TOKEN, WORD, WORD_NEXT, PIECE, PIECE_NEXT, UNKNOWN = range(6)  # the colour codes of CELL_KINDS


def codes(figure) -> list[list[float | None]]:
    """The colour code of every cell, None where no character is drawn."""
    return [[None if math.isnan(value) else int(value) for value in row] for row in figure.data[0].z]


def test_each_character_takes_the_colour_of_its_token_and_spaces_take_none():
    # "ab cd" as the tokens "ab", "c", "##d"
    figure = token_highlight(
        ["ab cd"], ["ab", "c", "##d"], [(0, 0, 2), (0, 3, 4), (0, 4, 5)], ["word", "word", "continuation"], line_width=8
    )
    assert codes(figure) == [[WORD, WORD, NO_TOKEN, WORD_NEXT, PIECE, None, None, None]]
    assert list(figure.data[0].text[0][:5]) == ["a", "b", "·", "c", "d"]
    assert figure.data[0].customdata[0][4] == "character 4: d<br>token 2: ##d"
    assert figure.data[0].customdata[0][2] == "character 2: ·<br>no token"


def test_unknown_tokens_are_red_and_special_tokens_cover_nothing():
    figure = token_highlight(
        ["x 🤖"],
        ["[CLS]", "x", "[UNK]", "[SEP]"],
        [(0, 0, 0), (0, 0, 1), (0, 2, 3), (0, 0, 0)],
        ["word", "word", "unknown", "word"],
        line_width=4,
    )
    assert codes(figure) == [[WORD_NEXT, NO_TOKEN, UNKNOWN, None]]
    assert CELL_KINDS[UNKNOWN][1] == "#ff6b6b"


def test_lines_wrap_at_the_width_and_after_each_newline_and_are_labelled_by_offset():
    figure = token_highlight(["abcdefghij"], [], [], [], line_width=4)
    assert list(figure.layout.yaxis.ticktext) == ["0", "4", "8"]
    assert codes(figure)[2] == [NO_TOKEN, NO_TOKEN, None, None]
    figure = token_highlight(["ab\ncd\tx"], [], [], [], line_width=8)
    assert list(figure.layout.yaxis.ticktext) == ["0", "3"]
    assert list(figure.data[0].text[0][:3]) == ["a", "b", "⏎"]
    assert list(figure.data[0].text[1][:4]) == ["c", "d", "→", "x"]


def test_a_window_of_rows_is_drawn_with_the_colours_and_offsets_those_rows_have_in_the_whole_text():
    text = "abcdefghij"  # rows at offsets 0, 4, 8 with a width of 4
    tokens, spans, kinds = ["abcdefghij"], [(0, 0, 10)], ["word"]
    whole = token_highlight([text], tokens, spans, kinds, line_width=4)
    window = token_highlight([text], tokens, spans, kinds, line_width=4, first_row=1, max_rows=1)
    assert highlight_rows([text], 4) == [(0, 0, 4), (0, 4, 8), (0, 8, 10)]
    assert list(window.layout.yaxis.ticktext) == ["4"]
    assert codes(window) == [codes(whole)[1]]
    assert list(window.data[0].text[0]) == ["e", "f", "g", "h"]
    assert window.layout.height < whole.layout.height
    assert list(
        token_highlight([text], tokens, spans, kinds, line_width=4, first_row=2, max_rows=5).layout.yaxis.ticktext
    ) == ["8"]  # the window stops at the end


def test_a_pair_draws_sentence_b_below_a_gap_with_its_own_offsets():
    figure = token_highlight(["hi", "yo"], ["hi", "yo"], [(0, 0, 2), (1, 0, 2)], ["word", "word"], line_width=3)
    assert list(figure.layout.yaxis.ticktext) == ["A 0", "", "B 0"]
    assert codes(figure) == [[WORD, WORD, None], [None, None, None], [WORD_NEXT, WORD_NEXT, None]]


def test_hostile_characters_and_tokens_are_escaped_in_cells_and_hovers():
    figure = token_highlight(["<b>&"], ["<b>&"], [(0, 0, 4)], ["word"], line_width=8)
    assert list(figure.data[0].text[0][:4]) == ["&lt;", "b", "&gt;", "&amp;"]
    hover = figure.data[0].customdata[0][0]
    assert hover == "character 0: &lt;<br>token 0: &lt;b&gt;&amp;"
    assert "<b>" not in "".join(str(cell) for row in figure.data[0].customdata for cell in row)


def test_empty_or_invisible_text_gives_a_figure_without_error():
    figure = token_highlight(["\u200b"], [], [], [], line_width=4)
    assert codes(figure) == [[NO_TOKEN, None, None, None]]
    assert figure.data[0].text[0][0] == ""  # a zero-width space draws nothing: its hover names it
    assert figure.data[0].customdata[0][0] == "character 0: U+200B<br>no token"
    assert codes(token_highlight([""], [], [], [], line_width=2)) == [[None, None]]


FAMILY = "\U0001f469\u200d\U0001f469\u200d\U0001f467"  # 👩‍👩‍👧: woman, joiner, woman, joiner, girl


def test_an_emoji_joined_from_several_characters_is_drawn_whole_and_its_joiners_are_no_spaces():
    figure = token_highlight([f"a {FAMILY}"], ["a", "[UNK]"], [(0, 0, 1), (0, 2, 7)], ["word", "unknown"], line_width=8)
    assert list(figure.data[0].text[0][:7]) == ["a", "·", FAMILY, "", "", "", ""]  # only the space is a ·
    assert codes(figure)[0][2:7] == [UNKNOWN] * 5  # every character of the emoji still shows its token
    hovers = figure.data[0].customdata[0]
    assert hovers[3] == "character 3: U+200D<br>token 1: [UNK]"  # the joiner is named, never drawn as a space
    assert hovers[4] == "character 4: \U0001f469<br>token 1: [UNK]"


@pytest.mark.parametrize(
    ("text", "cells"),
    [
        ("\u2764\ufe0f!", ["\u2764\ufe0f", "", "!"]),  # a variation selector makes ❤ an emoji: one glyph
        ("\U0001f44d\U0001f3fd", ["\U0001f44d\U0001f3fd", ""]),  # a skin tone joins the hand before it
        ("e\u0301", ["e\u0301", ""]),  # a combining accent sits on its letter
        ("a\u200cb", ["a", "", "b"]),  # a zero-width non-joiner draws nothing and joins nothing
    ],
)
def test_characters_that_draw_on_the_one_before_them_are_drawn_with_it(text, cells):
    figure = token_highlight([text], [], [], [], line_width=4)
    assert list(figure.data[0].text[0][: len(cells)]) == cells
    assert "·" not in figure.data[0].text[0]


def test_the_legend_names_each_kind_once():
    figure = token_highlight(["a"], ["a"], [(0, 0, 1)], ["word"])
    assert [trace.name for trace in figure.data[1:]] == [
        "no token (spaces, dropped characters)",
        "a token that starts a word",
        "a ## piece that continues a word",
        "[UNK]: no piece in the vocabulary",
    ]


def test_embedding_rows_show_exactly_the_chosen_block_of_the_matrix():
    vectors = torch.arange(70 * 20, dtype=torch.float32).reshape(70, 20) / 100 - 7
    labels = [f"t{i}" for i in range(70)]
    figure = embedding_rows(vectors, labels, first_token=60, num_tokens=32, num_dims=8)
    heat = figure.data[0]
    np.testing.assert_array_equal(np.asarray(heat.z), vectors[60:70, :8].numpy())  # only 10 rows are left
    assert list(heat.y) == [f"{i}: t{i}" for i in range(60, 70)]
    assert list(heat.x) == list(range(8))
    # One colour range centred on 0, set by the largest magnitude in view: (69·20 + 7)/100 − 7 = 6.87.
    assert heat.zmax == -heat.zmin == pytest.approx(6.87)


def test_embedding_rows_centre_the_colours_on_the_largest_magnitude_and_escape_tokens():
    vectors = torch.tensor([[0.5, -2.0, 1.0], [0.25, 0.0, -0.125]])
    figure = embedding_rows(vectors, ["<b>", "a&b"], num_dims=3)
    heat = figure.data[0]
    assert (heat.zmin, heat.zmax) == (-2.0, 2.0)
    assert list(heat.y) == ["0: &lt;b&gt;", "1: a&amp;b"]
    assert heat.z.dtype == np.float32


def test_the_legend_stands_below_the_text_one_kind_a_line_in_room_of_its_own():
    # In one row the four kinds are wider than a phone: plotly folded them into a box scrolling over the text.
    one_line = token_highlight(["a"], ["a"], [(0, 0, 1)], ["word"])
    two_lines = token_highlight(["ab"], ["a", "b"], [(0, 0, 1), (0, 1, 2)], ["word", "word"], line_width=1)
    legend = one_line.layout.legend
    assert (legend.orientation, legend.yref, legend.y, legend.yanchor) == ("v", "container", 0, "bottom")
    assert one_line.layout.margin.b >= 4 * 20  # four entries of about 20 px, under the plot, not on it
    assert two_lines.layout.height - one_line.layout.height == 24  # the legend's room does not shrink the text


def test_the_embedding_title_is_broken_between_phrases_into_lines_that_fit_a_phone_and_the_chart_grows_for_them():
    vectors = torch.zeros(7, 64)
    labels = [f"t{i}" for i in range(7)]
    short = embedding_rows(vectors, labels, title="Token vectors")
    title = "Token type vectors: row 0 or 1 of the segment table, first 64 dimensions"
    long = embedding_rows(vectors, labels, title=title)
    # The first line stands as the title, the next in the subtitle (see lessons.common.plots.base_layout).
    lines = [long.layout.title.text, *long.layout.title.subtitle.text.split("<br>")]
    assert lines == ["Token type vectors", "row 0 or 1 of the segment table, first 64 dimensions"]
    assert plots.fits_title(lines[0]) and plots.fits_subtitle(lines[1])
    assert long.layout.height == short.layout.height + plots.SUBTITLE_LINE_PX  # the plot keeps its height


def test_the_embedding_title_pushes_the_top_margin_so_the_dimension_axis_title_above_the_matrix_never_sits_on_it():
    figure = embedding_rows(torch.zeros(3, 8), ["a", "b", "c"], title="Token vectors, first 8 dimensions")
    assert figure.layout.xaxis.side == "top" and figure.layout.xaxis.title.text == "dimension"
    title = figure.layout.title
    assert title.automargin is True and title.yref == "container"  # measured from the chart's top, not the plot's
