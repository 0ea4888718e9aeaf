"""Figures of the training lesson: the loss curve, drawn again and again while a model trains.

The curve is redrawn a few times a second, so it is kept light: losses go out as float32 (plotly sends
numpy arrays as binary) and the step axis is implicit (first step 1, one per point), so a point costs
4 bytes, not a pair of JSON numbers.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go

from lessons.common.plots import style

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
        figure.add_hline(
            y=chance_loss,
            line=dict(color=CHANCE_COLOUR, dash="dash", width=1.5),
            annotation_text=f"guessing: {chance_loss:.2f}",
            annotation_position="top right",
        )
    figure.update_xaxes(title="training step", range=[0, max(planned_steps, len(values), 1) + 1])
    # The top of the log axis sits just above the highest line drawn (a loss or the guessing level); left to
    # itself, plotly makes room for the guessing label too and stretches the axis to 1000.
    lines = ([float(values.max())] if values.size else []) + ([chance_loss] if chance_loss is not None else [])
    highest = max(lines, default=0.0)
    top = [None, math.log10(highest * 1.5)] if highest > 0 else None  # None: plotly finds the bottom itself
    figure.update_yaxes(title="loss (cross-entropy, log scale)", type="log", range=top)
    figure.update_layout(legend=dict(orientation="h", x=0, y=-0.2), uirevision="loss")
    return style(figure, title, height=height)
