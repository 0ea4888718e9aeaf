"""The class's spread for one question, as a bar per answer: what the lecturer projects and, once revealed,
what every student sees beside their own answer."""

from __future__ import annotations

import plotly.graph_objects as go

from lessons.common.classroom import Spread
from lessons.common.plots import safe_label, style

RIGHT_COLOUR = "#2CA02C"  # the right answer's bar, once it may be shown
OTHER_COLOUR = "#5B4BDB"
MAX_LABEL_CHARACTERS = 40


def spread_figure(spread: Spread, mark_the_answer: bool = True) -> go.Figure:
    """One horizontal bar per answer, in the options' order (a number question: the values given, smallest at
    the top), its count written at its end; the right answer's bar green when `mark_the_answer`."""
    labels = [_short(answer) for answer, _, _ in spread.counts]
    counts = [count for _, count, _ in spread.counts]
    right = [mark_the_answer and is_right for _, _, is_right in spread.counts]
    figure = go.Figure(
        go.Bar(
            x=counts,
            y=list(range(len(labels))),
            orientation="h",
            marker_color=[RIGHT_COLOUR if is_right else OTHER_COLOUR for is_right in right],
            text=[f"{count} ✓" if is_right else str(count) for count, is_right in zip(counts, right)],
            textposition="outside",
            hovertext=labels,
            hovertemplate="%{hovertext}: %{x} answered<extra></extra>",
            cliponaxis=False,
        )
    )
    style(figure, height=90 + 44 * max(1, len(labels)))
    figure.update_layout(
        margin=dict(l=10, r=40, t=10, b=30),
        yaxis=dict(
            tickmode="array", tickvals=list(range(len(labels))), ticktext=labels, autorange="reversed", automargin=True
        ),
        xaxis=dict(title="students", rangemode="tozero", dtick=max(1, max(counts, default=1) // 5 or 1)),
        bargap=0.35,
    )
    return figure


def _short(answer: str) -> str:
    shown = answer if len(answer) <= MAX_LABEL_CHARACTERS else answer[: MAX_LABEL_CHARACTERS - 1] + "…"
    return safe_label(shown)
