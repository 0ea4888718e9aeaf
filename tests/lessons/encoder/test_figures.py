"""The encoder-stack figures as pure functions: the numbers they draw are the arrays they were given,
and every token label is escaped."""

from __future__ import annotations

import math

import numpy as np
import pytest

from lessons.common.plots import DIVERGING_SCALE
from lessons.encoder import figures

TOKENS = ["[CLS]", "<b>x</b>", "a&b", "[SEP]"]
ESCAPED = ["0: [CLS]", "1: &lt;b&gt;x&lt;/b&gt;", "2: a&amp;b", "3: [SEP]"]


def z_of(figure, index: int = 0) -> np.ndarray:
    return np.asarray(figure.data[index].z, dtype=float)


def test_the_attention_map_names_each_token_by_its_position_escaped():
    assert list(figures.attention_map(np.eye(4), TOKENS, TOKENS).data[0].x) == ESCAPED
    assert list(figures.attention_map(np.ones((1, 4)), ["x"], TOKENS, first_query=40).data[0].y) == ["40: x"]


def test_overview_tiles_every_map_with_one_empty_line_between_them():
    rng = np.random.default_rng(0)
    pooled = rng.random((2, 3, 4, 4))
    figure = figures.attention_overview(pooled, [(i, i + 1) for i in range(4)], TOKENS, selected=(1, 2))
    mosaic = z_of(figure)
    assert mosaic.shape == (2 * 5 - 1, 3 * 5 - 1)
    for layer in range(2):
        for head in range(3):
            block = mosaic[layer * 5 : layer * 5 + 4, head * 5 : head * 5 + 4]
            np.testing.assert_allclose(block, pooled[layer, head], rtol=1e-6)
    assert np.isnan(mosaic[4]).all() and np.isnan(mosaic[:, 4]).all()
    assert list(figure.layout.xaxis.ticktext) == ["head 0", "head 1", "head 2"]
    assert list(figure.layout.yaxis.ticktext) == ["layer 0", "layer 1"]
    # the selected map (layer 2, head 3) is framed
    (frame,) = figure.layout.shapes
    assert (frame.x0, frame.x1, frame.y0, frame.y1) == (9.5, 13.5, 4.5, 8.5)
    # hover names carry the escaped token; no raw markup survives
    assert "layer 0 · query 1: &lt;b&gt;x&lt;/b&gt;" in figure.data[0].y
    assert not any("<b>" in label for label in list(figure.data[0].x) + list(figure.data[0].y))


def test_pooled_overview_names_token_ranges_and_keeps_the_weights_0_to_1_scale():
    pooled = np.full((1, 1, 2, 2), 0.25)
    pooled[0, 0, 0, 1] = 0.5
    figure = figures.attention_overview(pooled, [(0, 2), (2, 4)], TOKENS)
    assert list(figure.data[0].x) == ["head 0 · key tokens 0–1", "head 0 · key tokens 2–3"]
    assert figure.data[0].zmax == 1.0 and figure.data[0].zmin == 0.0  # a mean weight is a weight
    assert "mean weight" in figure.data[0].hovertemplate
    assert not figure.layout.shapes


def test_the_overview_and_the_full_map_colour_equal_weights_alike():
    weights = np.random.default_rng(2).dirichlet(np.ones(4), size=(2, 3, 4))  # (L, H, T, T), rows sum to 1
    overview = figures.attention_overview(weights, [(i, i + 1) for i in range(4)], TOKENS)
    detail = figures.attention_map(weights[1, 2] * 0.5, TOKENS, TOKENS)  # a head whose weights stay below 0.5
    ranges = {(trace.zmin, trace.zmax) for trace in (overview.data[0], detail.data[0])}
    assert ranges == {(0.0, 1.0)}


def test_attention_map_keeps_every_weight_and_numbers_rows_from_the_window_start():
    weights = np.random.default_rng(1).random((2, 4))
    figure = figures.attention_map(weights, TOKENS[2:], TOKENS, first_query=2)
    np.testing.assert_allclose(z_of(figure), weights, rtol=1e-6)
    assert list(figure.data[0].y) == ESCAPED[2:]
    assert list(figure.data[0].x) == ESCAPED
    assert figure.data[0].z.dtype == np.float32  # half the bytes of float64 on the wire


def test_layer_by_token_heatmap_draws_one_row_per_depth():
    values = np.arange(12.0).reshape(3, 4)
    figure = figures.layer_token_heatmap(values, ["embeddings", "layer 1", "<i>"], TOKENS, value_name="‖h‖")
    np.testing.assert_array_equal(z_of(figure), values)
    assert list(figure.data[0].y) == ["embeddings", "layer 1", "&lt;i&gt;"]
    assert list(figure.data[0].x) == ESCAPED
    assert "‖h‖ = " in figure.data[0].hovertemplate


def test_word_similarity_chart_plots_one_point_per_depth():
    similarity = np.array([1.0, 0.9, 0.63])
    figure = figures.word_similarity_chart(similarity, ["embeddings", "layer 1", "layer 2"])
    np.testing.assert_array_equal(np.asarray(figure.data[0].y), similarity)
    assert list(figure.data[0].text) == ["1.000", "0.900", "0.630"]


