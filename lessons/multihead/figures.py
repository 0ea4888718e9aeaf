"""Figures of the multi-head lesson: heads side by side, a head view of lines between tokens, and the
pieces of the split → attend → concatenate → W_O path. Pure functions of arrays; nothing is computed
here beyond choosing what to draw."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go

from lessons.common.matrix_figures import axis_suffix, token_names
from lessons.common.plots import (
    ATTENTION_SCALE,
    DIVERGING_SCALE,
    as_array,
    compact,
    head_colour,
    head_dash,
    head_pattern,
    heatmap,
    safe_label,
    style,
)

MARK_COLOUR = "#e6550d"  # the frame around a panel or block an exercise's answer points to
MAX_TICK_LABELS = 24  # beyond this many tokens, labels move to the hover only
OPACITY_LEVELS = 5  # head-view lines are grouped into this many strengths
PANEL_HEIGHT = 260  # pixels per row of small maps, at least
PANEL_TICK_FONT = 10  # token labels around small maps
ROW_PIXELS = 14  # height a map gives each of its rows, so that every row keeps its label
SIMILARITY_SCALE = "Blues_r"  # cosines: white at 1 (unchanged), darker the further a vector turned
SIMILARITY_FLOORS = (0.99, 0.95, 0.9, 0.8, 0.5, 0.0, -1.0)  # where a cosine colour scale may start


def head_grid(maps, labels: Sequence[str], head_titles: Sequence[str], **options) -> go.Figure:
    """Small multiples: one (T, T) self-attention map per head of a layer, `maps` (H, T, T), all labelled
    with the same tokens (or pooled blocks). Options as for `map_panels`."""
    values = compact(maps)
    return map_panels(list(values), [labels] * len(values), head_titles, **options)


def panel_columns(labels: int) -> int:
    """How many maps of `labels` tokens stand side by side: as many as a desktop chart (about 800 px wide)
    holds with every column's label readable, about 12 px each."""
    for columns, most in ((4, 12), (3, 16), (2, MAX_TICK_LABELS)):
        if labels <= most:
            return columns
    return 4  # more labels than that move to the hover: the maps can be small


def map_panels(
    maps: Sequence,
    labels: Sequence[Sequence[str]],
    titles: Sequence[str],
    columns: int | None = None,
    zmax: float | None = None,
    title: str = "",
    panel_height: int | None = None,
    marked: int | None = None,
) -> go.Figure:
    """Square attention maps in a grid of panels, all on one colour scale from 0 to `zmax` (default: the
    largest value in any panel), so that the same shade means the same weight everywhere. The panel
    `marked` (an index into `maps`), when given, is framed: the one an exercise's answer points to.

    labels[k] names the rows (queries) and columns (keys) of maps[k]; labels must be distinct within a
    panel (use `labels.token_labels` or `pooling.bin_labels`); they are escaped here. Panels that share their
    labels are labelled once, rows on the left of the first column and columns under the lowest panel of each
    column, `columns` abreast (default: as many as keep every label readable, `panel_columns`). Panels with labels
    of their own (two sentences) stand two abreast at most, the second labelled on its right, so that no
    label is drawn over a neighbour.
    """
    values = [compact(panel) for panel in maps]
    names = [[safe_label(label) for label in panel_labels] for panel_labels in labels]
    shared = all(panel_names == names[0] for panel_names in names)
    if not shared and len(values) > 2:
        raise ValueError("panels with labels of their own stand two abreast at most")
    longest = max(len(panel_names) for panel_names in names)
    show_ticks = longest <= MAX_TICK_LABELS
    columns = min(columns or (panel_columns(longest) if shared else 2), len(values))
    rows = math.ceil(len(values) / columns)
    # Each row of a map gets room for its label; the title above each panel gets about 26 px.
    panel_height = panel_height or max(PANEL_HEIGHT, ROW_PIXELS * longest + 60)
    titles = [safe_label(text) for text in titles]
    layout = _panel_axes(rows, columns, titles, gap=0.025, title_gap=26 / panel_height)
    data = []
    for panel, (panel_values, panel_names) in enumerate(zip(values, names)):
        suffix = axis_suffix(panel)
        column = panel % columns
        lowest_in_column = panel + columns >= len(values)
        data.append(
            dict(
                type="heatmap",
                z=panel_values,
                x=panel_names,
                y=panel_names,
                coloraxis="coloraxis",
                xaxis=f"x{suffix}",
                yaxis=f"y{suffix}",
                hovertemplate=f"query %{{y}}<br>key %{{x}}<br>weight %{{z:.4f}}<extra>{titles[panel]}</extra>",
            )
        )
        layout[f"xaxis{suffix}"].update(
            type="category",
            showticklabels=show_ticks and (lowest_in_column or not shared),
            ticks="outside" if lowest_in_column or not shared else "",
            tickangle=-90,
            tickfont=dict(size=PANEL_TICK_FONT),
            automargin=True,
        )
        layout[f"yaxis{suffix}"].update(
            type="category",
            autorange="reversed",
            showticklabels=show_ticks and (column == 0 or not shared),
            ticks="outside" if column == 0 or not shared else "",
            side="right" if column > 0 and not shared else "left",
            tickfont=dict(size=PANEL_TICK_FONT),
            automargin=True,
        )
    if marked is not None:
        layout["shapes"] = [_frame(f"x{axis_suffix(marked)} domain", f"y{axis_suffix(marked)} domain")]
    largest = max(float(panel.max()) for panel in values)
    layout["coloraxis"] = dict(
        colorscale=ATTENTION_SCALE,
        cmin=0.0,
        cmax=largest if zmax is None else zmax,
        colorbar=colour_bar_below("weight"),
    )
    return style(go.Figure(dict(data=data, layout=layout)), title, height=panel_height * rows + 100)


