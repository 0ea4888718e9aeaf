"""Figures for the positional-encoding lesson: curves per dimension, the (positions × dimensions) table,
and how alike positions are.

Every figure takes plain arrays (tensors are fine) and sends float32 values: plotly writes numpy arrays
as compact binary, and float32's seven significant digits are more than a hover shows, at half the bytes.
Big tables are thinned by taking every k-th row and column: true values at their true indices, never
averages (an average of a fast sine over a few positions is close to 0 and would show a wave that is not there).
"""

from __future__ import annotations

import html
import math
import textwrap
from collections.abc import Mapping, Sequence
from itertools import cycle

import numpy as np
import numpy.typing as npt
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from lessons.common.plots import DIVERGING_SCALE, as_array, compact, safe_label, style

MAX_HEATMAP_ROWS = 128  # positions drawn in one table heatmap
MAX_HEATMAP_CELLS = 128 * 384  # a full-width MiniLM table at 128 positions, ~0.3 MB in the page
MAX_SIMILARITY_SIDE = 128  # positions per side of a drawn similarity matrix
# Two tables are drawn side by side: on a desktop at 150 % zoom each chart is about 250 px wide. Their titles
# name the table in a word; what is drawn goes below, in plotly's smaller subtitle (about 4.6 px a character),
# broken into lines of at most this many characters.
SUBTITLE_LINE_CHARACTERS = 44
SINUSOIDAL_COLOUR = "#1f77b4"
LEARNED_COLOUR = "#d62728"
MARK_COLOUR = "#f59e0b"  # the value an exercise asked for


def evenly_spaced(count: int, limit: int, keep_parity: bool = False) -> np.ndarray:
    """At most `limit` of the indices 0..count−1, one every `step`. With keep_parity an even step is made
    odd, so the picks alternate between even and odd indices: in a sinusoidal table, sines and cosines."""
    if count <= 0 or limit <= 0:
        return np.arange(0)
    step = math.ceil(count / limit)
    if keep_parity and step % 2 == 0:
        step += 1
    return np.arange(0, count, step)


def colour_limit(values, share: float = 0.99) -> float:
    """Where a symmetric colour scale should saturate: the 99th percentile of |value|. A few outliers
    (MiniLM's learned table holds a 1.87 among values mostly under 0.07) would otherwise wash every other
    cell out to white; the hover still shows each exact value."""
    magnitudes = np.abs(as_array(values))
    limit = float(np.quantile(magnitudes, share)) if magnitudes.size else 0.0
    return limit or 1.0  # an all-zero table still needs a scale


def fitted_lines(text: str, width: int = SUBTITLE_LINE_CHARACTERS) -> str:
    """`text` broken into lines of at most `width` characters, between words where it can (a name longer than
    a line is broken inside). `text` is plain text with user text escaped (`safe_label`), its lines joined by
    <br>: those breaks stay, and an escaped character (&lt; for a typed <) is never split."""
    lines = []
    for line in text.split("<br>"):
        lines += [safe_label(part) for part in textwrap.wrap(html.unescape(line), width)] or [""]
    return "<br>".join(lines)


def _titled(figure: go.Figure, title: str, details: list[str], height: int) -> go.Figure:
    """`title` on one line and, when there is one, the `details` below it in the subtitle, each detail on
    lines of its own that fit one of two charts side by side.

    A subtitle, not more lines of title: plotly lifts the lines of a title it pushes the margin for (as the
    common look asks) as if the title stood on the plot, and a title of two lines or more left the chart."""
    style(figure, title, height=height)
    subtitle = "<br>".join(fitted_lines(detail) for detail in details if detail)
    if title and subtitle:
        figure.update_layout(title_subtitle_text=subtitle)
    return figure


