"""The decoder figures as pure functions: every head on one scale, the future's edge, next-token
probabilities with the chosen token ticked, the top candidates, and teacher-forced losses on a log axis."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from lessons.causal import decoding_figures as figures

LABELS = ["<bos>", "b", "a", "="]


@pytest.fixture
def attention() -> torch.Tensor:
    """(2, 3, 4, 4) rows that sum to 1, each cell a different number (a mix-up of heads would show)."""
    generator = torch.Generator().manual_seed(0)
    return torch.rand(2, 3, 4, 4, generator=generator).softmax(dim=-1)


def test_layer_head_grid_draws_each_layer_as_a_row_and_each_head_as_a_column_from_zero(attention):
    figure = figures.layer_head_grid(attention, LABELS, "every head")
    assert [trace.name for trace in figure.data] == [
        f"layer {layer} head {head}" for layer in range(2) for head in range(3)
    ]
    titles = [annotation.text for annotation in figure.layout.annotations]
    assert titles == [f"layer {layer} · head {head}" for layer in range(2) for head in range(3)]
    for index, trace in enumerate(figure.data):
        layer, head = divmod(index, 3)
        assert np.allclose(trace.z, attention[layer, head].numpy(), atol=1e-7)
        assert f"layer {layer}, head {head}" in trace.hovertemplate and "weight" in trace.hovertemplate


def test_layer_head_grid_puts_every_head_on_one_zero_to_one_scale(attention):
    figure = figures.layer_head_grid(attention, LABELS)
    assert {trace.coloraxis for trace in figure.data} == {"coloraxis"}
    assert (figure.layout.coloraxis.cmin, figure.layout.coloraxis.cmax) == (0.0, 1.0)


def test_token_labels_are_escaped_for_plotly_and_numbered_by_position(attention):
    figure = figures.layer_head_grid(attention, LABELS, positions=[10, 11, 12, 13])
    assert list(figure.data[0].x) == ["10: &lt;bos&gt;", "11: b", "12: a", "13: ="]
    assert list(figure.data[0].y) == list(figure.data[0].x)


def test_the_future_edge_runs_along_the_right_of_the_diagonal_on_every_panel(attention):
    assert figures.future_edge(3) == "M 0.5,-0.5 L 0.5,0.5 L 1.5,0.5 L 1.5,1.5 L 2.5,1.5 L 2.5,2.5"
    figure = figures.layer_head_grid(attention, LABELS)
    assert [shape.path for shape in figure.layout.shapes] == [figures.future_edge(4)] * 6
    assert [shape.xref for shape in figure.layout.shapes] == ["x", "x2", "x3", "x4", "x5", "x6"]
    assert not figures.layer_head_grid(attention, LABELS, show_edge=False).layout.shapes


def test_next_token_heatmap_ticks_exactly_the_chosen_token_of_each_step():
    probabilities = torch.tensor([[0.1, 0.7, 0.2], [0.5, 0.25, 0.25]])
    figure = figures.next_token_heatmap(probabilities, ["step 0", "step 1"], ["<eos>", "a", "b"], [1, 0])
    (trace,) = figure.data
    assert np.allclose(trace.z, probabilities.numpy())
    assert list(trace.x) == ["&lt;eos&gt;", "a", "b"] and list(trace.y) == ["step 0", "step 1"]
    assert [list(row) for row in trace.text] == [["", "✓", ""], ["✓", "", ""]]
    assert (trace.zmin, trace.zmax) == (0.0, 1.0)


def test_target_loss_figure_draws_each_model_on_a_log_axis_and_keeps_the_exact_losses():
    losses = {"sorter": [4.9e-3, 2.0e-5], "sorter-cheater": [8.0e-8, 0.0]}
    figure = figures.target_loss_figure(["7: = → a", "8: a → <eos>"], losses)
    assert figure.layout.yaxis.type == "log"
    assert [trace.name for trace in figure.data] == ["sorter", "sorter-cheater"]
    assert list(figure.data[0].x) == ["7: = → a", "8: a → &lt;eos&gt;"]
    cheater = figure.data[1]
    assert list(cheater.y) == [8.0e-8, figures.LOSS_FLOOR]  # a log axis cannot draw 0
    assert list(cheater.customdata) == [8.0e-8, 0.0]  # the hover tells the truth
