"""The loss curve: one point per step, on a log axis that spans the planned run, light enough to redraw; a fresh
model's first bets with the even bet's level; and the trained model's attention on an example word."""

from __future__ import annotations

import math

import numpy as np
import plotly.io as pio
import pytest
import torch

from lessons.training.figures import example_attention_figure, first_bets_figure, loss_curve
from lessons.training.live import AttentionView, moving_average

LOSSES = [3.4, 2.9, 2.2, 1.5, 0.9, 0.4]


def test_every_step_is_one_point_starting_at_step_one():
    figure = loss_curve(LOSSES, planned_steps=100)
    (steps,) = figure.data
    assert np.array_equal(steps.y, np.float32(LOSSES)) and steps.y.dtype == np.float32
    assert (steps.x0, steps.dx, steps.x) == (1, 1, None)  # the step axis is implicit: 4 bytes a point


def test_the_step_axis_spans_the_planned_run_so_a_live_curve_grows_into_its_frame():
    assert loss_curve(LOSSES, planned_steps=1500).layout.xaxis.range == (0, 1501)
    assert loss_curve(LOSSES, planned_steps=3).layout.xaxis.range == (0, 7)  # never cuts points off


def test_the_loss_axis_is_logarithmic_because_it_falls_from_3_4_to_1e_4():
    assert loss_curve(LOSSES, planned_steps=10).layout.yaxis.type == "log"


def test_the_loss_axis_writes_every_tick_as_its_whole_number_so_a_half_reads_0_5():
    # Plotly's default log ticks label 0.5 and 0.2 with their first digit alone: "5, 2, 1, 5, 2, 0.1" top to bottom.
    axis = loss_curve([3.3, 0.4, 0.09], planned_steps=10).layout.yaxis  # drawn from 0.06 to 4.95
    assert axis.type == "log"
    assert list(axis.ticktext) == ["0.1", "0.2", "0.5", "1", "2"]
    assert list(axis.tickvals) == pytest.approx([0.1, 0.2, 0.5, 1, 2])


def test_a_loss_axis_over_more_than_three_decades_labels_its_powers_of_ten_only():
    axis = loss_curve([3.3, 1e-4], planned_steps=10).layout.yaxis
    assert list(axis.ticktext) == ["0.0001", "0.001", "0.01", "0.1", "1"]


def test_the_moving_average_is_a_second_line_and_a_uniform_guess_a_dashed_level():
    chance = math.log(30)
    figure = loss_curve(LOSSES, 10, smoothed=moving_average(LOSSES, window=2), chance_loss=chance)
    steps, average = figure.data
    assert average.y.tolist() == pytest.approx([3.4, 3.15, 2.55, 1.85, 1.2, 0.65], abs=1e-6)
    (level,) = figure.layout.shapes
    assert (level.y0, level.y1, level.line.dash) == (pytest.approx(chance), pytest.approx(chance), "dash")
    assert figure.layout.annotations[0].text == "guessing: 3.40"


def test_a_4000_step_curve_with_its_average_is_under_50_kb_to_send(monkeypatch):
    # The app's own small template (importing streamlit's plotly element switches the default to its own).
    monkeypatch.setattr(pio.templates, "default", "anatomy")
    losses = list(np.exp(-np.linspace(0, 9, 4000)) * 3.4)
    size = len(pio.to_json(loss_curve(losses, 4000, smoothed=moving_average(losses)), validate=False))
    assert size < 50_000  # 2 × 4000 float32 in base64 is 42,668 bytes; JSON numbers would be ~3×


def test_the_loss_axis_spans_the_lines_drawn_from_end_to_end_not_up_to_a_thousand():
    figure = loss_curve([3.3, 2.0, 0.5, 0.1], planned_steps=10, smoothed=[3.3, 2.6, 1.9, 1.5], chance_loss=3.4)
    bottom, top = figure.layout.yaxis.range  # log10 units, as plotly reads a log axis's range
    # Both ends are numbers: Streamlit's browser now and then dropped [None, top] and plotly stretched the axis.
    assert 10**bottom == pytest.approx(0.1 / 1.5)  # the lowest loss, with room below
    assert 10**top == pytest.approx(3.4 * 1.5)  # the guessing level is the highest line here
    above_guessing = loss_curve([5.0, 1.0], planned_steps=10, chance_loss=3.4)
    assert 10 ** above_guessing.layout.yaxis.range[1] == pytest.approx(7.5)


