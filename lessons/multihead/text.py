"""What the multi-head lesson says: its prose and formulas, kept apart from the widgets that show them."""

from lessons.common.attention_sinks import SINK_THRESHOLD

INTRO = (
    "One attention head computes one weighted average per token. A multi-head layer runs $H$ of them side "
    "by side, each with its own $W_Q$, $W_K$ and $W_V$ of width $d_{head} = D / H$, so that one head can follow "
    "syntax while another tracks position. This page opens every head of a real model on your text."
)
NEEDS_ENCODER = (
    "This lesson needs a BERT-style encoder with its tokenizer. Leave the model field empty to use "
    "the embedded all-MiniLM-L6-v2."
)
NEEDS_TEXT = "Type some text in the sidebar (a sentence or two) to see how each head reads it."
STUDIED_HEAD_HELP = (
    "Used for the full-resolution map, the two-sentence comparison and as the head switched off by default."
)

# ----- All heads

ALL_HEADS_INTRO = (
    "Each panel is one head's attention matrix: row *i* is how query token *i* shares its attention "
    "over the keys. All panels use **one colour scale**, so equal shades mean equal weights: a head "
    "that is dark in one cell and pale elsewhere is focused; a head with an even wash is spreading out."
)


def pooled_caption(tokens: int, rows: int, columns: int) -> str:
    return (
        f"The text has {tokens} tokens, so each panel is shrunk by average pooling to "
        f"{rows} × {columns}: a cell is the mean weight over a block of "
        f"tokens. Turn on the full-resolution view below to see one head exactly."
    )


# ----- Head view

HEAD_VIEW_INTRO = (
    "The same weights as lines: each token on the left is a **query**, each token on the right a **key**. "
    "A line's darkness and thickness is the weight the query gives that key. Pick several heads to see "
    "how differently they connect the same words (one colour per head)."
)
THRESHOLD_HELP = "Lines below this weight are left out, so the strong links stand out."
CHOOSE_A_HEAD = "Choose at least one head to draw."


def window_caption(tokens: int, window: range, lines: int) -> str:
    return (
        f"The text has {tokens} tokens; the view shows tokens {window.start}–{window.stop - 1} and "
        f"the links among them (at most {lines} per head)."
    )


# ----- Two sentences

TWO_SENTENCES_INTRO = (
    "The same head reads every sentence with the same weights $W_Q$, $W_K$, $W_V$, yet where a word looks "
    "depends on its neighbours. In *time flies like an arrow*, “flies” is a verb; in *fruit flies like "
    "a banana* it is a noun. Both sentences run through the model; the chosen layer and head are shown "
    "for each."
)
NEEDS_TWO_SENTENCES = "Type a sentence in both boxes to compare them."
NO_SHARED_WORD = "The two sentences share no word, so there is no word to follow from one to the other."
SHARED_WORD_HELP = "Words (tokens) found in both sentences."


def largest_shift_caption(layer: int, head: int, shift: float) -> str:
    return (
        f"In layer {layer}, the word's attention differs most between the sentences in head {head} "
        f"(½ Σ|p − q| = {shift:.2f}, from 0 = same to 1 = disjoint)."
    )


def study_head(head: int) -> str:
    return f"Study head {head} instead"


def similarity_intro(same_position: bool) -> str:
    return (
        "How alike is the word's vector in the two sentences at each depth? Cosine similarity 1 means the "
        "same direction. "
        + (
            "It sits at the same position in both, so its embedding is identical and the similarity starts at 1; "
            "every layer then mixes in its different neighbours."
            if same_position
            else "It sits at different positions, so even the embeddings differ by their position vectors."
        )
    )


# ----- Head statistics

STATISTICS_INTRO = (
    "A few numbers per head describe how it looks, averaged over the query tokens of the text. "
    "Click a column header to sort the table; the map shows one statistic for the whole stack."
)
STATISTICS_FORMULA = (  # two lines: on one they run past a tablet's width
    r"\begin{gathered} H_i = -\sum_j a_{ij}\log a_{ij} \qquad d_i = \sum_j a_{ij}\,|i-j| \\ "
    r"\text{share}_i(K) = \sum_{j\in K} a_{ij} \end{gathered}"
)
STATISTICS_NOTE = (
    "Entropy is 0 for a head that puts everything on one key and log T for one that spreads evenly over "
    "T keys. Shares on [CLS] and [SEP] are often large: BERT-style heads with nothing to do park their "
    "attention there. The previous-token share is averaged over tokens 1 … T−1 (token 0 has no previous)."
)