def _frame(xref: str, yref: str, x0: float = 0.0, x1: float = 1.0, y0: float = 0.0, y1: float = 1.0) -> dict:
    """A thick rectangle drawn over a panel (axis "domain" references) or a block of cells (axis values)."""
    return dict(type="rect", xref=xref, yref=yref, x0=x0, x1=x1, y0=y0, y1=y1, line=dict(color=MARK_COLOUR, width=4))


def colour_bar_below(title: str) -> dict:
    """A horizontal colour bar at the foot of a chart: on a phone a bar beside the chart would take a fifth
    of its width."""
    return dict(
        title=dict(text=title, side="bottom"),
        orientation="h",
        thickness=12,
        len=0.6,
        x=0.5,
        xanchor="center",
        yref="container",
        y=0,
        yanchor="bottom",
        tickfont=dict(size=PANEL_TICK_FONT),
    )


def _panel_axes(rows: int, columns: int, titles: Sequence[str], gap: float, title_gap: float | None = None) -> dict:
    """Layout axes for a rows × columns grid of panels (row 0 at the top), each titled above, `gap` apart;
    with `title_gap`, rows are only that share of their height apart, room for the titles alone."""
    layout: dict[str, object] = {}
    annotations: list[dict[str, object]] = []
    for panel, text in enumerate(titles):
        row, column = divmod(panel, columns)
        left, right = column / columns + gap / 2, (column + 1) / columns - gap / 2
        if title_gap is None:
            bottom, top = 1 - (row + 1) / rows + gap, 1 - row / rows - gap / 2
        else:  # rows stand close: only the lowest row has labels under it
            bottom, top = 1 - (row + 1) / rows, 1 - (row + title_gap) / rows
        suffix = axis_suffix(panel)
        layout[f"xaxis{suffix}"] = dict(domain=[left, right], anchor=f"y{suffix}")
        layout[f"yaxis{suffix}"] = dict(domain=[bottom, top], anchor=f"x{suffix}")
        annotations.append(
            dict(
                text=text,
                x=(left + right) / 2,
                y=top,
                xref="paper",
                yref="paper",
                xanchor="center",
                yanchor="bottom",
                showarrow=False,
            )
        )
    layout["annotations"] = annotations
    return layout


