"""The language-model lesson's figures, without Streamlit or a model."""

from __future__ import annotations

import numpy as np

from harness.apptest import numbers
from lessons.language_model import figures


def test_the_writing_figure_draws_each_steps_probability_in_the_draw_and_in_the_model():
    figure = figures.writing_figure(["·Paris", ".", "<b>"], [0.96, 0.5, 1.0], [0.77, 0.4, 0.9], "Written").to_dict()
    bars, dots = figure["data"]
    assert list(bars["x"]) == ["0: ·Paris", "1: .", "2: &lt;b&gt;"]  # a typed "<b>" stays three characters
    assert np.allclose(numbers(bars["y"]), [0.96, 0.5, 1.0]) and np.allclose(numbers(dots["y"]), [0.77, 0.4, 0.9])
    assert figure["layout"]["yaxis"]["range"] == [0, 1.05]


def test_the_next_token_figure_puts_the_most_probable_token_on_top():
    figure = figures.next_token_figure(["·Paris", "·the"], [0.77, 0.07], "Next").to_dict()
    (bars,) = figure["data"]
    assert list(bars["y"]) == ["1. ·Paris", "2. ·the"] and figure["layout"]["yaxis"]["autorange"] == "reversed"


def test_the_attention_figure_labels_each_token_with_its_position_in_the_text():
    weights = np.tril(np.ones((3, 3))) / np.arange(1, 4)[:, None]
    figure = figures.attention_figure(weights, ["a", "b", "<c>"], range(10, 13), "Layer 0, head 0").to_dict()
    (heatmap,) = figure["data"]
    assert list(heatmap["x"]) == list(heatmap["y"]) == ["10: a", "11: b", "12: &lt;c&gt;"]  # a window from position 10
    assert np.allclose(numbers(heatmap["z"]), weights, atol=1e-3)


def test_the_divergence_chart_draws_one_line_per_position_from_layer_0_leaving_the_embeddings_out():
    divergence = np.array([[150.0, 120.0], [9.0, 3.0], [2.0, 1.0], [0.0, 0.0]])  # embeddings, then 3 layers
    figure = figures.divergence_figure(divergence, [4, 5], ["·is", "·Paris"], "KL")
    assert [trace.name for trace in figure.data] == ["4: ·is", "5: ·Paris"]
    assert list(figure.data[0].x) == [0, 1, 2] and list(figure.data[0].y) == [9.0, 2.0, 0.0]


def test_the_layer_by_head_map_keeps_one_row_per_layer_on_a_fixed_scale():
    scores = np.arange(30 * 9).reshape(30, 9) / 270
    figure = figures.layer_head_figure(scores, "Sinks", "first-token importance")
    (cells,) = figure.data
    assert np.array_equal(cells.z, scores) and (cells.zmin, cells.zmax) == (0.0, 1.0)