def statistic_title(description: str) -> str:
    """A map's title from a statistic's description: what comes before its formula or scale."""
    return description.split(":")[0]


RESTING_HEADING = "Where the heads rest"
RESTING_INTRO = (
    "Clark et al. (2019, *What Does BERT Look At?*) found that many of BERT's heads put most of their weight "
    "on [SEP], and some on [CLS], on almost any text. They read it as a **no-op**: a head whose own pattern "
    "(the next word, the object of a verb…) finds nothing to do in a sentence parks its attention on a token "
    "that is always there, and adds little. A decoder does the same with its very first token, an *attention "
    "sink*. Gu et al. (2024) count a head as a sink when that token's *importance*, the weight it gets averaged "
    f"over every query that can see it, exceeds ε = {SINK_THRESHOLD}. In an encoder every query sees every key, so "
    "a token's importance is simply its share in the table above, and the same rule counts the heads that "
    "rest on [CLS] or [SEP]. Where do the heads of the model in use rest?"
)
SINKS_LINK_LABEL = "A decoder's first-token sink: Attention sinks"
RESTING_MAP_NOTE = (
    "Which heads they are: draw the share of attention on [CLS] or on [SEP] on the map above; "
    f"the cells above {SINK_THRESHOLD} are the heads counted here."
)


def resting_total(on_sep: int, on_cls: int, either: int, heads: int, threshold: float) -> str:
    return (
        f"On your text, **{on_sep} of {heads}** heads rest on [SEP] and **{on_cls} of {heads}** on [CLS] "
        f"(**{either}** on one or the other): they give it more than {threshold} of their attention."
    )


def even_spread_note(tokens: int) -> str:
    return (
        f"Your text is only {tokens} tokens long: a head that spreads its attention evenly gives each token "
        f"1/{tokens} of it, more than ε, so it counts as well. A longer text tells resting heads from even ones."
    )


# ----- Split and recombine

RECOMBINATION_INTRO = (
    "Multi-head attention splits each token's $D$ numbers into $H$ heads of $d_{head}$ numbers, lets each "
    "head attend on its own, then lays the $H$ outputs side by side again and mixes them with $W_O$. "
    "Here is that path on the real numbers of one token."
)
RECOMBINATION_FORMULA = (  # two lines: on one they run past a phone's width
    r"\begin{gathered} \text{concat} = [\,o_1\;o_2\;\cdots\;o_H\,] \\ "
    r"\text{output} = \text{concat}\,W_O^\top + b = \sum_{h} o_h\,W_{O,h}^\top + b \end{gathered}"
)
RECOMBINATION_CHECKS = (
    "torch.cat(head outputs) vs traced concatenation",
    "concat · W_Oᵀ + b vs traced attention output",
    "Σ_h head contribution + b vs traced attention output",
)
RECOMBINATION_NOTE = (
    "The concatenation is a reshape, so it matches exactly; the products differ only by float rounding."
)

# ----- Switch a head off

SWITCH_OFF_INTRO = (
    "Switching a head off means zeroing its output before $W_O$, so it adds nothing to any token, and "
    "letting the rest of the network run as usual. The shared model is never changed: the layer is "
    "recomputed from the recorded head outputs and the later layers run on the new vectors."
)
CLS_METRIC = "[CLS] at the end"
CLS_METRIC_HELP = "Cosine similarity of the last layer's [CLS] vector with and without the heads: 1 = unchanged."
LEAST_SIMILAR_METRIC = "Least similar token"
LEAST_SIMILAR_METRIC_HELP = "The lowest cosine similarity of any token's last-layer vector with and without the heads."
SHIFT_METRIC = "Largest later shift"
SHIFT_METRIC_HELP = (
    "How far the attention of the later head that moved most changed: ½ Σ|p − q| over each query's row, "
    "averaged over the rows (0 = unchanged, 1 = disjoint)."
)
SHIFT_NOTE = (
    "Each cell is ½ Σ|p − q| between a later head's attention row p with the heads and q without them, "
    "averaged over its rows: 0 = unchanged, 1 = disjoint."
)
NOTHING_SWITCHED_OFF = "No head is switched off, so every vector is exactly as before."


def untouched_caption(layer: int) -> str:
    untouched = "The embeddings row is" if layer == 0 else f"The rows up to “after layer {layer - 1}” are"
    return f"{untouched} untouched: the change starts in layer {layer} and the residual stream carries it on."
