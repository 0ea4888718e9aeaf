"""Figures of the encoder stack: attention of every layer and head, each token's vector from layer to layer,
the main path's norms, the feed-forward activations and the classification head.

Heatmaps here use categorical axes whose labels are the tokens numbered by position ("2: flies"), so a
hover names its token without a per-cell copy of the labels; values travel as float32, which keeps a
512-token figure small.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from lessons.common.labels import token_label
from lessons.common.matrix_figures import token_names
from lessons.common.plots import ATTENTION_SCALE, DIVERGING_SCALE, as_array, compact, safe_label, style

HIGHLIGHT = "#d62728"
MAIN_COLOR = "#4c4cc9"
SECOND_COLOR = "#e07b00"
MAP_PIXELS = 95  # height of one small map in the overview
SUBPLOT_TITLE_ROOM = 30  # pixels a subplot's title takes above its plot
# Attention weights lie in [0, 1]: the overview and the full map share this one colour range, so that equal
# shades mean equal weights on both (a pooled cell is a mean weight, on the same scale).
WEIGHT_RANGE = (0.0, 1.0)


def _category_heatmap(
    values,
    row_labels: Sequence[str],
    column_labels: Sequence[str],
    colorscale: str,
    zmin: float | None,
    zmax: float | None,
    value_name: str,
    value_format: str,
    row_title: str = "",
    column_title: str = "",
) -> go.Figure:
    """A heatmap whose rows and columns are named by (already escaped, unique) labels; row 0 on top."""
    figure = go.Figure(
        go.Heatmap(
            z=compact(values),
            x=list(column_labels),
            y=list(row_labels),
            colorscale=colorscale,
            zmin=zmin,
            zmax=zmax,
            hoverongaps=False,
            hovertemplate=f"%{{y}} · %{{x}}<br>{value_name} = %{{z:{value_format}}}<extra></extra>",
        )
    )
    figure.update_xaxes(type="category", side="top", title=column_title, showgrid=False)
    figure.update_yaxes(type="category", autorange="reversed", title=row_title, showgrid=False)
    return figure


def _styled_with_top_axis(figure: go.Figure, title: str, height: int) -> go.Figure:
    """The common look, with room above the plot for the token labels of a top axis, however long (the
    title then stands above them: it pushes the margin further itself)."""
    return style(figure, title, height=height).update_xaxes(automargin=True)


# ---------------------------------------------------------------------------------------------------------
# Attention


def _block_label(block: tuple[int, int], tokens: Sequence[str]) -> str:
    start, end = block
    return safe_label(token_label(start, tokens[start])) if end - start == 1 else f"tokens {start}–{end - 1}"


def attention_overview(
    pooled_weights,
    blocks: Sequence[tuple[int, int]],
    tokens: Sequence[str],
    selected: tuple[int, int] | None = None,
    title: str = "",
) -> go.Figure:
    """Every layer's and head's (pooled) attention map tiled in one grid, layers down and heads across.

    `pooled_weights` is (L, H, n, n); `blocks` names the tokens behind each of the n rows and columns;
    `selected` (layer, head), counted from 0, gets a red frame.
    """
    weights = compact(pooled_weights)
    num_layers, num_heads, size, _ = weights.shape
    stride = size + 1  # one empty row/column between neighbouring maps
    mosaic = np.full((num_layers * stride - 1, num_heads * stride - 1), np.nan, dtype=np.float32)
    for layer in range(num_layers):
        for head in range(num_heads):
            mosaic[layer * stride : layer * stride + size, head * stride : head * stride + size] = weights[layer, head]
    names = [_block_label(block, tokens) for block in blocks]
    row_labels = _with_gaps([[f"layer {layer} · query {name}" for name in names] for layer in range(num_layers)])
    column_labels = _with_gaps([[f"head {head} · key {name}" for name in names] for head in range(num_heads)])
    figure = _category_heatmap(
        mosaic,
        row_labels,
        column_labels,
        ATTENTION_SCALE,
        *WEIGHT_RANGE,
        "mean weight" if size < len(tokens) else "weight",
        ".3f",
    )
    figure.update_traces(colorbar_title_text="weight")
    middle = size // 2
    figure.update_xaxes(
        tickvals=[column_labels[head * stride + middle] for head in range(num_heads)],
        ticktext=[f"head {head}" for head in range(num_heads)],
    )
    figure.update_yaxes(
        tickvals=[row_labels[layer * stride + middle] for layer in range(num_layers)],
        ticktext=[f"layer {layer}" for layer in range(num_layers)],
    )
    if selected is not None:
        layer, head = selected
        figure.add_shape(
            type="rect",
            xref="x",
            yref="y",
            line=dict(color=HIGHLIGHT, width=3),
            x0=head * stride - 0.5,
            x1=head * stride + size - 0.5,
            y0=layer * stride - 0.5,
            y1=layer * stride + size - 0.5,
        )
    return style(figure, title, height=num_layers * MAP_PIXELS + 70)


def _with_gaps(groups: list[list[str]]) -> list[str]:
    """Labels of consecutive maps with one unique placeholder label for each gap between them."""
    labels: list[str] = []
    for index, group in enumerate(groups):
        if index:
            labels.append(f"gap {index}")  # never shown: ticks sit on the maps and gap cells take no hover
        labels.extend(group)
    return labels


def attention_map(
    weights,
    query_tokens: Sequence[str],
    key_tokens: Sequence[str],
    first_query: int = 0,
    title: str = "",
) -> go.Figure:
    """One head's attention weights at full resolution: row t is how query token t spreads its attention."""
    figure = _category_heatmap(
        weights,
        token_names(query_tokens, range(first_query, first_query + len(query_tokens))),
        token_names(key_tokens),
        ATTENTION_SCALE,
        *WEIGHT_RANGE,
        "weight",
        ".4f",
        row_title="query (attending)",
        column_title="key (attended to)",
    )
    figure.update_traces(colorbar_title_text="weight")
    row_pixels = 16 if len(key_tokens) <= 64 else 12
    return _styled_with_top_axis(figure, title, height=max(180 + row_pixels * len(query_tokens), 320))


