"""The tokenization lesson's link keys: each names one choice in the address bar (`?tok_tab=...&tok_pair=...`).

Defined once here; the page and its tests import them. Changing one would break every link shared so far.
"""

TAB = "tok_tab"  # the open tab, by its name (TABS)
PAIR = "tok_pair"  # the optional second sentence
SPECIAL_TOKENS = "tok_special"  # show [CLS] and [SEP]
FIRST_LINE = "tok_line"  # first line of the highlighted text drawn
VIEW = "tok_view"  # which embedding tensor the heatmap shows
DIMENSIONS = "tok_dims"  # how many of its dimensions
FIRST_ROW = "tok_first"  # first token row of the embedding heatmap
VOCAB_SIZE = "tok_vocab"  # vocabulary size of the BPE and Unigram tokenizers trained here

TEXT_TO_TOKENS, TOKENS_TO_VECTORS, THREE_TOKENIZERS = "Text → tokens", "Tokens → vectors", "Three tokenizers"
TABS = (TEXT_TO_TOKENS, TOKENS_TO_VECTORS, THREE_TOKENIZERS)
