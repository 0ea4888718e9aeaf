"""The decoder lesson's link keys: each names one choice in the address bar (`?dec_word=hello&dec_tab=...`).

Defined once here; the page and its tests import them. Changing one would break every link shared so far.
"""

WORD = "dec_word"  # the word the reverser reverses, as typed (a link must carry one the reverser can read)
TAB = "dec_tab"  # the open tab, by its name (TABS)

ATTENTIONS, GENERATION, FAMILIES = "Three attentions", "Writing the answer", "Three families"
TABS = (ATTENTIONS, GENERATION, FAMILIES)
