"""What the attention lesson says: its prose and formulas, kept apart from the widgets that show them."""

INTRO = (
    "Attention lets every token rebuild its vector from the other tokens. Each token asks a question (its "
    "**query**), offers a label (its **key**) and carries content (its **value**). A query is compared with "
    "every key, the comparisons become weights, and the weights average the values:"
)
FORMULA = r"\mathrm{Attention}(Q, K, V) = \mathrm{softmax}\!\left(\frac{Q K^\top}{\sqrt{d_k}}\right) V"

SOURCES = {
    "toy": "“I love mathematics” (editable)",
    "apple": "“I love Apple iPhones”",
    "embeddings": "Your text, Q = K = V",
    "model": "Your text, a model head",
}
STEPS = {1: "Q, K, V", 2: "QKᵀ", 3: "÷ √dₖ", 4: "softmax", 5: "· V"}
SCORE_TABLES = {
    "raw": "QKᵀ (query ↓ key →)",
    "scaled": "QKᵀ/√dₖ (query ↓ key →)",
    "weights": "softmax weights (query ↓ key →)",
}
STEP_FORMULAS = {
    2: r"S = Q K^\top, \qquad S_{ij} = q_i \cdot k_j = \sum_f q_{i,f}\,k_{j,f}",
    3: r"\tilde S = \frac{S}{\sqrt{d_k}}",
    4: r"A_{ij} = \frac{e^{\tilde S_{ij}}}{\sum_{j'} e^{\tilde S_{ij'}}}",
    5: r"\text{output}_i = \sum_j A_{ij}\, v_j \qquad (\text{output} = A V)",
}
STEP_EXPLANATIONS = {
    1: "Every token gets three vectors, one row each of Q, K and V: what it looks for, what it offers to be "
    "found by, and what it passes on when found. Rows are tokens; the $d_k$ columns are features.",
    2: "Every query is compared with every key by a dot product: the more the two vectors point the same way, "
    "and the longer they are, the larger it is. Row *i* of this matrix says how well token *i*'s question "
    "matches each token's label. Hover a cell to see the whole computation it goes through.",
    3: "A dot product of two $d_k$-wide vectors whose entries are independent, with mean 0 and variance 1, has "
    "variance $d_k$. Dividing by $\\sqrt{d_k}$ brings the scores back to unit variance, so that for wide heads "
    "the softmax does not collapse onto a single key and its gradients do not vanish.",
    4: "The softmax turns each row into weights: positive, and summing to 1. Exponentials magnify "
    "differences, so a score a few units above the rest takes almost all the weight.",
    5: "Each token's output is the weighted average of the value vectors, with the weights of its row. "
    "This is where information moves between tokens.",
}

TOY_INTRO = (
    "Three tokens with 4-wide embeddings **X** and three 4×4 projections, small whole numbers so that every "
    "step can be checked by hand. Change any entry: every step below is recomputed. Each row of X is a token; "
    "Q = X·W_Q, K = X·W_K and V = X·W_V."
)
TOY_RESET = "Reset to the starting values"
TOY_PROJECTION = r"Q = X W_Q,\quad K = X W_K,\quad V = X W_V"

APPLE_INTRO = (
    "Four words described by two features, **fruitiness** and **technology**. There are no learned "
    "projections here: each word's embedding is its query, its key and its value at once, so a word "
    "attends most to the words whose features give the largest dot product with its own: pointing the same way "
    "counts, and so does being long. Apple points almost the same way as “I”, yet gives “I” almost none of its "
    "weight: its own key and iPhones' are much longer than “I”'s."
)
EMBEDDINGS_INTRO = (
    "The simplest attention there is: the model's input embeddings (token + position + segment, then "
    "LayerNorm) are used directly as queries, keys and values, with no projections. In hundreds of dimensions the "
    "embeddings of different tokens point in nearly unrelated directions, so a token usually scores highest "
    "with itself: watch the diagonal."
)
HEAD_PROJECTION = (  # one line each: side by side they run past a phone's width
    r"\begin{aligned} Q &= X W_Q^{(h)} + b_Q^{(h)} \\ K &= X W_K^{(h)} + b_K^{(h)} \\ "
    r"V &= X W_V^{(h)} + b_V^{(h)} \end{aligned}"
)
# Where a head's steps come from, as the exercises name it after "In".
TOY_ABOUT = "the “I love mathematics” example"
TOY_EDITED = "the “I love mathematics” example, with your edits"
APPLE_ABOUT = "the “I love Apple iPhones” example"
EMBEDDINGS_ABOUT = "attention over your text's embeddings (Q = K = V)"
NEEDS_TEXT = "Type some text in the sidebar: its tokens become the rows of every matrix below."
NEEDS_ENCODER = "This lesson reads an encoder's traced run; the model in use is not an encoder with a tokenizer."


def head_intro(layer: int, head: int, head_width: int, num_heads: int) -> str:
    return (
        f"The numbers the model computed in layer {layer}, head {head}. Its queries, keys and values are "
        f"{head_width}-wide slices of learned projections of the layer's input (with biases); "
        f"the other {num_heads - 1} heads do the same with their own projections."
    )


def head_about(layer: int, head: int) -> str:
    return f"layer {layer}, head {head} of the model"


def neuron_intro(query_index: int, key_index: int) -> str:
    return (
        f"Query {query_index} against key {key_index}, feature by feature. The bottom bars are the products "
        "$q_f\\,k_f$; their sum is the dot product, the very entry of QKᵀ that the heatmaps show."
    )