def strongest_links(weights, threshold: float, max_links: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The (query, key, weight) triples of one (T, S) map above `threshold`, strongest first, at most
    `max_links` of them."""
    values = as_array(weights)
    queries, keys = np.nonzero(values > threshold)
    strengths = values[queries, keys]
    order = np.argsort(-strengths, kind="stable")[:max_links]
    return queries[order], keys[order], strengths[order]


def head_view(
    weights,
    tokens: Sequence[str],
    heads: Sequence[int],
    threshold: float = 0.1,
    max_links: int = 400,
    first_position: int = 0,
    title: str = "",
) -> go.Figure:
    """Lines from each token on the left (the query) to the tokens it attends to on the right (the keys),
    one colour per head; darker and thicker means more weight.

    weights: (len(heads), T, S) the chosen heads' maps. Only weights above `threshold` are drawn, at most
    `max_links` per head (the strongest). `first_position` numbers the tokens when the maps are a window
    cut from a longer text.
    """
    values = as_array(weights)
    labels = [safe_label(token) for token in tokens]
    positions = list(range(first_position, first_position + len(labels)))
    data: list[dict[str, object]] = []
    for slot, head in enumerate(heads):
        colour = head_colour(head)
        queries, keys, strengths = strongest_links(values[slot], threshold, max_links)
        levels = np.ceil(strengths * OPACITY_LEVELS).clip(1, OPACITY_LEVELS)
        data.append(
            dict(  # the legend entry, which also hides or shows all of this head's lines
                type="scatter",
                x=[None],
                y=[None],
                mode="lines",
                line=dict(color=colour, width=3, dash=head_dash(head)),
                name=f"head {head}",
                legendgroup=f"head {head}",
            )
        )
        for level in range(1, OPACITY_LEVELS + 1):
            chosen = levels == level
            data.append(_link_trace(queries[chosen], keys[chosen], level / OPACITY_LEVELS, colour, head))
    for side, anchor in ((0.0, "middle left"), (1.0, "middle right")):
        data.append(
            dict(
                type="scatter",
                x=[side] * len(labels),
                y=list(range(len(labels))),
                mode="markers+text",
                text=labels,
                textposition=anchor,
                marker=dict(size=6, color="#555"),
                showlegend=False,
                customdata=positions,
                hovertemplate="%{customdata}: %{text}<extra></extra>",
            )
        )
    layout = dict(
        xaxis=dict(visible=False, range=[-0.9, 1.9]),
        yaxis=dict(visible=False, autorange="reversed"),
        legend=dict(orientation="h", y=-0.02),
        hovermode="closest",
    )
    # Built from plain dicts: validating a dozen go.Scatter objects costs more than drawing them.
    return style(go.Figure(dict(data=data, layout=layout)), title, height=max(300, 24 * len(labels) + 120))


def _link_trace(queries, keys, strength: float, colour: str, head: int) -> dict:
    """All lines of one head at one strength level, as a single trace (a gap, NaN, separates lines)."""
    x = np.tile(np.array([0.0, 1.0, np.nan]), len(queries))
    y = np.column_stack([queries, keys, np.full(len(queries), np.nan)]).ravel()
    return dict(
        type="scatter",
        x=x.astype(np.float32),
        y=y.astype(np.float32),
        mode="lines",
        hoverinfo="skip",
        line=dict(color=colour, width=0.5 + 3.5 * strength, dash=head_dash(head)),
        opacity=0.15 + 0.85 * strength,
        name=f"head {head}",
        legendgroup=f"head {head}",
        showlegend=False,
    )


def focus_rows(
    rows: Sequence, token_lists: Sequence[Sequence[str]], titles: Sequence[str], title: str = ""
) -> go.Figure:
    """Side-by-side bars: where one token looks, in each of several sentences (one weight row each)."""
    layout = _panel_axes(1, len(rows), [safe_label(text) for text in titles], gap=0.08)
    data = []
    for panel, (row, tokens) in enumerate(zip(rows, token_lists)):
        suffix = axis_suffix(panel)
        data.append(
            dict(
                type="bar",
                x=token_names(tokens),
                y=compact(row),
                marker=dict(color="#6a51a3"),
                showlegend=False,
                xaxis=f"x{suffix}",
                yaxis=f"y{suffix}",
                hovertemplate="key %{x}<br>weight %{y:.4f}<extra></extra>",
            )
        )
        layout[f"xaxis{suffix}"].update(type="category", tickangle=-90, automargin=True)
        layout[f"yaxis{suffix}"].update(range=[0, 1], title=dict(text="attention weight" if panel == 0 else ""))
    return style(go.Figure(dict(data=data, layout=layout)), title, height=380)


def similarity_by_layer(similarity, title: str = "") -> go.Figure:
    """Cosine similarity of one pair of vectors at every depth: the embeddings, then each layer's output."""
    values = as_array(similarity)
    depths = ["embeddings"] + [f"layer {layer}" for layer in range(len(values) - 1)]
    figure = go.Figure(
        go.Scatter(
            x=depths,
            y=values,
            mode="lines+markers",
            line=dict(color="#6a51a3"),
            hovertemplate="%{x}<br>cosine %{y:.4f}<extra></extra>",
        )
    )
    figure.update_yaxes(title="cosine similarity", range=[min(0.0, float(values.min())) - 0.05, 1.05])
    return style(figure, title, height=320)


def layer_head_map(
    values,
    name: str,
    colorscale: str = "Viridis",
    zmin: float | None = None,
    zmax: float | None = None,
    title: str = "",
    scale_title: str = "",
) -> go.Figure:
    """One number per head of the whole stack: layers down, heads across, each written in its cell where the
    chart has room for it (`cell_numbers`). `scale_title` names the colour bar."""
    layers, heads = as_array(values).shape
    figure = heatmap(
        values,
        [f"layer {layer}" for layer in range(layers)],
        [f"head {head}" for head in range(heads)],
        title=title,
        colorscale=colorscale,
        zmin=zmin,
        zmax=zmax,
        show_values=None,
        value_format=".2f",
        row_title="layer",
        column_title="head",
        hover_name=name,
        colorbar=colour_bar_below(scale_title),
    )
    # The tick labels already say "layer" and "head": axis titles would take a phone's width (and the top
    # one would hit the figure's title).
    return figure.update_xaxes(title=None).update_yaxes(title=None)


def recombination(head_outputs, concatenated, title: str = "", marked_head: int | None = None) -> go.Figure:
    """One token's H head outputs stacked (H, d_head) above the same numbers laid in one row (1, D):
    the concatenation is nothing but the head blocks side by side. The head `marked_head`, when given, is
    framed in both: its row of d_head numbers, and the block they fill in the concatenation."""
    blocks, row = compact(head_outputs), compact(concatenated)
    heads, head_width = blocks.shape
    limit = float(max(np.abs(blocks).max(), np.abs(row).max(), 1e-9))
    layout = _panel_axes(
        2,
        1,
        [
            f"{heads} head outputs, {head_width} numbers each",
            f"concatenated: one row of {heads} × {head_width} = {heads * head_width}",
        ],
        gap=0.1,
    )
    layout["yaxis"].update(domain=[0.42, 0.93], type="category", autorange="reversed")
    layout["yaxis2"].update(domain=[0.0, 0.2], type="category")
    layout["annotations"][1]["y"] = 0.2
    layout["xaxis2"].update(title=dict(text="feature"))
    layout["coloraxis"] = dict(colorscale=DIVERGING_SCALE, cmin=-limit, cmax=limit)
    # Where one head's block ends and the next begins, in the concatenated row.
    layout["shapes"] = [
        dict(
            type="line",
            xref="x2",
            yref="y2 domain",
            x0=boundary * head_width - 0.5,
            x1=boundary * head_width - 0.5,
            y0=-0.05,
            y1=1.05,
            line=dict(color="black", width=2),
        )
        for boundary in range(1, heads)
    ]
    if marked_head is not None:
        layout["shapes"] += [
            _frame("x", "y", -0.5, head_width - 0.5, marked_head - 0.5, marked_head + 0.5),
            _frame("x2", "y2 domain", marked_head * head_width - 0.5, (marked_head + 1) * head_width - 0.5),
        ]
    data = [
        dict(
            type="heatmap",
            z=blocks,
            y=[f"head {head}" for head in range(heads)],
            coloraxis="coloraxis",
            hovertemplate="%{y}, feature %{x}<br>%{z:.4f}<extra></extra>",
        ),
        dict(
            type="heatmap",
            z=row[None, :],
            y=["concat"],
            coloraxis="coloraxis",
            xaxis="x2",
            yaxis="y2",
            hovertemplate="feature %{x}<br>%{z:.4f}<extra></extra>",
        ),
    ]
    return style(go.Figure(dict(data=data, layout=layout)), title, height=520)


def contribution_bars(norms, heads_off: Sequence[int] = (), title: str = "") -> go.Figure:
    """The length of the vector each head adds to one token through W_O (switched-off heads in grey)."""
    values = as_array(norms)
    heads = range(len(values))
    colours = ["#bbbbbb" if head in heads_off else head_colour(head) for head in heads]
    figure = go.Figure(
        go.Bar(
            x=[f"head {head}" for head in range(len(values))],
            y=values,
            marker_color=colours,
            marker_pattern_shape=[head_pattern(head) for head in heads],
            hovertemplate="%{x}<br>length %{y:.4f}<extra></extra>",
        )
    )
    figure.update_yaxes(title="‖o_h · W_O,hᵀ‖")
    return style(figure, title, height=320)


def similarity_floor(smallest: float) -> float:
    """The lower end of a cosine colour scale: the highest of a few round numbers at or below `smallest`."""
    return next(floor for floor in SIMILARITY_FLOORS if floor <= smallest)


def token_similarity_map(similarity, tokens: Sequence[str], title: str = "") -> go.Figure:
    """(L + 1, T) cosine similarities, one row per depth and one column per token.

    Cosines of a barely changed vector sit just below 1, so the colour scale runs from a round number
    below the smallest value (`similarity_floor`) up to 1, white for an unchanged vector: on a scale from
    0 every cell would wear the same colour, and on one from the smallest value itself a cosine of 0.978
    would look as dark as a vector turned around. The colour bar says where the scale starts.
    """
    values = as_array(similarity)
    floor = similarity_floor(float(values.min()))
    depths = ["embeddings"] + [f"after layer {layer}" for layer in range(values.shape[0] - 1)]
    figure = heatmap(
        values,
        depths,
        list(tokens),
        title=title,
        colorscale=SIMILARITY_SCALE,
        zmin=floor,
        zmax=1.0,
        row_title="depth",
        column_title="token",
        hover_name="cosine",
        value_format=".4f",
        show_values=None,
        colorbar=colour_bar_below(f"cosine, {floor:g} to 1"),
    )
    figure.update_xaxes(title=None, showticklabels=len(tokens) <= MAX_TICK_LABELS)
    return figure.update_yaxes(title=None)  # "after layer 2" says it is a depth
