"""The app's colour scales as readers with a colour-vision deficiency see them: prints the check.

For every categorical palette, the smallest colour difference (ΔE*ab) between any two of its colours, under
typical vision and simulated protanopia, deuteranopia and tritanopia (lessons/common/colour_vision.py); for
every sequential scale, whether lightness runs one way from end to end; for the diverging scale, how far apart
its two ends stay. A difference under 10 is flagged: two such colours are easily confused.

    python scripts/colour_vision.py
"""

from __future__ import annotations

import numpy as np
import plotly.colors

from lessons.common.colour_vision import VISIONS, lightness_steps, smallest_difference
from lessons.common.matrix_figures import ALLOWED_COLOUR, FORBIDDEN_COLOUR
from lessons.common.plots import ATTENTION_SCALE, DIVERGING_SCALE, HEAD_COLOURS
from lessons.multihead.figures import SIMILARITY_SCALE
from lessons.tokenization.figures import CELL_KINDS

CLEARLY_DIFFERENT = 10.0  # ΔE*ab


def scale_colours(name: str, steps: int = 9) -> list[str]:
    scale = plotly.colors.get_colorscale(name)
    return plotly.colors.sample_colorscale(scale, list(np.linspace(0, 1, steps)))


def categorical(title: str, colours: list[str]) -> bool:
    cells = []
    good = True
    for vision in VISIONS:
        difference, (first, second) = smallest_difference(colours, vision)
        flag = "" if difference >= CLEARLY_DIFFERENT else f" ✗ ({colours[first]} ~ {colours[second]})"
        good &= difference >= CLEARLY_DIFFERENT
        cells.append(f"{vision} {difference:5.1f}{flag}")
    print(f"{title:44s} " + " | ".join(cells))
    return good


def sequential(title: str, name: str) -> bool:
    good = True
    cells = []
    for vision in VISIONS:
        lightness = lightness_steps(scale_colours(name), vision)
        steps = np.diff(lightness)
        one_way = bool(np.all(steps > 0) or np.all(steps < 0))
        good &= one_way
        cells.append(f"{vision} L* {lightness[0]:.0f}→{lightness[-1]:.0f}{'' if one_way else ' ✗ not monotonic'}")
    print(f"{title:44s} " + " | ".join(cells))
    return good


def main() -> None:
    print("Smallest ΔE*ab between two colours (≥ 10 reads as clearly different):")
    results = [
        categorical("head view, 12 heads (HEAD_COLOURS[:12])", list(HEAD_COLOURS[:12])),
        categorical("head view, 9 heads (SmolLM2)", list(HEAD_COLOURS[:9])),
        categorical("token kinds (tokenization)", [colour for _, colour in CELL_KINDS]),
        categorical("causal mask: allowed vs forbidden", [ALLOWED_COLOUR, FORBIDDEN_COLOUR]),
        categorical(f"diverging ends ({DIVERGING_SCALE})", scale_colours(DIVERGING_SCALE, steps=2)),
    ]
    print("\nSequential scales: lightness from one end to the other:")
    results += [
        sequential(f"attention weights ({ATTENTION_SCALE})", ATTENTION_SCALE),
        sequential(f"similarity ({SIMILARITY_SCALE})", SIMILARITY_SCALE),
    ]
    print("\nall clear" if all(results) else "\nsome colours are confused (✗ above)")


if __name__ == "__main__":
    main()
