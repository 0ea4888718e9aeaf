"""The welcome page: what the app is, the lessons in order, and the model in use."""

import streamlit as st

from lessons.common.ui import frame, sidebar

context = sidebar.current()
config = context.pretrained.config

st.title("Transformer anatomy")
st.markdown(
    """
A transformer turns a sentence into numbers, lets every word look at every other word, and repeats that
a few times. This app opens up a real one — **all-MiniLM-L6-v2**, a small BERT encoder that runs right here —
and shows every number it computes, step by step, on text you choose.

Work through the lessons in order, or jump to the one you need:
"""
)
lessons = [lesson for lesson in frame.LESSONS if lesson.number]
for start in range(0, len(lessons), 3):  # rows of three, read left to right as numbered
    for column, lesson in zip(st.columns(3), lessons[start : start + 3], strict=False):
        with column:
            st.page_link(lesson.file, label=lesson.numbered_title, icon=lesson.icon)
            st.caption(lesson.summary)

st.markdown(
    "Decoders write text one token at a time. Besides a real one (SmolLM2, lesson 9), this project trained three "
    "small ones itself, small enough to watch every step: a letter sorter, the same sorter trained without its "
    "causal mask (a cheater), and an encoder–decoder that reverses words. Their weights ship with the app; "
    "lessons 5, 7 and 8 use them, and lesson 8 trains them again before your eyes."
)

st.divider()
st.subheader("The model in use")
st.write(
    f"{config.num_layers} layers, {config.num_heads} attention heads of width {config.head_width}, "
    f"model width {config.width}, feed-forward width {config.ff_width}, vocabulary of {config.vocab_size:,} "
    f"WordPiece tokens, up to {config.max_positions} tokens per input."
)
st.caption(
    "Change the text in the sidebar at any time: every page recomputes. The address bar always holds "
    "the current view, so copying it shares exactly what you see."
)
frame.previous_and_next("home")
