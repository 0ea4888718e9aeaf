"""A real language model: SmolLM2-135M reads the sidebar's text, guesses the next token, writes, attends,
and reads a chat laid out by its template."""

import streamlit as st

from anatomy.attention import AttentionEdit, one_head_weights
from anatomy.blocks import DecoderLayer, ResidualBlock
from anatomy.cache import LayerCache
from anatomy.feedforward import FeedForward
from anatomy.generation import filtered_scores, generation_loop, generation_steps, next_tokens
from anatomy.models import DecoderOnlyLM
from anatomy.norms import RMSNorm
from anatomy.rotary import Rotation
from lessons.common import decoder_attention, pooling
from lessons.common.ui import check_yourself, frame, sidebar, widgets
from lessons.language_model import exercises, heads, links, logit_lens, text, ui, writing

context = sidebar.current()
st.title("A real language model: SmolLM2")
st.markdown(text.INTRO)
st.markdown(text.WHAT_CHANGED)
chat = ui.model()  # or a message saying why this server has no SmolLM2, and the end of the page
ui.show_model_facts(chat)
tokens = ui.show_tokens(chat, context.text)
# While an exercise waits for an answer, the tabs are held back: they would give it away.
if not check_yourself.offer(exercises.OFFERS, chat, tokens, ui.runs_for(context.text)):
    widgets.show_open_tab(ui.SECTIONS, links.TAB, chat, tokens, context.text)
widgets.show_source(
    DecoderOnlyLM.forward,
    DecoderLayer.forward,
    ResidualBlock.sublayer,
    RMSNorm,
    Rotation,
    FeedForward,
    LayerCache,
    next_tokens,
    filtered_scores,
    writing.write,
    generation_steps,
    generation_loop,
    decoder_attention.max_tokens,
    decoder_attention.layer_attention,
    one_head_weights,
    pooling.average_pool,
    heads.importance,
    heads.diagonal_score,
    heads.without_first_token,
    AttentionEdit,
    logit_lens.logit_lens,
)
frame.previous_and_next("language_model")
