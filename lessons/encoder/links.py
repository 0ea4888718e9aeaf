"""The encoder lesson's link keys: each names one choice in the address bar (`?enc_tab=Feed-forward&enc_layer=2`).

Defined once here; the page and its tests import them. Changing one would break every link shared so far.
"""

TAB = "enc_tab"  # the open tab, by its name (TABS)
LAYER = "enc_layer"  # the block looked inside, from 0; one choice shared by three tabs
HEAD = "enc_head"  # the head of that block whose map is shown in full, from 0
WINDOW_START = "enc_window"  # first token of the window a long text is shown through
COMPARE = "enc_compare"  # each depth's vectors against the depth before, or against the embeddings
SENTENCE_A = "enc_sentence_a"  # the two sentences a word is followed through
SENTENCE_B = "enc_sentence_b"
WORD = "enc_word"  # the word followed
NEURONS = "enc_neurons"  # how many of the most active feed-forward neurons are shown
LABELS = "enc_labels"  # the number of labels K of the untrained classification head
FILL_TOP_K = "enc_fill_k"  # how many words are shown for each [MASK]

ATTENTION, HIDDEN_STATES, WORD_IN_CONTEXT = "Attention, all layers", "Hidden states", "A word in context"
LAYER_NORM, FEED_FORWARD = "Pre-LN vs post-LN", "Feed-forward"
CLASSIFIER, FILL_MASK, PARAMETERS = "Classification head", "Fill the mask", "Parameters"
TABS = (ATTENTION, HIDDEN_STATES, WORD_IN_CONTEXT, LAYER_NORM, FEED_FORWARD, CLASSIFIER, FILL_MASK, PARAMETERS)
