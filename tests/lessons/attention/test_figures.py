"""The attention lesson's figures, as pure functions: shapes, values, hover text and escaped labels."""

import numpy as np
import pytest

from lessons.attention.figures import (
    full_pattern,
    neuron_view,
    projection_panels,
    round_significant,
    score_matrix,
    step_matrix,
)
from lessons.common import examples as toy
from lessons.common.cell_numbers import CELL_FONT_SIZE, DESKTOP_CHART, NUMBERS_FROM_PX
from lessons.common.labels import token_labels

STEPS = toy.love_mathematics()
FEATURES = ["1", "2", "3", "4"]
HOSTILE = ["<b>x</b>", "a & b", "<script>"]


def test_values_are_kept_to_four_significant_digits():
    rounded = round_significant([123456.0, 0.000123456, -2.71828, 0.0, np.inf, np.nan])
    assert rounded[:4].tolist() == [123500.0, 0.0001235, -2.718, 0.0]
    assert np.isinf(rounded[4]) and np.isnan(rounded[5])


def test_a_step_matrix_shows_every_entry_on_a_scale_centred_on_zero():
    figure = step_matrix(STEPS.query, STEPS.tokens, FEATURES, "Q")
    trace = figure.data[0]
    assert np.array_equal(trace.z, STEPS.query.numpy())  # small integers survive rounding exactly
    assert list(trace.y) == ["I", "love", "mathematics"] and list(trace.x) == FEATURES
    assert trace.zmin == -5.0 and trace.zmax == 5.0  # the largest entry of Q is 5
    assert trace.texttemplate == "%{text}" and list(trace.text[0]) == ["3", "1", "5", "4"]  # Q's first row, not "3.000"
    assert step_matrix(STEPS.query, STEPS.tokens, FEATURES, show_values=False).data[0].texttemplate is None


def test_labels_are_escaped_and_repeated_tokens_keep_their_own_row():
    figure = step_matrix(np.ones((3, 2)), HOSTILE, ["f", "f"])
    assert list(figure.data[0].y) == ["&lt;b&gt;x&lt;/b&gt;", "a &amp; b", "&lt;script&gt;"]
    assert list(figure.data[0].x) == ["0: f", "1: f"]  # two columns named alike stay two columns
    assert figure.layout.yaxis.autorange == "reversed"  # row 0 on top, as matrices are written


def test_a_score_cell_carries_its_whole_computation_for_the_hover():
    figure = score_matrix(STEPS.raw_scores, STEPS.scaled_scores, STEPS.weights, STEPS.tokens, STEPS.tokens, "scaled")
    trace = figure.data[0]
    assert np.allclose(trace.z, STEPS.scaled_scores.numpy(), rtol=1e-3)
    assert trace.z[0][1] == 22.0  # q_I · k_love = 44, ÷ √4
    assert trace.customdata.shape == (3, 3, 3)
    assert trace.customdata[0, 1].tolist() == pytest.approx([44.0, 22.0, 0.9707], rel=1e-4)
    for words in ("q·k", "÷ √d<sub>k</sub>", "softmax weight"):
        assert words in trace.hovertemplate
    assert figure.layout.title.text == "QKᵀ / √d<sub>k</sub>"


def test_the_weights_stage_uses_the_fixed_zero_to_one_scale_and_can_outline_a_cell():
    figure = score_matrix(
        STEPS.raw_scores,
        STEPS.scaled_scores,
        STEPS.weights,
        STEPS.tokens,
        STEPS.tokens,
        "weights",
        show_values=False,
        highlight=(2, 1),
    )
    trace = figure.data[0]
    assert (figure.layout.coloraxis.cmin, figure.layout.coloraxis.cmax) == (0.0, 1.0)
    assert np.allclose(trace.z, STEPS.weights.numpy(), rtol=1e-3)
    assert trace.texttemplate is None
    (outline,) = figure.layout.shapes
    assert (outline.x0, outline.x1, outline.y0, outline.y1) == (0.5, 1.5, 1.5, 2.5)


def test_a_score_matrix_keeps_its_colour_bar_under_it_and_room_for_a_single_row():
    """Beside three rows a colour bar is as short as they are (its numbers overlapped on a phone); one row alone
    must still get room under its title and its key labels (an exercise draws one query's row)."""
    args = (STEPS.raw_scores, STEPS.scaled_scores, STEPS.weights, STEPS.tokens, STEPS.tokens, "raw")
    three = score_matrix(*args)
    assert three.data[0].coloraxis == "coloraxis"
    assert three.layout.coloraxis.colorbar.orientation == "h"
    assert (three.layout.coloraxis.cmin, three.layout.coloraxis.cmax) == (-48.0, 48.0)  # q_love · k_love = 48
    one = score_matrix(*(matrix[1:2] for matrix in args[:3]), STEPS.tokens[1:2], STEPS.tokens, "weights")
    assert one.layout.height == three.layout.height


