"""The model's guess at the next token, as the lessons on decoders draw it: the most likely tokens as bars, the one
taken darker. Token labels go through `safe_label`: "<bos>" and a user's "<b>" are shown as written.
"""

from __future__ import annotations

from collections.abc import Sequence

import plotly.graph_objects as go

from lessons.common.plots import safe_label, style

CHOSEN_COLOUR = "#5B4BDB"  # the token greedy decoding takes
OTHER_COLOUR = "#B9B2F0"  # the candidates it passed over


def candidates_figure(
    labels: Sequence[str],
    probabilities: Sequence[float],
    title: str = "",
    chosen: int | None = 0,
) -> go.Figure:
    """The most likely next tokens as horizontal bars, the most probable on top; the bar at index
    `chosen` (the token taken) is drawn darker."""
    values = [float(value) for value in probabilities]
    names = [f"{rank}. {safe_label(label)}" for rank, label in enumerate(labels, start=1)]
    colours = [CHOSEN_COLOUR if index == chosen else OTHER_COLOUR for index in range(len(values))]
    figure = go.Figure(
        go.Bar(
            x=values,
            y=names,
            orientation="h",
            name="probability",
            marker_color=colours,
            text=[f"{value:.3g}" for value in values],
            textposition="outside",
            cliponaxis=False,
            hovertemplate="%{y}<br>probability = %{x:.6g}<extra></extra>",
        )
    )
    figure.update_xaxes(range=[0, 1.12], title="probability", automargin=True)
    figure.update_yaxes(type="category", autorange="reversed", automargin=True)
    return style(figure, title, height=int(150 + 28 * len(values)))
