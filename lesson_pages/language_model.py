"""A real language model: SmolLM2-135M reads the sidebar's text, guesses the next token, writes, attends,
and reads a chat laid out by its template."""

from collections.abc import Callable

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
from lessons.language_model import exercises, heads, links, logit_lens, reading, text, ui, writing

SOURCE_CODE: dict[str, list[Callable[..., object]]] = {  # what each tab runs, shown under the page
    links.NEXT_TOKEN: [
        reading.next_token_probabilities,
        DecoderOnlyLM.forward,
        DecoderLayer.forward,
        ResidualBlock.sublayer,
        RMSNorm,
        Rotation,
        FeedForward,
    ],
    links.WRITING: [writing.write, generation_steps, generation_loop, next_tokens, filtered_scores, LayerCache],
    links.ATTENTION: [
        decoder_attention.layer_attention,
        one_head_weights,
        decoder_attention.max_tokens,
        pooling.average_pool,
    ],
    links.CHAT: [reading.chat_tokens, writing.write],
    links.SINKS: [
        heads.first_token_importance,
        heads.scan,
        heads.importance,
        heads.remove_sink,
        heads.without_first_token,
        AttentionEdit,
    ],
    links.INDUCTION: [
        heads.induction_test,
        heads.scan,
        heads.induction_score,
        heads.diagonal_score,
        heads.heads_off,
    ],
    links.LOGIT_LENS: [logit_lens.logit_lens, logit_lens.read_as_the_head_does],
}

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
widgets.show_source(*SOURCE_CODE[widgets.open_tab_name(ui.SECTIONS, links.TAB)])
frame.previous_and_next("language_model")