# ---------------------------------------------------------------------------------------------------------
# Each token's vector through the stack


def layer_token_heatmap(
    values,
    row_labels: Sequence[str],
    tokens: Sequence[str],
    title: str = "",
    colorscale: str = "Viridis",
    zmin: float | None = None,
    zmax: float | None = None,
    value_name: str = "value",
    value_format: str = ".3f",
    marked: Sequence[tuple[int, int]] = (),
) -> go.Figure:
    """A (depth × token) table of one number per token per layer, e.g. ‖h‖ or a cosine similarity.

    `marked` (row, token position) cells, counted from 0, get a red frame: an answer to point at."""
    rows = [safe_label(label) for label in row_labels]
    figure = _category_heatmap(
        values,
        rows,
        token_names(tokens),
        colorscale,
        zmin,
        zmax,
        value_name,
        value_format,
        column_title="token",
    )
    for row, position in marked:  # a category axis puts category i at coordinate i
        figure.add_shape(
            type="rect",
            xref="x",
            yref="y",
            line=dict(color=HIGHLIGHT, width=3),
            x0=position - 0.5,
            x1=position + 0.5,
            y0=row - 0.5,
            y1=row + 0.5,
        )
    return _styled_with_top_axis(figure, title, height=150 + 34 * len(rows))


def word_similarity_chart(similarity, depth_labels: Sequence[str], title: str = "") -> go.Figure:
    """cos(word in sentence A, word in sentence B) at the embeddings and after every block."""
    values = as_array(similarity)
    figure = go.Figure(
        go.Scatter(
            x=[safe_label(label) for label in depth_labels],
            y=values,
            mode="lines+markers+text",
            text=[f"{value:.3f}" for value in values],
            textposition="top center",
            line=dict(color=MAIN_COLOR, width=3),
            marker=dict(size=9),
            hovertemplate="%{x}<br>cosine similarity = %{y:.4f}<extra></extra>",
        )
    )
    figure.update_yaxes(title="cosine similarity", range=[min(0.0, float(values.min()) - 0.05), 1.08])
    figure.update_xaxes(type="category")
    return style(figure, title, height=380)


# ---------------------------------------------------------------------------------------------------------
# Layer norm placement