def test_projection_panels_put_q_k_and_v_side_by_side_on_one_scale():
    figure = projection_panels({"Q": STEPS.query, "K": STEPS.key, "V": STEPS.value}, STEPS.tokens, FEATURES)
    assert [trace.name for trace in figure.data] == ["Q", "K", "V"]
    for trace, matrix in zip(figure.data, (STEPS.query, STEPS.key, STEPS.value)):
        assert np.array_equal(trace.z, matrix.numpy())
        assert trace.coloraxis == "coloraxis"
    assert (figure.layout.coloraxis.cmin, figure.layout.coloraxis.cmax) == (-6.0, 6.0)  # K and V reach 6
    domains = [figure.layout.xaxis.domain, figure.layout.xaxis2.domain, figure.layout.xaxis3.domain]
    assert all(left[1] < right[0] for left, right in zip(domains, domains[1:]))  # no panel overlaps another


PHONE_CHART = 358  # px: a chart's width on a phone (390 px window)


def numbers_from(figure) -> int | None:
    return (figure.layout.meta or {}).get(NUMBERS_FROM_PX)


def test_the_worked_examples_values_are_written_at_the_cells_font_size_and_hidden_where_a_chart_is_narrower():
    """The lesson's matrices follow the app's one rule for numbers in cells (`lessons.common.cell_numbers`): at
    12 px, where a desktop has room, the width they need recorded for the page to hide them below it (plotly
    would otherwise shrink them to fit a phone's cells, too small to read)."""
    panels = projection_panels({"Q": STEPS.query, "K": STEPS.key, "V": STEPS.value}, STEPS.tokens, FEATURES)
    scores = score_matrix(STEPS.raw_scores, STEPS.scaled_scores, STEPS.weights, STEPS.tokens, STEPS.tokens, "raw")
    output = step_matrix(STEPS.output, STEPS.tokens, FEATURES, "output = A V")
    for figure in (panels, scores, output):
        assert all(trace.texttemplate == "%{text}" for trace in figure.data)
        assert all(trace.textfont.size == CELL_FONT_SIZE for trace in figure.data)
        assert numbers_from(figure) <= DESKTOP_CHART
    assert numbers_from(panels) > PHONE_CHART  # Q, K and V: twelve columns, hidden on a phone
    assert numbers_from(scores) <= PHONE_CHART  # three keys: written on a phone too


def test_a_matrix_too_wide_for_a_desktop_writes_no_values_unless_asked_and_none_when_told_not_to():
    head = np.full((7, 64), -0.1234)  # seven tokens of a 64-wide head
    tokens = [f"token {index}" for index in range(7)]
    features = [str(feature) for feature in range(64)]
    wide = step_matrix(head, tokens, features)
    assert wide.data[0].texttemplate is None and numbers_from(wide) is None
    asked = step_matrix(head, tokens, features, show_values=True)
    assert asked.data[0].text[0][0] == "−0.1234" and numbers_from(asked) > DESKTOP_CHART
    told_not_to = score_matrix(
        STEPS.raw_scores, STEPS.scaled_scores, STEPS.weights, STEPS.tokens, STEPS.tokens, "raw", show_values=False
    )
    assert told_not_to.data[0].texttemplate is None and numbers_from(told_not_to) is None


def test_the_full_pattern_stays_light_for_long_texts():
    weights = np.full((100, 100), 0.01)
    labels = token_labels(["<tok>"] * 100)  # as the lesson names its tokens
    figure = full_pattern(weights, labels)
    trace = figure.data[0]
    assert trace.z.dtype == np.float32 and trace.z.shape == (100, 100)
    assert trace.customdata is None and trace.texttemplate is None
    assert trace.x[7] == "7: &lt;tok&gt;"
    assert figure.layout.xaxis.showticklabels is False  # 100 names would be unreadable


def test_the_neuron_view_shows_query_key_and_products_whose_sum_is_the_score():
    query, key = STEPS.query[0], STEPS.key[1]
    figure = neuron_view(query, key, query * key, "<b>I</b>", "love", FEATURES)
    assert [list(trace.y) for trace in figure.data] == [[3, 1, 5, 4], [6, 2, 4, 1], [18, 2, 20, 4]]
    assert sum(figure.data[2].y) == STEPS.raw_scores[0, 1] == 44
    assert figure.data[0].name == "query &lt;b&gt;I&lt;/b&gt;"
    assert [trace.yaxis for trace in figure.data] == ["y", "y2", "y3"]
