"""Figures of the training lesson: the loss curve, drawn again and again while a model trains, the trained
model's attention on an example word, and the exercises' reveals: a fresh model's first bets, and where a
model's parameters are.

The curve is redrawn a few times a second, so it is kept light: losses go out as float32 (plotly sends
numpy arrays as binary) and the step axis is implicit (first step 1, one per point), so a point costs
4 bytes, not a pair of JSON numbers.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np
import plotly.graph_objects as go

from lessons.common.matrix_figures import weights_figure
from lessons.common.plots import heatmap, safe_label, style
from lessons.training.live import AttentionView

STEP_COLOUR = "#B9B3F0"  # every step's loss: pale, it is noisy
AVERAGE_COLOUR = "#5B4BDB"  # the moving average: the app's first colour
CHANCE_COLOUR = "#E4572E"


def loss_curve(
    losses: Sequence[float],
    planned_steps: int,
    smoothed: Sequence[float] | None = None,
    chance_loss: float | None = None,
    title: str = "",
    height: int = 360,
) -> go.Figure:
    """One point per training step (step 1 first) on a log axis, with an optional moving average and the
    loss of a uniform guess. The step axis spans all `planned_steps`, so a live curve grows into its frame."""
    values = np.asarray(losses, dtype=np.float32)
    figure = go.Figure()
    figure.add_trace(
        go.Scatter(
            y=values,
            x0=1,
            dx=1,
            mode="lines",
            name="loss of each step",
            line=dict(color=STEP_COLOUR, width=1),
            hovertemplate="step %{x}<br>loss %{y:.4g}<extra></extra>",
        )
    )
    if smoothed is not None:
        figure.add_trace(
            go.Scatter(
                y=np.asarray(smoothed, dtype=np.float32),
                x0=1,
                dx=1,
                mode="lines",
                name="moving average",
                line=dict(color=AVERAGE_COLOUR, width=2.5),
                hovertemplate="step %{x}<br>average %{y:.4g}<extra></extra>",
            )
        )
    if chance_loss is not None:
        # On a log axis plotly places an annotation at the log10 of its y (a shape at y itself): given 3.4, the
        # label stood at 10^3.4 ≈ 2500, far above its line, and stretched the axis up to it.
        chance_line(figure, chance_loss, f"guessing: {chance_loss:.2f}", label_y=math.log10(chance_loss))
    figure.update_xaxes(title="training step", range=[0, max(planned_steps, len(values), 1) + 1])
    drawn = (values, [] if smoothed is None else smoothed, [] if chance_loss is None else [chance_loss])
    figure.update_yaxes(title="loss (cross-entropy, log scale)", type="log", range=log_axis_range(*drawn))
    figure.update_yaxes(**log_axis_ticks(figure.layout.yaxis.range))
    figure.update_layout(legend=dict(orientation="h", x=0, y=-0.2), uirevision="loss")
    return style(figure, title, height=height)


def log_axis_range(*lines: Sequence[float] | np.ndarray, margin: float = 1.5) -> list[float] | None:
    """Both ends of a log axis, in log10 units as plotly wants them: `margin` times below the lowest and above
    the highest finite positive value drawn (None when there is none: plotly then finds the range itself).

    Both ends, always: drawn by Streamlit, a range with an open end (`[None, top]`) is now and then dropped
    in the browser (one page load in three, here), and plotly stretches the axis over everything again."""
    values = np.concatenate([np.asarray(line, dtype=np.float64).ravel() for line in lines]) if lines else np.empty(0)
    values = values[np.isfinite(values) & (values > 0)]
    if not values.size:
        return None
    return [math.log10(values.min() / margin), math.log10(values.max() * margin)]


def log_axis_ticks(log_range: Sequence[float] | None) -> dict:
    """Ticks at 1, 2 and 5 times each power of ten in a log axis's range (log10 units), each labelled with its
    whole value, 0.5 as "0.5": plotly's own labels give the ticks between powers of ten their first digit
    alone (the loss axis read "5, 2, 1, 5, 2, 0.1" top to bottom). Past three decades, powers of ten only."""
    if log_range is None:
        return {}
    bottom, top = log_range
    steps = (1, 2, 5) if top - bottom <= 3 else (1,)
    values = [
        step * 10.0**power
        for power in range(math.floor(bottom), math.ceil(top) + 1)
        for step in steps
        if bottom <= math.log10(step) + power <= top
    ]
    return dict(tickvals=values, ticktext=[f"{value:g}" for value in values])


def first_bets_figure(tokens: Sequence[str], probabilities: Sequence[float], title: str = "") -> go.Figure:
    """A fresh model's bet on each token of its vocabulary, averaged over the answer letters of its first batch,
    one bar per token in id order, with the level of an even bet, 1 / V, drawn as a dashed line: the bars of a
    model that knows nothing stand close to it."""
    values = np.asarray(probabilities, dtype=np.float64)
    names = [safe_label(token) for token in tokens]
    figure = go.Figure(
        go.Bar(
            x=names,
            y=values,
            name="mean probability",
            marker_color=AVERAGE_COLOUR,
            hovertemplate="%{x}<br>mean probability %{y:.4f}<extra></extra>",
        )
    )
    even = 1 / len(values)
    # The line runs through the bars, which stand close to it: its label goes in the free band above them,
    # where it is not grey text on the bars' colour.
    tallest = max(values.max(), even)
    chance_line(figure, even, f"dashed: an even bet, 1/{len(values)} = {even:.4f}", label_y=tallest * 1.05)
    # Upright: 30 labels turned by 60° overlapped at 853 px (a laptop zoomed to 150 %).
    figure.update_xaxes(type="category", title="token", tickangle=-90)
    # A short axis title: "probability, averaged over the answer letters" ran up past the axis into the title.
    figure.update_yaxes(title="mean probability", range=[0, tallest * 1.4])
    return style(figure, title, height=360)


def parameters_figure(parts: Mapping[str, int], title: str = "") -> go.Figure:
    """How many parameters each part of a model holds, one bar per part, the largest at the top."""
    ordered = sorted(parts.items(), key=lambda item: item[1])  # plotly draws the first bar at the bottom
    figure = go.Figure(
        go.Bar(
            x=[count for _, count in ordered],
            y=[safe_label(name) for name, _ in ordered],
            orientation="h",
            marker_color=AVERAGE_COLOUR,
            text=[f"{count:,}" for _, count in ordered],
            textposition="outside",
            cliponaxis=False,
            hovertemplate="%{y}<br>%{x:,} parameters<extra></extra>",
        )
    )
    figure.update_xaxes(title="parameters", range=[0, max(count for _, count in ordered) * 1.25])
    figure.update_yaxes(type="category", automargin=True)
    return style(figure, title, height=int(120 + 34 * len(ordered)))


def chance_line(figure: go.Figure, y: float, text: str, label_y: float) -> None:
    """The dashed line of a guess that knows nothing, labelled at the plot's right end (`label_y` is where the
    label goes in the axis's own units: log10(y) on a log axis)."""
    figure.add_hline(y=y, line=dict(color=CHANCE_COLOUR, dash="dash", width=1.5))
    figure.add_annotation(
        text=text, x=1, xref="x domain", xanchor="right", y=label_y, yref="y", yanchor="bottom", showarrow=False
    )


def example_attention_figure(view: AttentionView, layer: int, head: int) -> go.Figure:
    """One head's attention on the example word, on the fixed 0–1 scale.

    Self-attention reads one list of tokens: the app's attention matrix, whose key labels turn upwards and thin
    out where a phone leaves them too little room, with its colour bar under it. Cross-attention reads the source
    from the target, two lists: a matrix with its rows and columns named."""
    title, weights = f"{view.kind}, layer {layer}, head {head}", view.weights[layer, head]
    if view.kind == "self-attention":
        return weights_figure(weights, view.query_tokens, title)
    return heatmap(
        weights,
        view.query_tokens,
        view.key_tokens,
        title=title,
        zmin=0.0,
        zmax=1.0,
        row_title="reads (query)",
        column_title="is read (key)",
        hover_name="weight",
    )
