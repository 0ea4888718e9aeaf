"""The causal-masking lesson's link keys: each names one choice in the address bar (`?cm_tab=...&cm_word=...`).

Defined once here; the page and its tests import them. Changing one would break every link shared so far.
"""

TAB = "cm_tab"  # the open tab, by its name (TABS)
LAYER = "cm_layer"
HEAD = "cm_head"
WINDOW_START = "cm_window_start"  # first token of the window a long text is shown through
WHOLE_MATRIX = "cm_full"  # the whole T × T matrix of a long text
PADS = "cm_pad"  # [PAD] tokens added after the text
PAD_AND_CAUSAL = "cm_pad_causal"  # padding and causal mask together
WORD = "cm_word"  # the word the letter sorter sorts
CHEATER = "cm_cheater"  # run the model trained without the mask beside it
STEP = "cm_step"  # the sorter's generation step looked at
TOP_K = "cm_top_k"  # how many next-token candidates a GPT-2 shows

WORKED_EXAMPLE, REAL_HEAD, THREE_MASKS, TRAINED = (
    "A worked example",
    "One head on your text",
    "No mask, padding, causal",
    "A trained decoder",
)
TABS = (WORKED_EXAMPLE, REAL_HEAD, THREE_MASKS, TRAINED)
# Tab names that links made before a rename still carry: the tab each now opens.
RENAMED_TABS = {"The chapter's example": WORKED_EXAMPLE}
