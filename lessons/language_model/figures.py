"""The language-model lesson's figures: pure functions of arrays and labels (plotly only, never streamlit).

The next-token bars and the attention heatmap are the causal lesson's own, so that the same quantity looks
the same on every page; what is new here is the chart of a text being written, step by step.
"""

from __future__ import annotations

from collections.abc import Sequence

import plotly.graph_objects as go

from lessons.common.matrix_figures import token_names, weights_figure
from lessons.common.next_token_figures import CHOSEN_COLOUR, OTHER_COLOUR, candidates_figure
from lessons.common.plots import style

FRAME_COLOUR = "#E4572E"  # the app's second colour: it stands out on the purple attention scale


def next_token_figure(
    pieces: Sequence[str], probabilities: Sequence[float], title: str, marked: int | None = None
) -> go.Figure:
    """The k most probable next tokens as bars, the most probable on top; the bar at index `marked`, if any,
    drawn darker (an exercise's answer)."""
    return candidates_figure(pieces, probabilities, title, chosen=marked)


def attention_figure(weights, pieces: Sequence[str], positions: Sequence[int], title: str) -> go.Figure:
    """One head's causal attention weights (queries down, keys across) on the fixed 0–1 scale."""
    return weights_figure(weights, pieces, title, positions)


def first_token_figure(weights, pieces: Sequence[str], positions: Sequence[int], title: str) -> go.Figure:
    """One head's attention map with the column of the first token framed: the weight each query gives it."""
    figure = attention_figure(weights, pieces, positions, title)
    figure.add_shape(
        type="rect",
        xref="x",
        yref="y domain",
        x0=-0.5,  # a category axis puts its first category at 0: the frame spans exactly the first column
        x1=0.5,
        y0=0,
        y1=1,
        line=dict(color=FRAME_COLOUR, width=3),
    )
    return figure


def writing_figure(
    pieces: Sequence[str], probabilities: Sequence[float], model_probabilities: Sequence[float], title: str
) -> go.Figure:
    """Each written token's probability, step by step: in the distribution it was drawn from (bars) and in the
    model's own softmax (dots; the two differ once temperature, top-k or top-p reshape the distribution)."""
    steps = token_names(pieces)
    figure = go.Figure(
        [
            go.Bar(
                x=steps,
                y=list(probabilities),
                name="drawn from",
                marker_color=CHOSEN_COLOUR,
                hovertemplate="step %{x}<br>probability it was drawn with = %{y:.4f}<extra></extra>",
            ),
            go.Scatter(
                x=steps,
                y=list(model_probabilities),
                name="model's softmax",
                mode="markers",
                marker=dict(color=OTHER_COLOUR, size=9, line=dict(color=CHOSEN_COLOUR, width=1)),
                hovertemplate="step %{x}<br>model's probability = %{y:.4f}<extra></extra>",
            ),
        ]
    )
    figure.update_xaxes(type="category", title="step and token written", automargin=True, tickangle=-60)
    figure.update_yaxes(range=[0, 1.05], title="probability", automargin=True)
    figure.update_layout(legend=dict(orientation="h", x=0, y=-0.45, yanchor="top"))
    return style(figure, title, height=420)
