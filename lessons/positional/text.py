"""What the positional lesson says: its prose and formulas, kept apart from the widgets that show them."""

INTRO = """
Attention compares every token with every other token, and nothing in that comparison says *where* a
token sits: shuffle the input and each output is shuffled the same way, value for value. So before the
first layer the model adds a **position vector** to each token's embedding: one vector for position 0,
another for position 1, and so on. "Attention Is All You Need" builds those vectors from sines and cosines.
BERT-family models, this one included, do not: they **learn** a table of position vectors during
training, like any other weight.
"""

MEASURES = {"cosine": "cosine", "dot": "dot product"}  # similarity measure -> its name on the page

# ----- the settings above the tabs --------------------------------------------------------------------------

BASE_HELP = (
    "Sets the slowest wave: the last pair turns once every 2π·base^((d−2)/d) positions, a little under 2π·base "
    "for a wide table. The paper uses 10000."
)
SHOWN_HELP = "How many positions (rows of each table) the charts use."
BASE_REQUIREMENT = "base must be a number greater than 1"
MEASURE_REQUIREMENT = "measure must be cosine or dot"


def text_positions(count: int) -> str:
    return (
        f"The text in the sidebar makes {count} tokens, so it uses positions 0 to {count - 1}; "
        "the curves below shade them."
    )


def width_help(low: int, high: int, model_width: int) -> str:
    return (
        f"How many numbers encode one position: an even number from {low} to {high}, a sine and a cosine for "
        f"each frequency; this model's width is {model_width}."
    )


def width_requirement(low: int, high: int) -> str:
    return f"width d must be an even whole number from {low} to {high}"


def position_requirement(shown: int) -> str:
    return f"position p must be a whole number from 0 to {shown - 1}"


def settings_problem(problem: str) -> str:
    return f"{problem} Change it above to see the encoding."


# ----- formula and curves -------------------------------------------------------------------------------------

COMPONENT = "Component $i$ of the vector for position $t$, in a model of width $d$:"
FORMULA = (
    r"p_i(t) = \begin{cases} \sin(\omega_i\, t) & i \text{ even} \\ \cos(\omega_{i-1}\, t) & i \text{ odd}"
    r"\end{cases} \qquad \omega_k = \text{base}^{-k/d}"
)
NO_DIMENSIONS = "Pick at least one dimension to draw its curve."


def clock_hands(width: int, base: float, slowest_period: float) -> str:
    """The pairs of dimensions as clock hands, with the slowest one's period for this width and base."""
    return f"""
Dimensions come in pairs that share one frequency: a sine at each even $i$ and a cosine at the odd $i$
just after it. The first pair turns fastest, one full cycle every $2\\pi \\approx 6.3$ positions; each
following pair turns slower, and the last one needs about {slowest_period:,.0f} positions for a
cycle (with d = {width} and base {base:g}). Read one position as a row of clock hands turning at different
speeds: the fast hands tell neighbours apart, the slow ones tell the start of a long text from its end.
"""


# ----- the whole table ----------------------------------------------------------------------------------------

TABLE_INTRO = """
Each row is one position's vector, each column one dimension. In the sinusoidal table the left columns
flicker from row to row (fast waves) and the right ones barely change (slow waves): that spread of speeds
is what makes every row different. Beside it, the table this model **learned**. Nothing forces it to look
like a sinusoid, and it does not: BERT-family models treat position vectors as weights and train them.
"""
NO_LEARNED_TABLE = "This model adds sinusoidal positions, so it has no learned table to show."


def learned_table_caption(rows: int, width: int, colour_limit: float, largest_magnitude: float) -> str:
    return (
        f"The learned table is `model.embeddings.position.weight`, {rows} rows of "
        f"{width}: the model cannot place a token past position "
        f"{rows - 1}, where a sinusoid would simply keep turning. Its colours saturate at "
        f"±{colour_limit:.3f} (99% of its values are smaller), although a few reach "
        f"{largest_magnitude:.2f}."
    )


# ----- similarity between positions ---------------------------------------------------------------------------

SIMILARITY_INTRO = (
    "How alike are the vectors of positions $p$ and $q$? For the sinusoidal table there is a closed form: "
    "each sine/cosine pair adds $\\sin\\omega p \\sin\\omega q + \\cos\\omega p \\cos\\omega q = "
    "\\cos(\\omega(p - q))$, so"
)
SIMILARITY_FORMULA = r"P(p)\cdot P(q) = \sum_{k\ \text{even}} \cos\big(\omega_k\,(p - q)\big)"
DISTANCE_ALONE = (
    "depends on the distance $p - q$ alone, not on where the pair sits. Every sinusoidal row has the same "
    "length, so the cosine tells the same story. The learned table only roughly does: nearby positions "
    "are alike, but the pattern drifts along the text."
)
DOT_SCALES = "The two tables' dot products live on different scales: the cosine compares their shapes."
BY_DISTANCE = (
    "Grouping all pairs by their distance $q - p$ makes the claim measurable: where similarity depends on "
    "the distance only, all pairs at one distance agree and the band shrinks to a line."
)
WIDEST_BAND_HELP = "The largest gap between two pairs of positions the same distance apart."