def main_path_chart(
    norms,
    checkpoint_labels: Sequence[str],
    reference_norm: float,
    highlight: tuple[int, int] | None = None,
    title: str = "",
) -> go.Figure:
    """‖vector‖ at successive points of the main path: the mean over tokens, with the range min..max shaded.

    `reference_norm` (√D) is drawn as a dashed line; `highlight` [start, end) shades the chosen block.
    """
    values = as_array(norms)
    labels = [safe_label(label) for label in checkpoint_labels]
    figure = go.Figure()
    figure.add_trace(
        go.Scatter(
            x=labels,
            y=values.max(axis=1),
            mode="lines",
            line=dict(width=0),
            name="largest token",
            hovertemplate="%{x}<br>max ‖h‖ = %{y:.2f}<extra></extra>",
        )
    )
    figure.add_trace(
        go.Scatter(
            x=labels,
            y=values.min(axis=1),
            mode="lines",
            line=dict(width=0),
            fill="tonexty",
            fillcolor="rgba(76,76,201,0.18)",
            name="smallest token",
            hovertemplate="%{x}<br>min ‖h‖ = %{y:.2f}<extra></extra>",
        )
    )
    figure.add_trace(
        go.Scatter(
            x=labels,
            y=values.mean(axis=1),
            mode="lines+markers",
            name="mean over tokens",
            line=dict(color=MAIN_COLOR, width=3),
            hovertemplate="%{x}<br>mean ‖h‖ = %{y:.2f}<extra></extra>",
        )
    )
    figure.add_hline(
        y=reference_norm,
        line=dict(dash="dash", color="grey"),
        annotation_text=f"√D = {reference_norm:.1f}",
        annotation_position="top left",
    )
    if highlight is not None:
        start, end = highlight
        figure.add_vrect(x0=start - 0.5, x1=end - 0.5, fillcolor=HIGHLIGHT, opacity=0.08, line_width=0)
    figure.update_xaxes(type="category", tickangle=-90, automargin=True)  # upright: a phone fits them all
    figure.update_yaxes(title="‖h‖ (L2 norm)", rangemode="tozero")
    return style(figure, title, height=430)


def norm_growth_chart(
    pre_norms,
    post_norms,
    reference_norm: float,
    pre_final_norms=None,
    title: str = "",
) -> go.Figure:
    """Mean ‖h‖ on the main path after each block of two stacks that differ only in where LayerNorm sits."""
    pre, post = as_array(pre_norms).mean(axis=1), as_array(post_norms).mean(axis=1)
    depths = ["input"] + [f"after block {index}" for index in range(len(pre) - 1)]
    figure = go.Figure()
    figure.add_trace(
        go.Scatter(
            x=depths,
            y=pre,
            mode="lines+markers+text",
            name="pre-LN",
            text=[f"{value:.1f}" for value in pre],
            textposition="top center",
            line=dict(color=SECOND_COLOR, width=3),
            hovertemplate="pre-LN, %{x}<br>mean ‖h‖ = %{y:.3f}<extra></extra>",
        )
    )
    figure.add_trace(
        go.Scatter(
            x=depths,
            y=post,
            mode="lines+markers+text",
            name="post-LN",
            text=[f"{value:.1f}" for value in post],
            textposition="bottom center",
            line=dict(color=MAIN_COLOR, width=3),
            hovertemplate="post-LN, %{x}<br>mean ‖h‖ = %{y:.3f}<extra></extra>",
        )
    )
    if pre_final_norms is not None:
        final = float(as_array(pre_final_norms).mean())
        figure.add_trace(
            go.Scatter(
                x=["pre-LN final LayerNorm"],
                y=[final],
                mode="markers",
                name="pre-LN final norm",
                marker=dict(color=SECOND_COLOR, symbol="diamond-open", size=12),
                hovertemplate="after the final LayerNorm<br>mean ‖h‖ = %{y:.3f}<extra></extra>",
            )
        )
    figure.add_hline(
        y=reference_norm,
        line=dict(dash="dash", color="grey"),
        annotation_text=f"√D = {reference_norm:.1f}",
        annotation_position="top left",
    )
    figure.update_xaxes(type="category")
    figure.update_yaxes(title="mean ‖h‖ over tokens", rangemode="tozero")
    return style(figure, title, height=400)


# ---------------------------------------------------------------------------------------------------------
# Feed-forward activations


