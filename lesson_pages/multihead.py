"""Multi-head comparison: every head of a layer side by side, a head view, two sentences compared,
statistics of every head in the stack, the split → concatenate → W_O path, and switching a head off.

Every number comes from `lessons.multihead`; this page only lays it out.
"""

import streamlit as st

from anatomy.attention import MultiHeadAttention, merge_heads, split_heads
from lessons.common import pooling
from lessons.common.ui import check_yourself, frame, sidebar, widgets
from lessons.multihead import ablation, exercises, links, text, ui
from lessons.multihead import statistics as head_stats

context = sidebar.current()
st.title("Multi-head comparison")
st.markdown(text.INTRO)

view = ui.layer_view(context)
# While an exercise waits for an answer, the tabs are held back: they would give it away.
if view is not None and not check_yourself.offer(exercises.OFFERS, view.run, view.layer):
    widgets.show_open_tab(ui.SECTIONS, links.TAB, view)

widgets.show_source(
    MultiHeadAttention.forward,
    split_heads,
    merge_heads,
    head_stats.head_statistics,
    head_stats.row_entropy,
    head_stats.attention_distance,
    pooling.average_pool,
    ablation.recombine_heads,
    ablation.ablate_heads,
    ablation.layer_with_heads_scaled,
)
frame.previous_and_next("multihead")
