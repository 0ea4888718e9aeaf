"""Figures of a decoder at work: every head's attention at once, next-token probabilities step by step, the
top candidates of one step (`lessons.common.next_token_figures`), and each model's loss on every true next token
under teacher forcing.

Token labels go through `safe_label` (via `token_names`): "<bos>" and a user's "<b>" are shown as written.
Attention figures draw the diagonal's edge on every panel, so weight on the future is easy to spot.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import numpy.typing as npt
import plotly.graph_objects as go

from lessons.common.cell_numbers import CELL_FONT
from lessons.common.matrix_figures import finish_panels, panel_axes, panel_grid, token_axes, token_names
from lessons.common.plots import ATTENTION_SCALE, compact, safe_label, style

EDGE_COLOUR = "#E4572E"  # the diagonal's edge: right of it is the future
MODEL_COLOURS = ("#5B4BDB", "#E4572E", "#17BEBB")
LOSS_FLOOR = 1e-12  # a log axis cannot draw a loss of exactly 0


def future_edge(num_tokens: int) -> str:
    """An SVG path along the right edge of the allowed cells (key ≤ query), in cell coordinates: every
    cell to its right is a key the query should not see."""
    corners = [(0.5, -0.5)]
    for query in range(num_tokens - 1):
        corners += [(query + 0.5, query + 0.5), (query + 1.5, query + 0.5)]
    corners.append((num_tokens - 0.5, num_tokens - 0.5))
    return "M " + " L ".join(f"{x},{y}" for x, y in corners)


def layer_head_grid(
    attention,
    labels: Sequence[str],
    title: str = "",
    positions: Sequence[int] | None = None,
    show_edge: bool = True,
) -> go.Figure:
    """(L, H, T, T) weights as an L × H grid of heatmaps (layer l is row l, head h column h, both from 0),
    on one shared 0–1 colour scale, with the hovered cell's layer, head, query, key and weight. Keys are
    labelled once, over the first layer; queries once per layer, at the left."""
    weights = compact(attention)
    layers, heads, num_tokens = weights.shape[0], weights.shape[1], weights.shape[2]
    names = token_names(labels, positions)
    titles = [f"layer {layer} · head {head}" for layer in range(layers) for head in range(heads)]
    figure, height = panel_grid(titles, heads, num_tokens)
    for layer in range(layers):
        for head in range(heads):
            figure.add_trace(
                go.Heatmap(
                    z=weights[layer, head],
                    x=names,
                    y=names,
                    name=f"layer {layer} head {head}",
                    coloraxis="coloraxis",
                    xgap=1,
                    ygap=1,
                    hovertemplate=(
                        f"layer {layer}, head {head}<br>query %{{y}}<br>key %{{x}}<br>"
                        "weight = %{z:.4f}<extra></extra>"
                    ),
                    **panel_axes(layer * heads + head),
                )
            )
    token_axes(figure, names)
    if show_edge:
        for panel in range(layers * heads):
            axes = panel_axes(panel)
            figure.add_shape(
                type="path",
                path=future_edge(num_tokens),
                xref=axes["xaxis"],
                yref=axes["yaxis"],
                line=dict(color=EDGE_COLOUR, width=1.5),
            )
    figure.update_layout(coloraxis=dict(colorscale=ATTENTION_SCALE, cmin=0.0, cmax=1.0, colorbar=dict(title="weight")))
    return finish_panels(figure, title, height, None)


def next_token_heatmap(
    probabilities,
    step_labels: Sequence[str],
    vocabulary: Sequence[str],
    chosen_ids: Sequence[int],
    title: str = "",
) -> go.Figure:
    """(N, V) next-token probabilities, one row per generation step, one column per vocabulary token, on
    a 0–1 scale; the token each step chose is ticked."""
    values = compact(probabilities)
    columns = [safe_label(token) for token in vocabulary]
    rows = [safe_label(label) for label in step_labels]
    ticks = np.full(values.shape, "", dtype=object)
    ticks[np.arange(len(chosen_ids)), list(chosen_ids)] = "✓"
    figure = go.Figure(
        go.Heatmap(
            z=values,
            x=columns,
            y=rows,
            name="probability",
            colorscale=ATTENTION_SCALE,
            zmin=0.0,
            zmax=1.0,
            xgap=1,
            ygap=1,
            text=ticks.tolist(),
            texttemplate="%{text}",
            textfont=dict(CELL_FONT, color="white"),
            colorbar=dict(title="probability"),
            hovertemplate="%{y}<br>next token %{x}<br>probability = %{z:.4g}<extra></extra>",
        )
    )
    figure.update_xaxes(type="category", automargin=True, title="next token")
    figure.update_yaxes(type="category", autorange="reversed", automargin=True)
    return style(figure, title, height=int(min(640, 190 + 34 * len(rows))))


def target_loss_figure(
    position_labels: Sequence[str],
    losses: Mapping[str, npt.ArrayLike],
    title: str = "",
) -> go.Figure:
    """Under teacher forcing, each model's loss −log p(true next token) position by position, one line of
    dots per model, on a log axis: 10⁻⁸ and 10⁻³ both mean "almost surely
    right" on a probability axis, but one model is a hundred thousand times surer. Losses below
    LOSS_FLOOR are drawn at the floor (the hover gives the exact value)."""
    names = [safe_label(label) for label in position_labels]
    traces = []
    for (model, values), colour in zip(losses.items(), MODEL_COLOURS):
        exact = np.asarray(values, dtype=float)
        traces.append(
            go.Scatter(
                x=names,
                y=np.maximum(exact, LOSS_FLOOR),
                customdata=exact,
                name=safe_label(model),
                mode="lines+markers",
                marker=dict(color=colour, size=10),
                line=dict(color=colour, width=1.5),
                hovertemplate=f"{safe_label(model)}<br>%{{x}}<br>loss = %{{customdata:.3g}}<extra></extra>",
            )
        )
    figure = go.Figure(traces)
    figure.update_xaxes(type="category", automargin=True)
    figure.update_yaxes(type="log", title="−log p(true next token)", exponentformat="power", automargin=True)
    figure.update_layout(legend=dict(orientation="h", y=-0.3))
    return style(figure, title, height=400)