def dimension_curves(
    encoding,
    dimensions: Sequence[int],
    title: str = "",
    positions_in_text: int = 0,
    marked: tuple[int, int] | None = None,
) -> go.Figure:
    """One line per chosen column of a (T, D) table, against the position t; even columns are sines,
    odd ones cosines. The first `positions_in_text` positions are shaded (the ones the user's text uses).
    `marked` = (position t, dimension i) rings that one value and writes it beside the ring."""
    table = compact(encoding)
    positions = np.arange(table.shape[0])
    figure = go.Figure()
    for dimension in dimensions:
        wave = "sin" if dimension % 2 == 0 else "cos"
        figure.add_trace(
            go.Scatter(
                x=positions,
                y=table[:, dimension],
                mode="lines+markers",
                marker=dict(size=4),
                name=f"i = {dimension} ({wave})",
                hovertemplate=f"i = {dimension}<br>position %{{x}}<br>value %{{y:.4f}}<extra></extra>",
            )
        )
    if positions_in_text > 0:
        figure.add_vrect(
            x0=-0.5,
            x1=min(positions_in_text, len(positions)) - 0.5,
            fillcolor="#ffd54f",
            opacity=0.18,
            line_width=0,
            annotation_text="your text",
            annotation_position="top left",
        )
    if marked is not None:
        position, dimension = marked
        _ring(figure, position, float(table[position, dimension]), f"p_{dimension}({position})")
    figure.update_xaxes(title="position t")
    figure.update_yaxes(title="p_i(t)", range=[-1.1, 1.1])
    return style(figure, title, height=380)


def _ring(figure: go.Figure, x: float, y: float, name: str) -> None:
    """An open circle around the point (x, y), and "name = y" beside it."""
    written = f"{name} = {y:.4f}"
    figure.add_trace(
        go.Scatter(
            x=[x],
            y=[y],
            mode="markers",
            marker=dict(size=16, symbol="circle-open", line=dict(width=3), color=MARK_COLOUR),
            name=written,
            hovertemplate=f"{written}<extra></extra>",
        )
    )
    # Below and to the right of the point: the top edge holds the "p = …" label of the position's line.
    figure.add_annotation(x=x, y=y, text=written, showarrow=True, arrowhead=0, ax=40, ay=40)


