"""Figures of the encoder-decoder lesson, built without Streamlit: each head's weights as given, the outlined
alignment cells, every label escaped, the three families' masks."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go
import pytest
import torch

from lessons.common.cell_numbers import CELL_FONT_SIZE, DESKTOP_CHART, NUMBERS_FROM_PX
from lessons.decoder import families
from lessons.decoder.figures import distribution_figure, family_masks_figure, heads_figure

SOURCE = ["h", "e", "l", "l", "o"]
STEPS = ["<bos> → o", "o → l", "l → l", "l → e", "e → h", "h → <eos>"]


def rectangular_weights() -> torch.Tensor:
    """(2, 6, 5) rows summing to 1, head 0 peaked on the anti-diagonal, head 1 uniform."""
    peaked = torch.full((6, 5), 0.025)
    for step in range(5):
        peaked[step, 4 - step] = 0.9
    peaked[5] = torch.tensor([0.9, 0.025, 0.025, 0.025, 0.025])
    return torch.stack([peaked, torch.full((6, 5), 0.2)])


def heatmaps(figure: go.Figure) -> list:
    return [trace for trace in figure.data if trace.type == "heatmap"]


def test_one_panel_per_head_holding_that_heads_rectangular_weights():
    weights = rectangular_weights()
    figure = heads_figure(weights, STEPS, SOURCE, "cross")
    panels = heatmaps(figure)
    assert [panel.name for panel in panels] == ["head 0", "head 1"]
    for head, panel in enumerate(panels):
        assert np.asarray(panel.z).shape == (6, 5)  # T rows, S columns
        assert np.allclose(np.asarray(panel.z, dtype=float), weights[head].numpy(), atol=1e-7)
    assert figure.layout.coloraxis.cmin == 0.0 and figure.layout.coloraxis.cmax == 1.0  # one shared scale


def test_positions_name_the_rows_and_columns_so_a_repeated_letter_keeps_its_own_column():
    panel = heatmaps(heads_figure(rectangular_weights(), STEPS, SOURCE))[0]
    assert list(panel.x) == ["0: h", "1: e", "2: l", "3: l", "4: o"]
    assert list(panel.y)[0] == "0: &lt;bos&gt; → o"  # escaped: plotly would read <bos> as a tag
    assert all("<" not in label for label in panel.y)


def test_the_alignment_marks_outline_the_chosen_cell_of_every_row():
    weights = rectangular_weights()
    marks = weights.argmax(dim=-1)  # (H, T)
    figure = heads_figure(weights, STEPS, SOURCE, marks=marks, mark_name="most read")
    outlines = [trace for trace in figure.data if trace.type == "scatter"]
    assert [trace.name for trace in outlines] == ["most read", "most read"]
    assert list(outlines[0].x) == ["4: o", "3: l", "2: l", "1: e", "0: h", "0: h"]  # the anti-diagonal, then <eos>
    assert list(outlines[0].y) == list(heatmaps(figure)[0].y)
    assert outlines[0].showlegend and not outlines[1].showlegend


def test_numbers_are_written_only_where_a_desktop_chart_has_room_for_them():
    small = heads_figure(rectangular_weights(), STEPS, SOURCE)
    assert heatmaps(small)[0].texttemplate == "%{z:.2f}"
    assert small.layout.meta[NUMBERS_FROM_PX] <= DESKTOP_CHART  # narrower charts hide them (charts.show)
    letters = list("abcdefghijk")
    wide = heads_figure(torch.full((4, 11, 11), 1 / 11), letters, letters)  # 44 cells across
    assert all(trace.texttemplate is None for trace in heatmaps(wide))


def test_the_distribution_shows_every_steps_probabilities_and_outlines_the_written_token():
    vocabulary = ["<pad>", "<bos>", "<eos>", "a", "b"]
    probabilities = torch.tensor([[0.0, 0.0, 0.1, 0.8, 0.1], [0.0, 0.0, 0.7, 0.2, 0.1]])
    figure = distribution_figure(probabilities, ["<bos> → a", "a → <eos>"], vocabulary, [3, 2])
    (grid,) = heatmaps(figure)
    assert np.allclose(np.asarray(grid.z, dtype=float), probabilities.numpy(), atol=1e-7)
    assert list(grid.x)[:3] == ["0: &lt;pad&gt;", "1: &lt;bos&gt;", "2: &lt;eos&gt;"]
    (outline,) = [trace for trace in figure.data if trace.type == "scatter"]
    assert list(outline.x) == ["3: a", "2: &lt;eos&gt;"]


def test_the_family_masks_show_allowed_and_forbidden_cells_and_split_the_encoder_decoder_blocks():
    patterns = families.family_masks(num_source=4, num_target=3)
    figure = family_masks_figure(patterns)
    panels = heatmaps(figure)
    assert [panel.name for panel in panels] == ["encoder-only", "decoder-only", "encoder-decoder"]
    for panel, pattern in zip(panels, patterns):
        assert np.array_equal(np.asarray(panel.z), pattern.mask.numpy().astype(np.int8))
    assert np.asarray(panels[1].text)[0].tolist() == ["✓", "✗", "✗", "✗"]
    assert sum(row.count("✓") for row in np.asarray(panels[2].text).tolist()) == 34
    vertical, horizontal = figure.layout.shapes  # between x3 and y0, on the third panel only
    assert (vertical.x0, vertical.x1, vertical.xref) == (3.5, 3.5, "x3")
    assert (horizontal.y0, horizontal.y1, horizontal.yref) == (3.5, 3.5, "y3")


def test_the_family_marks_are_written_at_12_px_and_hidden_on_a_phone_where_the_colours_say_it_alone():
    figure = family_masks_figure(families.family_masks(num_source=4, num_target=3))
    assert {panel.textfont.size for panel in heatmaps(figure)} == {CELL_FONT_SIZE}
    # 15 cells across three panels: a desktop and a desktop zoomed to 150 % (520 px) show them, a phone (358) not
    assert 358 < figure.layout.meta[NUMBERS_FROM_PX] <= 520


@pytest.mark.parametrize(
    "builder",
    [
        lambda: heads_figure(rectangular_weights(), STEPS, SOURCE, "a title"),
        lambda: family_masks_figure(families.family_masks(), "a title"),
    ],
)
def test_figures_carry_their_title_and_a_fixed_height(builder):
    figure = builder()
    assert figure.layout.title.text == "a title" and figure.layout.height >= 300
