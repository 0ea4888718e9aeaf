"""The multi-head lesson's link keys: each names one choice in the address bar (`?mh_layer=3&mh_tab=Head+view`).

Defined once here; the page and its tests import them. Changing one would break every link shared so far.
"""

LAYER = "mh_layer"  # the layer every tab reads
HEAD = "mh_head"  # the head studied closely: full resolution, two sentences, switched off by default
TAB = "mh_tab"  # the open tab, by its name (TABS)
FULL_RESOLUTION = "mh_full"  # the studied head alone, every token, next to the pooled grid
HEADS = "mh_heads"  # the heads the head view draws, as "2,3"
THRESHOLD = "mh_threshold"  # the head view leaves out lines below this weight
TOKEN = "mh_token"  # the token followed: the head view's window centre, the recombined token
SENTENCE_A = "mh_sentence_a"  # the two sentences compared
SENTENCE_B = "mh_sentence_b"
WORD = "mh_word"  # the word both sentences share, followed from one to the other
STATISTIC = "mh_stat"  # the statistic drawn for every layer and head
HEADS_OFF = "mh_ablate"  # the heads of the layer switched off, as "4,10"

ALL_HEADS, HEAD_VIEW, TWO_SENTENCES = "All heads", "Head view", "Two sentences"
HEAD_STATISTICS, SPLIT_AND_RECOMBINE, SWITCH_OFF = "Head statistics", "Split and recombine", "Switch a head off"
TABS = (ALL_HEADS, HEAD_VIEW, TWO_SENTENCES, HEAD_STATISTICS, SPLIT_AND_RECOMBINE, SWITCH_OFF)

# The language-model lesson's "Attention sinks" tab, linked from Head statistics. A lesson never imports another,
# so its link key and tab name are written here; tests/lessons/multihead/test_page.py checks them against
# lessons.language_model.links.
LANGUAGE_MODEL_LESSON = "language_model"
LANGUAGE_MODEL_SINKS_TAB = {"lm_tab": "Attention sinks"}
