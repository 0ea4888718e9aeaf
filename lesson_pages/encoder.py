"""The encoder stack: the studied text through every block of the model, from the embeddings to a
classification head on [CLS], the words it guesses behind [MASK], and what the stack is made of.

Eight tabs, and only the open one runs; above them, exercises to check yourself (`lessons.encoder.exercises`).
Every number comes from `lessons.encoder.analysis` and `lessons.encoder.tables`, every figure from
`lessons.encoder.figures`; `lessons.encoder.ui` lays them out.
"""

import streamlit as st

from anatomy.blocks import EncoderLayer, ResidualBlock
from anatomy.models import Encoder, run_stack
from lessons.common.ui import check_yourself, frame, sidebar, widgets
from lessons.encoder import exercises, links, text, ui

SECTIONS = {
    links.ATTENTION: ui.show_attention,
    links.HIDDEN_STATES: ui.show_hidden_states,
    links.WORD_IN_CONTEXT: ui.show_word_in_context,
    links.LAYER_NORM: ui.show_layer_norm,
    links.FEED_FORWARD: ui.show_feed_forward,
    links.CLASSIFIER: ui.show_classifier,
    links.FILL_MASK: ui.show_fill_mask,
    links.PARAMETERS: ui.show_parameters,
}

context = sidebar.current()
st.title("Encoder stack")
st.markdown(text.intro(context.pretrained.config.num_layers))
st.latex(text.BLOCK_FORMULA)

if context.pretrained.family != "encoder" or context.pretrained.tokenizer is None:
    st.info(text.NEEDS_ENCODER, icon=":material/info:")
elif not context.has_text:
    st.info(text.NEEDS_TEXT, icon=":material/edit:")
else:
    traced = ui.traced_text(context)
    # While an exercise waits for an answer, the tabs are held back: they would give it away.
    if not check_yourself.offer(exercises.OFFERS, traced.run, traced.config, context.pretrained):
        widgets.show_open_tab(SECTIONS, links.TAB, traced)

widgets.show_source(Encoder.forward, run_stack, EncoderLayer.forward, ResidualBlock.sublayer, title=text.SOURCE_TITLE)
frame.previous_and_next("encoder")
