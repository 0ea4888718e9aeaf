"""The attention lesson's link keys: each names one choice in the address bar (`?att_source=model&att_layer=2`).

Defined once here; the page and its tests import them. Changing one would break every link shared so far.
"""

SOURCE = "att_source"  # what to attend over: the toy, the Apple example, the text's embeddings, a head
LAYER = "att_layer"
HEAD = "att_head"
STEP = "att_step"  # 1..5: Q, K, V / QKᵀ / ÷√dₖ / softmax / ·V
ALL_STEPS = "att_all"  # all five steps at once
QUERY = "att_query"  # the query token followed
KEY = "att_key"  # the key token it is compared with
WINDOW_START = "att_window_start"  # first token of the window a long text is shown through
WHOLE_PATTERN = "att_full"  # the whole T × T pattern of a long text
TOY_MATRICES = "att_toy"  # the learner's edits of the toy's X, W_Q, W_K and W_V
