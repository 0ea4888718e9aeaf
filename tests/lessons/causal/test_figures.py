"""The masking figures as pure functions: what they draw is exactly the numbers they were given."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from anatomy.masks import causal_mask
from lessons.causal import figures as masking
from lessons.causal import masking as mask_demo
from lessons.common import examples as toy
from lessons.common import matrix_figures, plots

WORDS = toy.APPLE_IPHONES_TOKENS


@pytest.fixture
def worked_example_view() -> mask_demo.MaskedAttention:
    return mask_demo.mask_scores(toy.CAUSAL_EXAMPLE_SCORES, causal_mask(4))


def traces(figure, name: str) -> list:
    return [trace for trace in figure.data if trace.name == name]


def test_token_names_escape_html_and_keep_repeated_words_apart():
    names = matrix_figures.token_names(["<b>", "a&b", "<b>"])
    assert names == ["0: &lt;b&gt;", "1: a&amp;b", "2: &lt;b&gt;"]
    assert matrix_figures.token_names(["x", "y"], positions=[40, 41]) == ["40: x", "41: y"]


def test_steps_figure_has_the_four_stages_of_the_recipe_in_order(worked_example_view):
    figure = masking.steps_figure(
        worked_example_view.mask,
        worked_example_view.scores,
        worked_example_view.masked_scores,
        WORDS,
        weights=worked_example_view.weights,
    )
    titles = [annotation.text for annotation in figure.layout.annotations]
    assert titles == ["1 · the mask", "2 · scores QKᵀ/√d<sub>k</sub>", "3 · scores + mask", "4 · softmax rows"]
    assert [trace.name for trace in figure.data] == ["mask", "forbidden", "score", "forbidden", "score", "weight"]
    assert list(figure.data[0].x) == ["0: I", "1: love", "2: Apple", "3: iPhones"]


def test_the_mask_panel_is_one_on_and_below_the_diagonal(worked_example_view):
    figure = masking.steps_figure(
        worked_example_view.mask, worked_example_view.scores, worked_example_view.masked_scores, WORDS
    )
    mask = traces(figure, "mask")[0]
    assert np.array_equal(mask.z, np.tril(np.ones((4, 4))))
    assert mask.text[0] == ["✓", "✗", "✗", "✗"]


def test_minus_infinity_cells_are_empty_in_the_scores_and_labelled_in_grey(worked_example_view):
    figure = masking.steps_figure(
        worked_example_view.mask, worked_example_view.scores, worked_example_view.masked_scores, WORDS
    )
    (before_grey, after_grey), (before, after) = traces(figure, "forbidden"), traces(figure, "score")
    above = np.triu(np.ones((4, 4), dtype=bool), 1)
    assert np.isnan(after.z[above]).all()
    assert np.allclose(after.z[~above], toy.CAUSAL_EXAMPLE_SCORES.numpy()[~above])
    assert np.allclose(before.z, toy.CAUSAL_EXAMPLE_SCORES.numpy())  # nothing is masked before
    assert np.array_equal(~np.isnan(after_grey.z), above)  # grey exactly where −∞
    assert np.isnan(before_grey.z).all()
    assert [row.count("−∞") for row in after_grey.text] == [3, 2, 1, 0]
    assert figure.layout.coloraxis.cmid == 0.0  # both score panels, one scale


def test_weights_panel_shows_the_softmax_with_exact_zeros_above_the_diagonal(worked_example_view):
    figure = masking.steps_figure(
        worked_example_view.mask,
        worked_example_view.scores,
        worked_example_view.masked_scores,
        WORDS,
        weights=worked_example_view.weights,
    )
    weights = traces(figure, "weight")[0].z
    assert np.allclose(weights, worked_example_view.weights.numpy(), atol=1e-7)  # float32 on the wire
    assert (weights[np.triu_indices(4, 1)] == 0.0).all()
    assert weights[0].tolist() == [1.0, 0.0, 0.0, 0.0]
    assert np.allclose(weights.sum(axis=1), 1.0, atol=1e-6)


def test_large_matrices_are_drawn_without_numbers_in_the_cells():
    mask = causal_mask(20)
    scores = torch.randn(20, 20, generator=torch.Generator().manual_seed(0))
    masked = scores.masked_fill(~mask, float("-inf"))
    figure = masking.steps_figure(mask, scores, masked, [f"t{i}" for i in range(20)])
    assert all(trace.texttemplate is None for trace in figure.data)
    assert np.isnan(traces(figure, "score")[1].z[0, 1])  # still masked, just unlabelled


def test_weights_figure_uses_the_fixed_zero_to_one_scale_and_the_given_positions():
    weights = np.array([[1.0, 0.0], [0.25, 0.75]])
    figure = matrix_figures.weights_figure(weights, ["a", "b"], "t", positions=[100, 101])
    assert (figure.layout.coloraxis.cmin, figure.layout.coloraxis.cmax) == (0.0, 1.0)
    assert list(figure.data[0].y) == ["100: a", "101: b"]
    assert figure.data[0].z.tolist() == [[1.0, 0.0], [0.25, 0.75]]


def test_weights_figure_frames_the_marked_cell_only():
    weights = np.array([[1.0, 0.0, 0.0], [0.5, 0.5, 0.0], [0.2, 0.3, 0.5]])
    assert not matrix_figures.weights_figure(weights, ["a", "b", "c"]).layout.shapes
    (frame,) = matrix_figures.weights_figure(weights, ["a", "b", "c"], marked=(2, 1)).layout.shapes
    assert (frame.xref, frame.yref) == ("x", "y")
    assert (frame.x0, frame.x1, frame.y0, frame.y1) == (0.5, 1.5, 1.5, 2.5)  # column 1 across, row 2 down


def test_mask_figure_ticks_the_allowed_pairs_and_crosses_the_future():
    figure = masking.mask_figure(causal_mask(3), ["<b>", "b", "c"], "mask")
    (mask,) = traces(figure, "mask")
    assert np.array_equal(mask.z, np.tril(np.ones((3, 3))))
    assert [list(row) for row in mask.text] == [["✓", "✗", "✗"], ["✓", "✓", "✗"], ["✓", "✓", "✓"]]
    assert list(mask.x) == ["0: &lt;b&gt;", "1: b", "2: c"]


def test_compare_figure_puts_panels_of_different_sizes_on_one_colour_axis():
    panels = [
        masking.Panel("no mask", np.full((2, 2), 0.5), ["a", "b"]),
        masking.Panel("padding", np.array([[0.5, 0.5, 0.0]] * 3), ["a", "b", "[PAD]"]),
        masking.Panel("causal", np.array([[1.0, 0.0], [0.5, 0.5]]), ["a", "b"]),
    ]
    figure = masking.compare_figure(panels, "three masks")
    assert [trace.coloraxis for trace in figure.data] == ["coloraxis"] * 3
    assert (figure.layout.coloraxis.cmin, figure.layout.coloraxis.cmax) == (0.0, 1.0)
    assert [annotation.text for annotation in figure.layout.annotations] == ["no mask", "padding", "causal"]
    assert list(figure.data[1].x) == ["0: a", "1: b", "2: [PAD]"]
    for trace, panel in zip(figure.data, panels):
        assert np.array_equal(trace.z, panel.weights)


def test_overview_draws_every_cell_of_a_long_matrix_as_float32():
    weights = torch.softmax(torch.randn(300, 300, generator=torch.Generator().manual_seed(1)), dim=-1)
    figure = masking.overview_figure(weights, "all")
    assert figure.data[0].z.shape == (300, 300)
    assert figure.data[0].z.dtype == np.float32
    assert np.allclose(figure.data[0].z, weights.numpy(), atol=1e-7)


def test_past_the_upright_limit_key_labels_read_upwards_and_the_margins_hold_them():
    many = [f"token{i}" for i in range(matrix_figures.UPRIGHT_KEYS + 1)]
    few = many[: matrix_figures.UPRIGHT_KEYS]
    wide = matrix_figures.weights_figure(np.eye(len(many)), many, "Many keys")
    narrow = matrix_figures.weights_figure(np.eye(len(few)), few, "Few keys")

    assert wide.layout.xaxis.tickangle == -90
    assert wide.layout.margin.l >= max(map(plots.label_width_px, matrix_figures.token_names(many)))
    # Few keys: plotly still chooses upright or turned by the width it draws at, and sizes the margins itself.
    assert narrow.layout.xaxis.tickangle is None and narrow.layout.xaxis.autotickangles is None  # the template's
    assert narrow.layout.margin.l == plots.base_layout("Few keys")["margin"]["l"]


def test_panels_of_many_keys_stand_further_apart_for_their_turned_labels(worked_example_view):
    def gap(figure) -> float:
        return figure.layout.xaxis2.domain[0] - figure.layout.xaxis.domain[1]

    size = matrix_figures.UPRIGHT_KEYS + 1
    many = masking.steps_figure(np.ones((size, size)), np.zeros((size, size)), np.zeros((size, size)), ["w"] * size)
    few = masking.steps_figure(
        worked_example_view.mask, worked_example_view.scores, worked_example_view.masked_scores, WORDS
    )
    assert gap(many) == pytest.approx(matrix_figures.PANEL_GAP_TURNED)
    assert gap(few) == pytest.approx(matrix_figures.PANEL_GAP)
