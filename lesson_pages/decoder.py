"""Decoder & cross-attention: a small encoder-decoder trained here reverses a word, and its three kinds of
attention show how. Then the three families of transformer side by side, with their masks and sizes.

Every number comes from `lessons.decoder`; this page only lays it out.
"""

import streamlit as st

from anatomy.blocks import DecoderLayer
from anatomy.config import parameter_breakdown
from anatomy.generation import generation_loop, seq2seq_generation_steps
from anatomy.seq2seq import EncoderDecoder
from lessons.common.ui import check_yourself, frame, sidebar, widgets
from lessons.decoder import exercises, families, links, text, ui
from lessons.decoder.reversal import reverse_word

sidebar.current()  # first: a deep link on a fresh server goes through app.py (this lesson reads no sidebar text)
st.title("Decoder & cross-attention")
st.markdown(text.INTRO)

view = ui.reverse_the_chosen_word()
# While an exercise waits for an answer, the tabs are held back: they would give it away.
if not check_yourself.offer(exercises.OFFERS, view.lesson if view else None):
    widgets.show_open_tab(ui.SECTIONS, links.TAB, view)

widgets.show_source(
    reverse_word,
    seq2seq_generation_steps,
    generation_loop,
    EncoderDecoder.generate_greedy,
    DecoderLayer.forward,
    families.family_masks,
    parameter_breakdown,
)
frame.previous_and_next("decoder")
