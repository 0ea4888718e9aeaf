"""The positional lesson's exercises, on the sinusoidal table of the width and base chosen on the page, at the
last position the learner's text uses: which of a few positions is most alike it, and one value of its vector.
Both are computed by `anatomy.positional` (and the lesson's own similarity), so they follow the text and the
settings."""

from __future__ import annotations

import math

from anatomy.config import SMOLLM2_135M
from anatomy.positional import sinusoidal_positional_encoding
from lessons.common.exercises import Exercise, Offer
from lessons.positional.analysis import TIE_TOLERANCE, similarity_matrix
from lessons.positional.figures import dimension_curves, rotation_frequencies, similarity_to_position
from lessons.positional.rotary import rotary_frequencies, sinusoidal_frequencies

# One position offered at each distance, on alternate sides: never two at one distance, whose sinusoidal
# similarities are equal. Past 6 the waves of a narrow table come back into phase, so a far position can win.
OFFERED_DISTANCES = (1, 3, 6, 10)


def _positions_used(count: int) -> str:
    return "position 0 only" if count == 1 else f"positions 0 to {count - 1}"


def offered_positions(position: int) -> dict[int, int]:
    """Offered position -> its distance from `position`: later for the 1st and 3rd distances, earlier for the
    others where the table has them."""
    offered = {}
    for index, distance in enumerate(OFFERED_DISTANCES):
        earlier, later = position - distance, position + distance
        offered[later if index % 2 == 0 or earlier < 0 else earlier] = distance
    return dict(sorted(offered.items()))


def nearest_position(positions_in_text: int, width: int, base: float, shown: int) -> Exercise | None:
    """Which offered position's sinusoidal vector is most alike (cosine) that of the text's last position."""
    if positions_in_text < 1:
        return None
    position = positions_in_text - 1
    offered = offered_positions(position)
    rows = max(shown, max(offered) + 1)
    similarities = similarity_matrix(sinusoidal_positional_encoding(rows, width, base))[position]  # (rows,)
    ranked = sorted(offered, key=lambda other: -float(similarities[other]))
    answer, runner_up = ranked[:2]
    if float(similarities[answer] - similarities[runner_up]) <= TIE_TOLERANCE:
        del offered[runner_up]  # as alike as the answer, to float precision: it would make two right answers
    measured = "; ".join(
        f"{other} ({distance} away): {float(similarities[other]):.4f}" for other, distance in offered.items()
    )
    return Exercise(
        question=(
            f"Your text uses {_positions_used(positions_in_text)}. In the sinusoidal table with width d = {width} "
            f"and base {base:g}, which of these positions has the vector most alike (the highest cosine) to "
            f"that of position {position}, the last one your text uses?"
        ),
        answer=str(answer),
        options=tuple(str(other) for other in offered),  # by position, which says nothing of the answer
        explanation=(
            f"Position **{answer}**, {offered[answer]} away. Each sine/cosine pair adds "
            "$\\cos(\\omega_k (p - q))$ to the dot product of positions $p$ and $q$, so their similarity "
            "depends on the distance alone, never on the direction: a position the same distance on the "
            f"other side of {position}, where there is one, is exactly as alike. The cosine of each position "
            f"offered with position {position}: {measured}. {_how_it_falls(offered, similarities, answer, width, base)}"
        ),
        figure=lambda: similarity_to_position(
            {"sinusoidal": similarities},
            position,
            "cosine",
            f"Cosine of position {position} with every position, d = {width}",
            marked=answer,
        ),
    )


def _how_it_falls(offered: dict[int, int], similarities, answer: int, width: int, base: float) -> str:
    """Whether the similarity of the offered positions falls steadily with their distance, or where it rises."""
    by_distance = sorted(offered, key=offered.__getitem__)  # nearest first
    rises = [
        (closer, farther)
        for closer, farther in zip(by_distance, by_distance[1:])
        if similarities[farther] >= similarities[closer]
    ]
    if not rises:
        return (
            f"At d = {width} the similarity falls as the distance grows, over these distances: the fast pairs "
            "drift out of phase first, while the slow ones keep the positions alike."
        )
    if answer == by_distance[0]:
        lead = "The nearest offered position is the most alike, but the similarity does not simply fall with distance"
        closer, farther = rises[0]
    else:
        lead = "The nearest offered position is not the most alike"
        closer, farther = by_distance[0], answer
    return (
        f"{lead}: at d = {width} and base {base:g} the waves come back into phase, so a distance of "
        f"{offered[farther]} lines them up better than a distance of {offered[closer]}."
    )