def test_main_path_chart_shows_mean_and_range_over_tokens():
    norms = np.array([[1.0, 3.0], [10.0, 30.0], [5.0, 6.0]])
    figure = figures.main_path_chart(norms, ["x", "x + A", "LN"], reference_norm=19.6, highlight=(1, 3))
    by_name = {trace.name: np.asarray(trace.y) for trace in figure.data}
    np.testing.assert_array_equal(by_name["mean over tokens"], [2.0, 20.0, 5.5])
    np.testing.assert_array_equal(by_name["largest token"], [3.0, 30.0, 6.0])
    np.testing.assert_array_equal(by_name["smallest token"], [1.0, 10.0, 5.0])
    lines = [shape for shape in figure.layout.shapes if shape.type == "line"]
    assert lines[0].y0 == 19.6
    assert any(shape.type == "rect" and (shape.x0, shape.x1) == (0.5, 2.5) for shape in figure.layout.shapes)


def test_norm_growth_chart_compares_the_mean_norms_of_both_placements():
    pre = np.array([[9.0, 9.0], [10.0, 12.0], [14.0, 16.0]])
    post = np.array([[9.0, 9.0], [19.6, 19.6], [19.6, 19.6]])
    figure = figures.norm_growth_chart(pre, post, math.sqrt(384), pre_final_norms=np.array([19.5, 19.7]))
    by_name = {trace.name: trace for trace in figure.data}
    np.testing.assert_allclose(np.asarray(by_name["pre-LN"].y), [9.0, 11.0, 15.0])
    np.testing.assert_allclose(np.asarray(by_name["post-LN"].y), [9.0, 19.6, 19.6])
    assert list(by_name["pre-LN"].x) == ["input", "after block 0", "after block 1"]
    assert by_name["pre-LN final norm"].y == (pytest.approx(19.6),)


def test_activation_heatmap_centres_its_colours_on_zero():
    activation = np.array([[-0.17, 2.0], [4.0, 0.5]])
    figure = figures.activation_heatmap(activation, TOKENS[1:3], [7, 1200], first_token=1)
    np.testing.assert_allclose(z_of(figure), activation, rtol=1e-6)
    assert (figure.data[0].zmin, figure.data[0].zmax) == (-4.0, 4.0)
    assert list(figure.data[0].x) == ["n7", "n1200"]
    assert list(figure.data[0].y) == ESCAPED[1:3]
    assert figure.data[0].colorscale == figures.go.Heatmap(colorscale=DIVERGING_SCALE).colorscale


def test_positive_fraction_chart_marks_the_chosen_layer():
    figure = figures.positive_fraction_chart(np.array([0.25, 0.17, 0.18]), selected_layer=1)
    np.testing.assert_array_equal(np.asarray(figure.data[0].y), [0.25, 0.17, 0.18])
    colors = list(figure.data[0].marker.color)
    assert colors[1] == figures.HIGHLIGHT and colors[0] == colors[2] != figures.HIGHLIGHT


def test_cls_chart_draws_the_pooler_output_only_when_there_is_one():
    vector = np.linspace(-1, 1, 8)
    assert len(figures.cls_vector_chart(vector).data) == 1
    figure = figures.cls_vector_chart(vector, np.tanh(vector))
    np.testing.assert_allclose(np.asarray(figure.data[1].y), np.tanh(vector))
    assert len(figure.data) == 2


def test_classifier_output_chart_shows_logits_beside_probabilities():
    logits = np.array([-0.3, 0.0, 0.2])
    probabilities = np.exp(logits) / np.exp(logits).sum()
    figure = figures.classifier_output_chart(logits, probabilities)
    np.testing.assert_allclose(np.asarray(figure.data[0].y), logits)
    np.testing.assert_allclose(np.asarray(figure.data[1].y), probabilities)
    assert list(figure.data[0].x) == ["label 0", "label 1", "label 2"]


def test_heatmaps_with_tokens_above_make_room_for_the_labels_and_the_title():
    depths = ["embeddings", "after layer 0"]
    figure = figures.layer_token_heatmap(np.ones((2, 4)), depths, ["a-long-word-piece"] * 4, title="‖h‖")
    assert figure.layout.xaxis.side == "top" and figure.layout.xaxis.automargin is True
    assert figure.layout.margin.t is None or figure.layout.margin.t < 60  # no fixed margin the labels outgrow
    assert figures.attention_map(np.ones((2, 2)), TOKENS[:2], TOKENS[:2]).layout.xaxis.automargin is True


def test_the_main_path_labels_stand_upright_so_a_phone_keeps_them_apart():
    labels = ["embeddings", "L0 LN₁", "L0 x+Attn"]
    figure = figures.main_path_chart(np.ones((3, 2)), labels, 19.6)
    assert figure.layout.xaxis.tickangle == -90 and figure.layout.xaxis.automargin is True


def test_the_classifier_titles_fit_half_a_phones_chart():
    figure = figures.classifier_output_chart(np.array([0.1, -0.1]), np.array([0.55, 0.45]))
    assert [note.text for note in figure.layout.annotations] == ["logits", "softmax(logits)"]


def test_a_titled_cls_chart_leaves_room_for_its_subplot_title_under_the_title():
    figure = figures.cls_vector_chart(np.ones(4), title="the vector the head reads")
    assert [note.text for note in figure.layout.annotations] == ["h[CLS]"]
    assert figure.layout.margin.t >= 55  # about 30 px for the title, then the subplot's title