def activation_heatmap(
    activation,
    tokens: Sequence[str],
    neuron_ids: Sequence[int],
    first_token: int = 0,
    title: str = "",
) -> go.Figure:
    """(tokens × chosen neurons) hidden activations, coloured around zero."""
    values = as_array(activation)
    limit = float(np.abs(values).max()) or 1.0
    figure = _category_heatmap(
        values,
        token_names(tokens, range(first_token, first_token + len(tokens))),
        [f"n{neuron}" for neuron in neuron_ids],
        DIVERGING_SCALE,
        -limit,
        limit,
        "activation",
        ".3f",
        row_title="token",
        column_title="hidden neuron",
    )
    return _styled_with_top_axis(figure, title, height=max(320, 180 + 16 * len(tokens)))


def positive_fraction_chart(fractions, selected_layer: int | None = None, title: str = "") -> go.Figure:
    """The share of hidden activations above zero in each layer; `selected_layer` (from 0) in red."""
    values = as_array(fractions)
    colors = [HIGHLIGHT if index == selected_layer else MAIN_COLOR for index in range(len(values))]
    figure = go.Figure(
        go.Bar(
            x=[f"layer {index}" for index in range(len(values))],
            y=values,
            marker_color=colors,
            text=[f"{value:.1%}" for value in values],
            textposition="outside",
            hovertemplate="%{x}<br>%{y:.2%} of activations > 0<extra></extra>",
        )
    )
    figure.update_yaxes(
        title="share of activations > 0", tickformat=".0%", range=[0, max(0.5, float(values.max()) * 1.2)]
    )
    return style(figure, title, height=330)


# ---------------------------------------------------------------------------------------------------------
# Classification head


def cls_vector_chart(cls_vector, summary=None, title: str = "") -> go.Figure:
    """The D numbers of h[CLS] and, when a pooler made one, of the summary the head actually reads."""
    vectors = [("h[CLS]", as_array(cls_vector), MAIN_COLOR)]
    if summary is not None:
        vectors.append(("pooler output tanh(W_p·h[CLS] + b_p)", as_array(summary), SECOND_COLOR))
    figure = make_subplots(
        rows=len(vectors),
        cols=1,
        shared_xaxes=True,
        vertical_spacing=0.12,
        subplot_titles=[name for name, _, _ in vectors],
    )
    for row, (name, values, color) in enumerate(vectors, start=1):
        figure.add_trace(
            go.Bar(
                x=np.arange(len(values)),
                y=values,
                marker_color=color,
                name=name,
                hovertemplate="dimension %{x}<br>value = %{y:.4f}<extra></extra>",
            ),
            row=row,
            col=1,
        )
    figure.update_xaxes(title="dimension", row=len(vectors), col=1)
    figure.update_layout(showlegend=False, bargap=0)
    figure = style(figure, title, height=130 + 150 * len(vectors))
    # The title pushes the margin clear of the plot, not of the first subplot's title above it: room for both.
    return figure.update_layout(margin_t=SUBPLOT_TITLE_ROOM + 30) if title else figure


def classifier_output_chart(logits, probabilities, title: str = "") -> go.Figure:
    """Logits (any real numbers) beside the softmax probabilities they become (summing to 1)."""
    logit_values, probability_values = as_array(logits), as_array(probabilities)
    labels = [f"label {index}" for index in range(len(logit_values))]
    figure = make_subplots(rows=1, cols=2, subplot_titles=("logits", "softmax(logits)"))
    figure.add_trace(
        go.Bar(
            x=labels,
            y=logit_values,
            marker_color=SECOND_COLOR,
            name="logit",
            text=[f"{value:.3f}" for value in logit_values],
            textposition="outside",
            hovertemplate="%{x}<br>logit = %{y:.4f}<extra></extra>",
        ),
        row=1,
        col=1,
    )
    figure.add_trace(
        go.Bar(
            x=labels,
            y=probability_values,
            marker_color=MAIN_COLOR,
            name="probability",
            text=[f"{value:.3f}" for value in probability_values],
            textposition="outside",
            hovertemplate="%{x}<br>probability = %{y:.4f}<extra></extra>",
        ),
        row=1,
        col=2,
    )
    figure.update_yaxes(range=[0, 1.1], row=1, col=2)
    figure.update_layout(showlegend=False)
    return style(figure, title, height=340)


# ---------------------------------------------------------------------------------------------------------