def encoding_value(positions_in_text: int, width: int, base: float, shown: int) -> Exercise | None:
    """Component i ≈ d/8 (a sine) of the sinusoidal vector of the text's last position."""
    if positions_in_text < 2:
        return None  # position 0 alone: every sine of it is 0, nothing to compute
    position = positions_in_text - 1
    dimension = 2 * (width // 16)  # the sine near d/8, one of the curves the page draws first
    table = sinusoidal_positional_encoding(max(shown, position + 1), width, base)
    value = float(table[position, dimension])
    frequency = base ** (-dimension / width)  # ω_i
    angle = frequency * position
    return Exercise(
        question=(
            f"Your text uses {_positions_used(positions_in_text)}. With width d = {width} and base {base:g}, "
            f"what is component i = {dimension} of the sinusoidal vector of position t = {position}, the last "
            "one your text uses? For even i, $p_i(t) = \\sin(\\omega_i\\, t)$ with "
            "$\\omega_i = \\text{base}^{-i/d}$. Answer to two decimals (answers within ±0.01 count)."
        ),
        answer=value,
        explanation=(
            f"$\\omega_{{{dimension}}} = {base:g}^{{-{dimension}/{width}}} = {frequency:.6f}$, so the angle is "
            f"${frequency:.6f} \\times {position} = {angle:.4f}$ radians, and $\\sin({angle:.4f}) = {value:.4f}$. "
            f"This pair of dimensions turns once every $2\\pi/\\omega = {2 * math.pi / frequency:.1f}$ positions: "
            f"it has made {angle / (2 * math.pi):.2f} turns by position {position}."
        ),
        tolerance=0.01,
        decimals=2,
        figure=lambda: dimension_curves(
            table,
            [dimension],
            f"Dimension {dimension} of the sinusoidal encoding<br>d = {width}, base = {base:g}",  # fits a phone
            positions_in_text=positions_in_text,
            marked=(position, dimension),
        ),
    )


def rotary_period(positions_in_text: int, width: int, base: float, shown: int) -> Exercise | None:
    """After how many positions SmolLM2's pair k = d_head/8 (the middle arrow of the rotary tab) has turned
    once round: 2π/ω_k, from SmolLM2's θ and head width. Asked whatever the text: it depends on the model."""
    config = SMOLLM2_135M
    head_width, theta = config.head_width, config.rope_theta
    pair = head_width // 8
    frequency = float(rotary_frequencies(head_width, theta)[pair])
    period = 2 * math.pi / frequency
    return Exercise(
        question=(
            f"SmolLM2 turns pair k of every query and key by $\\omega_k = \\theta^{{-2k/d_\\text{{head}}}}$ radians a "
            f"position, with θ = {theta:g} and heads of d_head = {head_width} coordinates. After how many positions "
            f"has pair k = {pair} turned once all the way round (2π radians)? Answer to the nearest whole position "
            "(answers within ±1 count)."
        ),
        answer=period,
        explanation=(
            f"$\\omega_{{{pair}}} = {theta:g}^{{-2\\cdot{pair}/{head_width}}} = {frequency:.6f}$ radians a position, "
            f"so one turn takes $2\\pi/\\omega_{{{pair}}} = {period:.1f}$ positions. Pair 0 turns once every "
            f"{2 * math.pi:.1f} positions and the last pair once every "
            f"{2 * math.pi / float(rotary_frequencies(head_width, theta)[-1]):,.0f}: between them, every distance a "
            "text can hold is told apart by some pair turning at a fitting speed."
        ),
        tolerance=1.0,
        decimals=0,
        figure=lambda: rotation_frequencies(
            rotary_frequencies(head_width, theta),
            sinusoidal_frequencies(width, base),
            theta,
            head_width,
            base,
            width,
            f"Pair {pair} turns {frequency:.4f} rad a position",
        ),
    )


OFFERS = {
    "nearest": Offer("The most alike position", nearest_position),
    "value": Offer("One value of the table", encoding_value),
    "rotary": Offer("A rotary pair's turn", rotary_period),
}