# ----- bounded, unique, deterministic -------------------------------------------------------------------------

PROPERTIES_INTRO = """
The paper's encoding has three properties. Here they are measured on the tables above, not taken on trust:

* **bounded**: sines and cosines never leave $[-1, 1]$, so a position vector cannot drown the token
  embedding it is added to, however long the text;
* **unique**: no two positions share a vector, so the smallest distance between two rows is above 0;
* **deterministic**: nothing is random or learned, so building the table twice gives the same bits.

A learned table is promised none of this: its values are whatever training left, its rows differ only
because training made them differ, and it is fixed only in the sense that the weights are stored.
"""
TABLE_NAMES = {"sinusoidal": "The sinusoidal table", "learned": "The learned table"}  # heads of their columns

# ----- rotary positions -------------------------------------------------------------------------------------

ROTARY_INTRO = """
Most language models since 2021 (Llama, SmolLM2, the model of lesson 9) add **no** position vector at all.
**Rotary position embeddings** (RoPE; Su et al. 2021, "RoFormer") put the position inside attention instead: in
every layer, each head's query and key are cut into pairs of coordinates, and pair $k$ is **turned** by an angle
of position $\\times\\ \\omega_k$, with $\\omega_k = \\theta^{-2k/d_\\text{head}}$. Nothing is added, so each query
and key keeps its length; only its direction changes with where its token sits. The numbers below are
SmolLM2-135M's own: its queries and keys of the text in the sidebar, turned by the code its forward pass runs.
"""
ROTARY_FORMULAS = (  # three short lines rather than one: a phone's width holds each
    r"\begin{pmatrix} q'_k \\ q'_{k+d/2} \end{pmatrix} = R(m\,\omega_k) \begin{pmatrix} q_k \\ q_{k+d/2} \end{pmatrix}",
    r"R(\alpha) = \begin{pmatrix} \cos\alpha & -\sin\alpha \\ \sin\alpha & \cos\alpha \end{pmatrix}",
    r"\omega_k = \theta^{-2k/d_\text{head}}",
)
ROTARY_SPEEDS = """
**How fast each pair turns.** Pair 0 turns by one radian a position, like the fastest wave of the sinusoidal
table; every pair after it turns more slowly, down to θ^(−(d−2)/d) radians a position for the last. It is the
sinusoidal table's formula (with θ in place of the base): fast pairs tell neighbours apart, slow pairs tell
far-apart positions apart without wrapping around. SmolLM2 uses θ = {theta:g} with heads of {head_width}
coordinates, a larger θ than the paper's 10000, so its slowest pairs are slower still (a longer context).
"""
ROTARY_ARROWS = """
**One query, turned.** Below, the query of the chosen token, pair by pair, as it would be turned at positions 0
to {last}: each arrow is the pair's two coordinates. Its length never changes; the fast pair sweeps round, the
slow ones barely move.
"""
ROTARY_DISTANCE = """
**Why it works: only the distance is left.** Turning the query by $m\\omega_k$ and the key by $n\\omega_k$ and
then taking their dot product gives the same number as turning the key alone by $(n-m)\\omega_k$. So the score of
a query with a key depends on how far apart they are, not on where they are. Below, the query of one token and
the key of another, both from the sidebar's text, are placed at their own positions and then both moved $s$
places along (green: the score stays where it is), or the query alone moved (red: the distance changes, and the
score with it).
"""


def arrows_caption(frequencies: dict[int, float]) -> str:
    rates = "; ".join(f"pair {pair}: {rate:.3g} rad a position" for pair, rate in frequencies.items())
    return f"The fastest pair, one in between and the slowest ({rates}). Dark: position 0; lighter: later ones."


ROTARY_OFF = (
    "SmolLM2 is switched off on this server (hosted mode without ANATOMY_LANGUAGE_MODEL=1), so its own queries and"
    " keys cannot be shown here; the frequencies above come from its configuration."
)
ROTARY_NO_TEXT = "Type a text of at least two tokens in the sidebar to follow one of its queries and keys."
ROTARY_LOAD_FAILED = "SmolLM2 could not be loaded, so its queries and keys cannot be shown: {problem}"


def rotary_check(own_score: float, largest_change: float, query: str, key: str, shifts: int) -> str:
    return (
        f"The score of query {query} with key {key} at their own positions is {own_score:.6f}: the number the"
        f" forward pass computes there. Moved together over {shifts} shifts, it never changes by more than"
        f" {largest_change:.1e} (float32 rounding)."
    )
