"""Tokenization: how the model cuts text into WordPiece tokens, how each token id picks one row of the
embedding table, and how two other tokenizer families, trained here on a small corpus, cut the same text."""

import streamlit as st

from lessons.common.runs import tokenize
from lessons.common.ui import check_yourself, frame, sidebar, widgets
from lessons.tokenization import exercises, links, text, ui, zoo

context = sidebar.current()
st.title("Tokenization")
st.markdown(text.INTRO)

pretrained = context.pretrained
if not context.has_text:
    st.info(text.NEEDS_TEXT)
elif pretrained.family != "encoder" or pretrained.tokenizer is None:
    st.warning(text.NEEDS_WORDPIECE)
else:
    pair, show_special = ui.choose_inputs()
    texts = (context.text, pair) if pair else (context.text,)
    tokenized = tokenize(
        pretrained.tokenizer,
        context.text,
        pair,
        max_tokens=pretrained.config.max_positions,
        add_special_tokens=show_special,
    )
    widgets.truncation_notice(tokenized)
    rows = zoo.describe_tokens(tokenized, texts, pretrained.tokenizer.unk_token)
    read = zoo.texts_read(rows, texts, tokenized.truncated)
    notes = ui.notes_on(pretrained.tokenizer, show_special)
    # While an exercise waits for an answer, the tabs are held back: they would give it away.
    if not check_yourself.offer(exercises.OFFERS, pretrained.tokenizer, context.text, pretrained.config.max_positions):
        widgets.show_open_tab(
            {
                links.TEXT_TO_TOKENS: lambda: ui.show_tokens(rows, read, notes, pretrained.config.vocab_size),
                links.TOKENS_TO_VECTORS: lambda: ui.show_lookup(context, pair),
                links.THREE_TOKENIZERS: lambda: ui.show_zoo(context, read[0]),
            },
            links.TAB,
        )

frame.previous_and_next("tokenization")