def encoding_heatmap(encoding, title: str = "", subtitle: str = "", max_cells: int = MAX_HEATMAP_CELLS) -> go.Figure:
    """A (T, D) position table as colours, position down and dimension across, row 0 at the top.
    Larger tables show every k-th position and dimension (the axes keep the true indices), and say so below
    the `subtitle`."""
    table = as_array(encoding)
    rows = evenly_spaced(table.shape[0], MAX_HEATMAP_ROWS)
    columns = evenly_spaced(table.shape[1], max(1, max_cells // max(1, len(rows))), keep_parity=True)
    limit = colour_limit(table)
    figure = go.Figure(
        go.Heatmap(
            z=table[np.ix_(rows, columns)].astype(np.float32),
            x=columns,
            y=rows,
            colorscale=DIVERGING_SCALE,
            zmin=-limit,
            zmax=limit,
            hovertemplate="position %{y}<br>dimension %{x}<br>value %{z:.4f}<extra></extra>",
        )
    )
    figure.update_xaxes(title="dimension i")
    figure.update_yaxes(title="position t", autorange="reversed")
    note = _thinning_note(("position", rows, table.shape[0]), ("dimension", columns, table.shape[1]))
    return _titled(figure, title, [subtitle, note], height=420)


def _thinning_note(*axes: tuple[str, np.ndarray, int]) -> str:
    """Which axes are drawn thinned, from (noun, picked indices, full count) triples ("" when none is)."""
    thinned = [f"one {noun} in {int(picks[1] - picks[0])}" for noun, picks, count in axes if 1 < len(picks) < count]
    return f"drawn: {', '.join(thinned)}" if thinned else ""


def similarity_to_position(
    similarities_by_name: Mapping[str, npt.ArrayLike],
    position: int,
    measure_label: str,
    title: str = "",
    marked: int | None = None,
) -> go.Figure:
    """How alike position p is to every position q, one line per table (e.g. sinusoidal and learned).
    `marked` rings position q on the first table's line."""
    figure = go.Figure()
    for (name, similarities), colour in zip(similarities_by_name.items(), _colours()):
        name, values = safe_label(name), compact(similarities)
        figure.add_trace(
            go.Scatter(
                x=np.arange(len(values)),
                y=values,
                mode="lines",
                name=name,
                line=dict(color=colour),
                hovertemplate=f"q = %{{x}}<br>{measure_label} %{{y:.4f}}<extra>{name}</extra>",
            )
        )
    figure.add_vline(x=position, line_dash="dot", line_color="grey", annotation_text=f"p = {position}")
    if marked is not None and similarities_by_name:
        first = compact(next(iter(similarities_by_name.values())))
        _ring(figure, marked, float(first[marked]), f"{measure_label}({position}, {marked})")
    figure.update_xaxes(title="position q")
    figure.update_yaxes(title=f"{measure_label}(p, q)")
    return style(figure, title, height=360)


def similarity_heatmap(
    similarities, measure_label: str, title: str = "", subtitle: str = "", centre_on_zero: bool = True
) -> go.Figure:
    """A (T, T) similarity matrix; bands parallel to the diagonal mean it depends on q − p alone."""
    matrix = as_array(similarities)
    picks = evenly_spaced(matrix.shape[0], MAX_SIMILARITY_SIDE)
    largest = float(np.abs(matrix).max()) if matrix.size else 1.0
    figure = go.Figure(
        go.Heatmap(
            z=matrix[np.ix_(picks, picks)].astype(np.float32),
            x=picks,
            y=picks,
            colorscale=DIVERGING_SCALE,
            zmin=-largest if centre_on_zero else None,
            zmax=largest if centre_on_zero else None,
            hovertemplate=f"p = %{{y}}<br>q = %{{x}}<br>{measure_label} %{{z:.4f}}<extra></extra>",
        )
    )
    figure.update_xaxes(title="position q", scaleanchor="y", constrain="domain")
    figure.update_yaxes(title="position p", autorange="reversed", constrain="domain")
    note = _thinning_note(("position", picks, matrix.shape[0]))
    return _titled(figure, title, [subtitle, note], height=420)


def similarity_by_offset(
    profiles_by_name: dict[str, tuple[Sequence[float], Sequence[float], Sequence[float]]],
    measure_label: str,
    title: str = "",
) -> go.Figure:
    """For each distance k = q − p: the mean similarity of all pairs k apart, with a band from the lowest
    to the highest. A band as thin as a line says similarity depends on the distance only."""
    figure = go.Figure()
    for (name, (mean, lowest, highest)), colour in zip(profiles_by_name.items(), _colours()):
        name = safe_label(name)
        offsets = np.arange(len(as_array(mean)))
        figure.add_trace(
            go.Scatter(
                x=offsets,
                y=compact(highest),
                mode="lines",
                line=dict(width=0, color=colour),
                showlegend=False,
                hoverinfo="skip",
                legendgroup=name,
            )
        )
        figure.add_trace(
            go.Scatter(
                x=offsets,
                y=compact(lowest),
                mode="lines",
                line=dict(width=0, color=colour),
                fill="tonexty",
                opacity=0.3,
                name=f"{name}: lowest to highest",
                hoverinfo="skip",
                legendgroup=name,
            )
        )
        figure.add_trace(
            go.Scatter(
                x=offsets,
                y=compact(mean),
                mode="lines",
                line=dict(color=colour),
                name=f"{name}: mean",
                legendgroup=name,
                hovertemplate=f"q − p = %{{x}}<br>mean {measure_label} %{{y:.4f}}<extra>{name}</extra>",
            )
        )
    figure.update_xaxes(title="distance q − p")
    figure.update_yaxes(title=measure_label)
    return style(figure, title, height=360)


def _colours():
    return cycle((SINUSOIDAL_COLOUR, LEARNED_COLOUR, "#2ca02c", "#9467bd"))


# ----- rotary positions -------------------------------------------------------------------------------------

ROTARY_COLOUR = "#2ca02c"
# The bottom margin of a chart with its legend at its foot: the x axis's ticks and title, then two rows of
# legend (a phone's width folds the two entries onto two rows).
LEGEND_AT_THE_FOOT_PX = 105


def _legend_at_the_foot(figure: go.Figure) -> go.Figure:
    """`figure` with its legend in one row (two on a phone) at the figure's foot, under the x axis's title.
    Pinned to the figure (`yref="container"`), not placed under the plot in the plot's own coordinates: there it
    pushed the plot's foot up, which moved the legend again, and a page zoomed in after opening drew it 10 px
    lower than a page opened zoomed in."""
    return figure.update_layout(
        legend=dict(orientation="h", yref="container", y=0, yanchor="bottom", x=0), margin_b=LEGEND_AT_THE_FOOT_PX
    )


def rotation_frequencies(
    rotary, sinusoidal, theta: float, head_width: int, base: float, width: int, title: str = ""
) -> go.Figure:
    """Radians a position for each pair of a rotary head and each sine/cosine pair of the sinusoidal table,
    against how far along the head (or the table) the pair sits: 2k/d from 0 to 1. The y axis is logarithmic:
    the fastest pair turns a radian a step, the slowest ten thousand or more times slower."""
    figure = go.Figure()
    rotary_name = f"SmolLM2: θ = {theta:g}, d_head = {head_width}"
    sinusoidal_name = f"sinusoidal table: base = {base:g}, d = {width}"
    drawn = ((rotary_name, rotary, ROTARY_COLOUR), (sinusoidal_name, sinusoidal, SINUSOIDAL_COLOUR))
    for name, values, colour in drawn:
        frequencies = compact(values)
        along = np.arange(len(frequencies)) / len(frequencies)  # 2k/d for k = 0 … d/2 − 1
        figure.add_trace(
            go.Scatter(
                x=along,
                y=frequencies,
                mode="lines+markers",
                marker=dict(size=4, color=colour),
                line=dict(color=colour),
                name=safe_label(name),
                hovertemplate="2k/d = %{x:.3f}<br>%{y:.3g} rad a position<extra></extra>",
            )
        )
    figure.update_xaxes(title="pair k, as 2k/d (0: first pair, 1: last)", range=[-0.02, 1.0])
    figure.update_yaxes(title="radians turned per position", type="log", dtick=1, exponentformat="power")
    return _legend_at_the_foot(style(figure, title, height=420))  # under the plot: a phone keeps the plot wide


def turning_pairs(arrows_by_pair: Mapping[int, object], title: str = "") -> go.Figure:
    """One panel per pair k (named under it): the pair's two coordinates of one query drawn as an arrow from the
    origin at positions 0, 1, 2, …, its tip dark at position 0 and lighter at each later one. Pair 0 turns
    visibly a step; the last pairs hardly move over a few positions."""
    pairs = list(arrows_by_pair)
    figure = make_subplots(rows=1, cols=len(pairs), horizontal_spacing=0.06)
    for column, pair in enumerate(pairs, start=1):
        arrows = compact(arrows_by_pair[pair])
        reach = float(np.abs(arrows).max()) * 1.15 or 1.0
        shafts_x = np.ravel([[0.0, x, np.nan] for x in arrows[:, 0]])
        shafts_y = np.ravel([[0.0, y, np.nan] for y in arrows[:, 1]])
        figure.add_trace(
            go.Scatter(x=shafts_x, y=shafts_y, mode="lines", line=dict(color="#9ca3af", width=1), hoverinfo="skip"),
            row=1,
            col=column,
        )
        positions = np.arange(len(arrows))
        figure.add_trace(
            go.Scatter(
                x=arrows[:, 0],
                y=arrows[:, 1],
                mode="markers",
                marker=dict(size=9, color=positions, colorscale="Viridis"),
                customdata=positions,
                hovertemplate=f"pair {pair}<br>position %{{customdata}}<br>(%{{x:.3f}}, %{{y:.3f}})<extra></extra>",
            ),
            row=1,
            col=column,
        )
        axis = "" if column == 1 else str(column)
        figure.update_layout(
            {
                f"xaxis{axis}": dict(
                    range=[-reach, reach], zeroline=True, showticklabels=False, title=dict(text=f"pair {pair}")
                ),
                f"yaxis{axis}": dict(
                    range=[-reach, reach], zeroline=True, showticklabels=False, scaleanchor=f"x{axis}"
                ),
            }
        )
    figure.update_layout(showlegend=False)
    return style(figure, title, height=300)


def scores_under_shifts(
    shifts, same_distance, other_distance, own_score: float, title: str = "", subtitle: str = ""
) -> go.Figure:
    """The score of one query with one key of the text, both moved s places along (the distance kept: a flat
    line), and the query alone moved s places (the distance grows: the score changes)."""
    steps = as_array(shifts)
    figure = go.Figure()
    figure.add_trace(
        go.Scatter(
            x=steps,
            y=compact(same_distance),
            mode="lines+markers",
            marker=dict(size=5, color=ROTARY_COLOUR),
            line=dict(color=ROTARY_COLOUR, width=3),
            name="both moved s places (same distance)",
            hovertemplate="s = %{x}<br>score %{y:.6f}<extra>same distance</extra>",
        )
    )
    figure.add_trace(
        go.Scatter(
            x=steps,
            y=compact(other_distance),
            mode="lines",
            line=dict(color=LEARNED_COLOUR, dash="dot"),
            name="query alone moved s places",
            hovertemplate="s = %{x}<br>score %{y:.6f}<extra>distance grows by s</extra>",
        )
    )
    figure.add_hline(y=own_score, line=dict(color="#6b7280", width=1, dash="dash"))
    figure.update_xaxes(title="shift s (positions)")
    figure.update_yaxes(title="score q·k / √d_head")
    return _legend_at_the_foot(_titled(figure, title, [subtitle], height=400))