def test_a_loss_that_blew_up_or_reached_zero_does_not_break_the_axis():
    figure = loss_curve([3.3, float("inf"), float("nan"), 0.0, 0.2], planned_steps=10)
    assert [10**end for end in figure.layout.yaxis.range] == pytest.approx([0.2 / 1.5, 3.3 * 1.5])
    assert loss_curve([], planned_steps=10).layout.yaxis.range is None  # nothing drawn yet: plotly decides


def test_the_guessing_label_sits_on_its_line_on_the_log_axis():
    chance = math.log(30)
    figure = loss_curve(LOSSES, 10, chance_loss=chance)
    (label,) = figure.layout.annotations
    (level,) = figure.layout.shapes
    # A shape's y is a loss; an annotation's y on a log axis is log10 of one (3.4 put the label at 10^3.4 ≈ 2500).
    assert (label.yref, level.yref) == ("y", "y")
    assert 10**label.y == pytest.approx(level.y0) == pytest.approx(chance)
    assert label.yanchor == "bottom" and label.text == "guessing: 3.40"


def test_the_even_bet_label_stands_above_the_bars_it_would_otherwise_cover():
    probabilities = [0.030, 0.037, 0.033, 0.036, 0.031]
    figure = first_bets_figure(list("abcde"), probabilities)
    (line,) = figure.layout.shapes
    (label,) = figure.layout.annotations
    assert line.y0 == line.y1 == pytest.approx(1 / 5)
    assert label.text == "dashed: an even bet, 1/5 = 0.2000" and label.yanchor == "bottom"
    assert label.y > 1 / 5 and figure.layout.yaxis.range[1] > label.y  # above the line and the bars, inside

    probabilities = [0.030, 0.037, 0.033, 0.036, 0.031, *[0.833 / 25] * 25]  # 30 tokens, as the sorter has
    figure = first_bets_figure([f"t{index}" for index in range(30)], probabilities)
    (label,) = figure.layout.annotations
    assert label.y > max(probabilities) and figure.layout.yaxis.range[1] > label.y


def test_the_title_is_set_only_when_given():
    assert loss_curve(LOSSES, 10).layout.title.text is None
    assert loss_curve(LOSSES, 10, title="Loss at every step").layout.title.text == "Loss at every step"


def attention_view(kind: str, queries: tuple[str, ...], keys: tuple[str, ...]) -> AttentionView:
    weights = torch.softmax(torch.randn(2, 2, len(queries), len(keys), generator=torch.Generator().manual_seed(0)), -1)
    return AttentionView(weights, queries, keys, kind)


def test_self_attention_is_the_apps_matrix_with_every_repeated_letter_in_its_own_column():
    sorted_banana = ("<bos>", *"banana", "=", *"aaabnn")  # 14 tokens, "a" six times
    view = attention_view("self-attention", sorted_banana, sorted_banana)
    figure = example_attention_figure(view, layer=1, head=0)
    (matrix,) = [trace for trace in figure.data if trace.type == "heatmap"]
    assert np.allclose(np.asarray(matrix.z, dtype=np.float64), view.weights[1, 0].numpy(), atol=1e-7)
    drawn = ("&lt;bos&gt;", *sorted_banana[1:])  # labels are escaped: plotly reads <...> as markup
    assert list(matrix.x) == [f"{index}: {token}" for index, token in enumerate(drawn)]  # 14 columns
    assert figure.layout.coloraxis.cmin == 0 and figure.layout.coloraxis.cmax == 1  # the fixed 0–1 scale
    assert "self-attention, layer 1, head 0" in figure.layout.title.text


def test_cross_attention_names_the_written_letters_down_and_the_source_letters_across():
    view = attention_view("cross-attention", ("<bos>", *"cba"), tuple("abc"))
    figure = example_attention_figure(view, layer=0, head=1)
    (matrix,) = figure.data
    assert list(figure.layout.yaxis.ticktext) == ["&lt;bos&gt;", "c", "b", "a"]
    assert list(figure.layout.xaxis.ticktext) == ["a", "b", "c"]
    assert (matrix.zmin, matrix.zmax) == (0.0, 1.0)
    assert figure.layout.xaxis.title.text == "is read (key)" and figure.layout.yaxis.title.text == "reads (query)"
