"""Every figure's text alternative (lessons.common.figure_text): its key numbers, read from what is drawn."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from lessons.common.figure_text import describe


def test_a_heatmap_is_told_by_its_size_its_range_and_where_its_largest_value_sits():
    weights = np.array([[0.9, 0.1, 0.0], [0.2, 0.3, 0.5]])
    figure = go.Figure(go.Heatmap(z=weights, x=["time", "flies", "<b>x</b>"], y=["a", "b"]))
    figure.update_layout(title="Layer 0, head 3<br><sub>weights</sub>")
    assert describe(figure) == (
        "Layer 0, head 3 weights: a heatmap of 2 rows by 3 columns, values from 0.00 to 0.90; "
        "the largest at row “a”, column “time”."
    )


def test_each_panel_of_a_grid_is_named_by_its_own_title():
    figure = make_subplots(rows=1, cols=2, subplot_titles=("head 0", "head 1"))
    figure.add_trace(go.Heatmap(z=[[1.0, 2.0]]), row=1, col=1)
    figure.add_trace(go.Heatmap(z=[[3.0, -1.0]]), row=1, col=2)
    text = describe(figure, "every head")
    assert text.startswith("every head: head 0, a heatmap of 1 row by 2 columns, values from 1.00 to 2.00")
    assert "head 1, a heatmap of 1 row by 2 columns, values from -1.00 to 3.00; the largest at row 0, column 0" in text


def test_bars_and_lines_give_their_count_and_extremes_and_a_long_figure_counts_the_rest():
    bars = go.Figure(go.Bar(x=[" Paris", " Lyon"], y=[0.77, 0.05], name="next token"))
    assert describe(bars, "top 2") == "top 2: 2 bars (next token), the tallest “Paris” at 0.77."
    lines = go.Figure([go.Scatter(y=np.sin(np.arange(50) / 5), name=f"i = {i}") for i in range(5)])
    text = describe(lines)
    assert text.startswith("A line i = 0 of 50 points, from -1.00 to 1.00")
    assert text.endswith("and 2 more traces.")


def test_a_figure_without_numbers_says_so_instead_of_failing():
    assert describe(go.Figure(), "nothing") == "nothing: a figure without data."
    assert describe(go.Figure(go.Heatmap(z=[[np.nan]]))) == "An empty heatmap."


def test_larger_text_for_a_projector_scales_every_font_and_leaves_the_original_alone():
    from lessons.common.plots import FONT, with_larger_text

    figure = go.Figure(go.Heatmap(z=[[1.0]], texttemplate="%{z}", textfont=dict(size=12)))
    figure.update_layout(title=dict(text="t", font=dict(size=20)), xaxis=dict(tickfont=dict(size=10)))
    figure.add_annotation(text="note", font=dict(size=14))
    larger = with_larger_text(figure, 1.5)
    assert larger.layout.font.size == round(FONT["size"] * 1.5)
    assert (larger.layout.title.font.size, larger.layout.xaxis.tickfont.size) == (30, 15)
    assert (larger.layout.annotations[0].font.size, larger.data[0].textfont.size) == (21, 18)
    assert (figure.layout.title.font.size, figure.data[0].textfont.size) == (20, 12)  # a cached figure stays


def test_larger_text_moves_upright_colour_bar_titles_beside_the_bar_where_its_top_label_cannot_reach():
    from lessons.common.plots import with_larger_text

    figure = go.Figure(go.Heatmap(z=[[1.0]], colorbar=dict(title="weight")))
    figure.add_trace(go.Heatmap(z=[[1.0]], colorbar=dict(title="below", orientation="h")))
    figure.update_layout(coloraxis=dict(colorbar=dict(title="score")))
    larger = with_larger_text(figure, 1.35)
    assert larger.data[0].colorbar.title.side == "right" and larger.layout.coloraxis.colorbar.title.side == "right"
    assert larger.data[1].colorbar.title.side is None  # a bar lying under its chart keeps its title
    assert figure.data[0].colorbar.title.side is None


def test_larger_text_makes_a_colour_bar_measured_in_pixels_as_much_longer_as_its_numbers():
    from lessons.common.matrix_figures import COLOUR_BAR_UNDER
    from lessons.common.plots import with_larger_text

    figure = go.Figure(go.Heatmap(z=[[-40.0, 40.0]], coloraxis="coloraxis"))
    figure.add_trace(go.Heatmap(z=[[1.0]], colorbar=dict(len=0.5)))  # a fraction of the plot: grows with it
    figure.update_layout(coloraxis=dict(colorbar=COLOUR_BAR_UNDER))
    larger = with_larger_text(figure, 1.35)
    assert larger.layout.coloraxis.colorbar.len == round(COLOUR_BAR_UNDER["len"] * 1.35)
    assert larger.data[1].colorbar.len == 0.5
    assert figure.layout.coloraxis.colorbar.len == COLOUR_BAR_UNDER["len"]  # a cached figure stays
