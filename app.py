"""Transformer Anatomy: the entrypoint. It sets up the page, the navigation and the shared sidebar;
each lesson lives in its own file under pages/."""

from pathlib import Path

import streamlit as st

from anatomy.ui import memory, sidebar
from anatomy.ui.frame import ensure_entrypoint

memory.configure_allocator()  # before the model loads: freed tensors go back to the system (see memory.py)

# A local file: a material-symbol page icon would make the browser fetch it from a font CDN.
ICON = Path(__file__).parent / "assets" / "icon.png"

ensure_entrypoint()
st.set_page_config(page_title="Transformer Anatomy", page_icon=str(ICON), layout="wide")

PAGES = {
    "Start": [st.Page("pages/home.py", title="Welcome", icon=":material/school:", default=True)],
    "Inputs": [
        st.Page("pages/tokenization.py", title="Tokenization", icon=":material/text_fields:"),
        st.Page("pages/positional.py", title="Positional encodings", icon=":material/waves:"),
    ],
    "Attention": [
        st.Page("pages/attention.py", title="Scaled dot-product attention", icon=":material/calculate:"),
        st.Page("pages/multihead.py", title="Multi-head comparison", icon=":material/view_module:"),
        st.Page("pages/causal.py", title="Causal masking", icon=":material/block:"),
    ],
    "The model": [
        st.Page("pages/encoder.py", title="Encoder stack", icon=":material/stacks:"),
        st.Page("pages/decoder.py", title="Decoder & cross-attention", icon=":material/swap_horiz:"),
        st.Page("pages/training.py", title="Train it yourself", icon=":material/model_training:"),
    ],
}

navigation = st.navigation(PAGES)
sidebar.render()
navigation.run()
