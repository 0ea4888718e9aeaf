"""The sidebar every page shares: which model, on which device, studying which text.

Its values live in session state (so they survive page switches) and in the URL (so a link restores them).
"""

from __future__ import annotations

from dataclasses import dataclass

import streamlit as st

from anatomy.devices import describe_device
from anatomy.pretrained import DEFAULT_MODEL_NAME, PretrainedModel
from anatomy.ui import state
from anatomy.ui.frame import ensure_entrypoint
from anatomy.ui.loaders import try_get_model
from anatomy.ui.widgets import escape_markdown

DEFAULT_TEXT = "time flies like an arrow"
# Widget values are dropped by Streamlit when a page does not draw the widget; these shadow keys keep them.
_TEXT, _MODEL = "text", "model"


@dataclass(frozen=True)
class StudyContext:
    """What the sidebar decided for this run of the page."""

    reference: str           # the model reference actually in use ("" = embedded default)
    pretrained: PretrainedModel
    text: str                # exactly as typed

    @property
    def has_text(self) -> bool:
        return bool(self.text.strip())


def render() -> StudyContext:
    """Draw the shared sidebar and return the current model and text."""
    state.restore(_MODEL, "")
    state.restore(_TEXT, DEFAULT_TEXT)
    with st.sidebar:
        st.text_area(
            "Text to study", key=_TEXT, height=110,
            help="Any text: it is split into tokens and run through the model. Up to 512 tokens are used.",
        )
        st.text_input(
            "Model", key=_MODEL, placeholder=DEFAULT_MODEL_NAME,
            help="Leave empty for the embedded all-MiniLM-L6-v2, or give a local folder or a Hugging Face "
            "hub id of a BERT-family model (from this machine's cache).",
        )
        reference = st.session_state[_MODEL].strip()
        pretrained, problem = try_get_model(reference or DEFAULT_MODEL_NAME)
        if problem:
            st.error(escape_markdown(problem), icon=":material/error:")
            st.caption("Showing the embedded model instead.")
            reference = ""
        config = pretrained.config
        st.badge(describe_device(pretrained.device), icon=":material/memory:", color="green")
        st.caption(
            f"{escape_markdown(pretrained.name.split('/')[-1])} · {config.num_layers} layers · {config.num_heads} heads · "
            f"width {config.width}"
        )
    context = StudyContext(reference, pretrained, st.session_state[_TEXT])
    state.publish(text=context.text, **({"model": reference} if reference else {}))
    st.session_state["_context"] = context
    return context


def current() -> StudyContext:
    """The context the sidebar computed for this run (pages call this first)."""
    ensure_entrypoint()
    return st.session_state["_context"]
