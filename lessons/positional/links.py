"""The positional lesson's link keys: each names one choice in the address bar (`?pos_d=64&pos_tab=...`).

Defined once here; the page and its tests import them. Changing one would break every link shared so far.
"""

TAB = "pos_tab"  # the open tab, by its name (TABS)
WIDTH = "pos_d"  # the sinusoidal table's width d
BASE = "pos_base"  # its base, which sets the slowest wave (written as 10000, not 10000.0)
SHOWN = "pos_n"  # how many positions (rows of each table) the charts use
DIMENSIONS = "pos_dims"  # the columns drawn as curves, comma-separated
POSITION = "pos_p"  # the position p whose similarity with every other is drawn
MEASURE = "pos_measure"  # cosine or dot product
ROPE_LAYER = "pos_rope_layer"  # the rotary tab: SmolLM2's layer,
ROPE_HEAD = "pos_rope_head"  # its query head,
ROPE_QUERY = "pos_rope_q"  # the token whose query is followed,
ROPE_KEY = "pos_rope_k"  # and the token whose key it is scored against (positions in SmolLM2's tokens)

CURVES, TABLE, SIMILARITY, PROPERTIES, ROTARY = (
    "Formula and curves",
    "The whole table",
    "Similarity between positions",
    "Bounded, unique, deterministic",
    "Rotary positions",
)
TABS = (CURVES, TABLE, SIMILARITY, PROPERTIES, ROTARY)
