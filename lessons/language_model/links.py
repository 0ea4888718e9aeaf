"""The language-model lesson's link keys: each names one choice in the address bar (`?lm_tab=...&lm_layer=...`).

Defined once here; the page and its tests import them. Changing one would break every link shared so far.
"""

TAB = "lm_tab"  # the open tab, by its name (TABS)
TOP_K = "lm_top_k"  # how many next-token candidates are drawn
MODE = "lm_mode"  # "greedy" or "sampled"
NEW_TOKENS = "lm_new_tokens"  # how many tokens to write at most
TEMPERATURE = "lm_temperature"
SAMPLE_TOP_K = "lm_sample_top_k"  # sampling keeps only the k best tokens (0: all)
TOP_P = "lm_top_p"  # sampling keeps the fewest best tokens worth p together (1: all)
SEED = "lm_seed"
PAST_END_OF_TURN = "lm_past_end"  # keep writing after the model ends its turn with <|im_end|>
LAYER = "lm_layer"
HEAD = "lm_head"
WINDOW_START = "lm_window_start"  # first token of the window a long text is shown through
MESSAGE = "lm_message"  # the user's message put through the chat template
REPLY = "lm_reply"  # let the model answer that message
SINK_REMOVAL = "lm_sink_off"  # run the experiment that removes one layer's attention sink
SINK_LAYER = "lm_sink_layer"  # the layer whose attention sink is removed
LENS_END = "lm_lens_end"  # the last position the logit lens reads (it reads a few before it too)

NEXT_TOKEN, WRITING, ATTENTION, CHAT = ("The next token", "Writing", "Attention", "Chat template")
SINKS, INDUCTION, LOGIT_LENS = ("Attention sinks", "Induction heads", "Logit lens")
TABS = (NEXT_TOKEN, WRITING, ATTENTION, CHAT, SINKS, INDUCTION, LOGIT_LENS)
