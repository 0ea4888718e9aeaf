"""One block's parameters as a stacked bar, part by part (`block_parameters`), for the lessons that compare
blocks: an encoder's, and a decoder's that also reads the encoder."""

from __future__ import annotations

import plotly.graph_objects as go

from lessons.common.plots import style

# The encoder lesson's colours: its main colour for attention, its highlight where a decoder reads the encoder
PART_COLORS = {"attention": "#4c4cc9", "cross-attention": "#d62728", "feed-forward": "#e07b00"}
OTHER_PART_COLOR = "#8c8c8c"  # the layer norms: a sliver next to the matrices


def block_parameters_chart(blocks: dict[str, dict[str, int]], title: str = "") -> go.Figure:
    """One stacked bar per block (named by the keys of `blocks`): its parameters part by part, as
    `block_parameters.block_parameters` counts them, with the block's total at the end of its bar."""
    parts = list(dict.fromkeys(part for counts in blocks.values() for part in counts))
    # The total is written in the bar's own label: an annotation beyond the bar's end is cut off on a phone.
    labels = {name: f"{name}: {sum(counts.values()):,}" for name, counts in blocks.items()}
    figure = go.Figure(
        [
            go.Bar(
                y=[labels[name] for name in blocks],
                x=[counts.get(part, 0) for counts in blocks.values()],
                orientation="h",
                name=part,
                marker_color=PART_COLORS.get(part, OTHER_PART_COLOR),
                text=[f"{counts[part]:,}" if counts.get(part) else "" for counts in blocks.values()],
                textposition="inside",
                hovertemplate=f"%{{y}}<br>{part}: %{{x:,}} parameters<extra></extra>",
            )
            for part in parts
        ]
    )
    # The legend below the bars, without an axis title there for it to run into (the title names the unit).
    figure.update_layout(barmode="stack", legend=dict(orientation="h", x=0, y=-0.12, yanchor="top"))
    figure.update_yaxes(type="category", autorange="reversed")
    return style(figure, title, height=230 + 60 * len(blocks))
