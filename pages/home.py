"""The welcome page: what the app is and where to start."""

import streamlit as st

from anatomy.ui import sidebar

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
col_a, col_b, col_c = st.columns(3)
with col_a:
    st.page_link("pages/tokenization.py", label="Tokenization", icon=":material/text_fields:")
    st.caption("How text becomes token ids, and ids become vectors.")
    st.page_link("pages/positional.py", label="Positional encodings", icon=":material/waves:")
    st.caption("How a model that sees a bag of vectors learns their order.")
with col_b:
    st.page_link("pages/attention.py", label="Scaled dot-product attention", icon=":material/calculate:")
    st.caption("softmax(QKᵀ/√d)·V on numbers you can edit.")
    st.page_link("pages/multihead.py", label="Multi-head comparison", icon=":material/view_module:")
    st.caption("Twelve heads, twelve different ways of reading the sentence.")
with col_c:
    st.page_link("pages/causal.py", label="Causal masking", icon=":material/block:")
    st.caption("Why a decoder must not see the future, and how −∞ stops it.")
    st.page_link("pages/encoder.py", label="Encoder stack", icon=":material/stacks:")
    st.caption("Six layers of attention and feed-forward, from embeddings to meaning.")

st.markdown(
    "Decoders write text one token at a time, and no decoder can be downloaded here, so this project trained "
    "three small ones itself: a letter sorter, the same sorter trained without its causal mask (a cheater), "
    "and an encoder–decoder that reverses words. Their weights ship with the app."
)
col_d, col_e, _ = st.columns(3)
with col_d:
    st.page_link("pages/decoder.py", label="Decoder & cross-attention", icon=":material/swap_horiz:")
    st.caption("How a decoder reads its source: the rectangular attention between two sequences.")
with col_e:
    st.page_link("pages/training.py", label="Train it yourself", icon=":material/model_training:")
    st.caption("Retrain a small model live and watch its loss fall and its attention take shape.")

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
