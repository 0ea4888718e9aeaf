"""The language-model lesson's figures: pure functions of arrays and labels (plotly only, never streamlit).

The next-token bars and the attention heatmap are the causal lesson's own, so that the same quantity looks
the same on every page; what is new here is the chart of a text being written, step by step.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import plotly.graph_objects as go

from lessons.common.labels import token_label
from lessons.common.matrix_figures import token_names, weights_figure
from lessons.common.next_token_figures import CHOSEN_COLOUR, OTHER_COLOUR, candidates_figure
from lessons.common.plots import heatmap, safe_label, style, with_measured_margins
from lessons.common.pooling import PooledMap, bin_labels

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


def whole_map_figure(whole: PooledMap, window: range, title: str) -> go.Figure:
    """One head's map of a whole long text, average-pooled (`pooling.average_pool`), with the window drawn at full
    resolution framed. Ticks name the first position of about eight blocks: 64 labels of "8–15" would collide."""
    rows = len(whole.row_bins)
    every = math.ceil(rows / 8)
    figure = heatmap(
        whole.values,
        [f"positions {label}" for label in bin_labels(whole.row_bins)],
        [f"positions {label}" for label in bin_labels(whole.column_bins)],
        title,
        zmin=0.0,
        row_title="queries",
        column_title="keys",
        hover_name="mean weight",
    )
    figure.update_traces(colorbar=dict(title=dict(text="mean<br>weight")))
    ticks = list(range(0, rows, every))
    figure.update_yaxes(tickvals=ticks, ticktext=[str(whole.row_bins[i][0]) for i in ticks], title="query position")
    figure.update_xaxes(tickvals=ticks, ticktext=[str(whole.column_bins[i][0]) for i in ticks], title="key position")
    first, last = window.start // whole.row_block, (window.stop - 1) // whole.row_block
    figure.add_shape(
        type="rect",
        x0=first - 0.5,
        x1=last + 0.5,
        y0=first - 0.5,
        y1=last + 0.5,
        line=dict(color=FRAME_COLOUR, width=2),
    )
    return with_measured_margins(style(figure, title, height=520), l=78, r=95, t=106)  # measured: r 86–95


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


def layer_head_figure(scores, title: str, score_name: str, zmax: float = 1.0) -> go.Figure:
    """An (L, H) map of one score, a row per layer and a column per query head, on a fixed 0–zmax scale so
    that two maps of the same score compare at a glance."""
    num_layers, num_heads = scores.shape
    figure = heatmap(
        scores,
        [f"layer {layer}" for layer in range(num_layers)],
        [f"head {head}" for head in range(num_heads)],
        title,
        zmin=0.0,
        zmax=zmax,
        row_title="layer",
        column_title="query head",
        hover_name=score_name,
    )
    figure.update_yaxes(
        tickvals=list(range(0, num_layers, 3)), ticktext=[str(layer) for layer in range(0, num_layers, 3)]
    )
    figure.update_xaxes(ticktext=[str(head) for head in range(num_heads)])
    return with_measured_margins(style(figure, title, height=560), l=72, r=90, t=106)  # measured: r 80–89


def divergence_figure(divergence, positions: Sequence[int], pieces: Sequence[str], title: str) -> go.Figure:
    """KL(final ‖ layer) after each layer, one line per position read through the lens. `divergence` is
    (L + 1, P) with the embeddings first: they are left out, their divergence (often over 100 nats) would
    flatten every other point against the axis."""
    layers = list(range(len(divergence) - 1))
    figure = go.Figure(
        [
            go.Scatter(
                x=layers,
                y=[float(value) for value in divergence[1:, column]],
                mode="lines+markers",
                name=safe_label(token_label(position, piece)),
                hovertemplate=f"after layer %{{x}}<br>{safe_label(token_label(position, piece))}: KL = %{{y:.3f}} nats"
                "<extra></extra>",
            )
            for column, (position, piece) in enumerate(zip(positions, pieces))
        ]
    )
    figure.update_xaxes(title="after layer", automargin=True)
    figure.update_yaxes(title="KL from the final guess (nats)", rangemode="tozero", automargin=True)
    figure.update_layout(legend=dict(orientation="h", x=0, y=-0.3, yanchor="top"))
    return style(figure, title, height=460)
