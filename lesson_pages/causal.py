"""Causal masking: why a decoder must not see the future, and what a mask does to the attention scores.

The page masks a head of the sidebar's encoder (or shows a sidebar GPT-2's own causal heads), then follows a
decoder trained here as it sorts a word one token at a time, beside its twin trained without the mask.
"""

from collections.abc import Callable

import streamlit as st

from anatomy.attention import apply_mask, attention_scores, attention_weights, masked_softmax
from anatomy.generation import generation_loop, generation_steps
from anatomy.masks import causal_mask, combine_masks, padding_mask
from lessons.causal import decoders_ui, decoding, exercises, links, masking, text, ui
from lessons.common.ui import check_yourself, frame, sidebar, widgets

SOURCE_CODE: dict[str, list[Callable[..., object]]] = {  # what each tab runs, shown under the page
    links.WORKED_EXAMPLE: [masking.mask_scores, causal_mask, apply_mask, masked_softmax],
    links.REAL_HEAD: [
        masking.causal,
        masking.attend,
        causal_mask,
        attention_scores,
        apply_mask,
        attention_weights,
        masked_softmax,
    ],
    links.THREE_MASKS: [
        masking.unmasked,
        masking.causal,
        masking.padded,
        masking.attend,
        padding_mask,
        causal_mask,
        combine_masks,
        masking.run_padded,
    ],
    links.TRAINED: [decoding.generate_greedily, generation_steps, generation_loop, decoding.teacher_force],
}

SECTIONS = {
    links.WORKED_EXAMPLE: lambda context: ui.show_worked_example(),
    links.REAL_HEAD: lambda context: ui.show_sidebar_model(context, links.REAL_HEAD),
    links.THREE_MASKS: lambda context: ui.show_sidebar_model(context, links.THREE_MASKS),
    links.TRAINED: lambda context: decoders_ui.show_trained_decoder(),
}

context = sidebar.current()
st.title("Causal masking")
st.markdown(text.WHY_MASK)
st.latex(text.MASK_FORMULA)
# While an exercise waits for an answer, the tabs are held back: they would give it away.
if not check_yourself.offer(exercises.OFFERS, lambda: ui.exercise_head(context)):
    widgets.show_open_tab(SECTIONS, links.TAB, context, renamed=links.RENAMED_TABS)
widgets.show_source(*SOURCE_CODE[widgets.open_tab_name(SECTIONS, links.TAB)])
frame.previous_and_next("causal")
