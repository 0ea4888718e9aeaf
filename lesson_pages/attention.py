"""Scaled dot-product attention, one step at a time, on numbers the learner can edit or on their own text.

Four sources feed the same five steps (Q, K, V → QKᵀ → ÷√d_k → softmax → ·V): a 3-token toy with every entry
editable, a 2-feature "Apple" example, a text's embeddings used directly as Q = K = V, and one head of the
real model. Every number comes from `lessons.attention`; this page only lays it out.
"""

from collections.abc import Callable

import streamlit as st

from anatomy.attention import (
    apply_mask,
    attention_scores,
    attention_weights,
    masked_softmax,
    scaled_dot_product_attention,
)
from lessons.attention import exercises, links, text, ui
from lessons.attention.matrix_input import parse_matrix
from lessons.attention.steps import embedding_self_attention, score_anatomy, traced_head_steps
from lessons.common import examples
from lessons.common.ui import check_yourself, frame, linked, sidebar, widgets

SOURCE_CODE: dict[str, list[Callable[..., object]]] = {  # what each source runs, shown under the page
    "toy": [parse_matrix, examples.single_head_steps],
    "apple": [examples.apple_iphones, examples.single_head_steps],
    "embeddings": [embedding_self_attention],
    "model": [traced_head_steps],
}

context = sidebar.current()
st.title("Scaled dot-product attention, step by step")
st.markdown(text.INTRO)
st.latex(text.FORMULA)

source = linked.segmented("What to attend over", links.SOURCE, text.SOURCES, "toy")
lesson = ui.lesson_from(source, context)
if lesson is not None:
    step, show_all, window, query_index, key_index = ui.choose_focus(lesson)
    # While an exercise waits for an answer, the steps are held back: they would give it away.
    if not check_yourself.offer(exercises.OFFERS, lesson, query_index, key_index):
        ui.show_steps(lesson, step, show_all, window, (query_index, key_index))
        ui.show_neuron_view(lesson, query_index, key_index)
        if source == "apple":
            ui.show_apple_moves(lesson)
        ui.show_full_pattern(lesson)

widgets.show_source(
    attention_scores,
    apply_mask,
    masked_softmax,
    attention_weights,
    scaled_dot_product_attention,
    *SOURCE_CODE[source],
    score_anatomy,
)
frame.previous_and_next("attention")
