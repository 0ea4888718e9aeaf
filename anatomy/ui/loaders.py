"""The model is loaded once per server process and shared by every browser session; results of a
forward pass are cached per (model, text). Nothing returned from here may be mutated by a page."""

from __future__ import annotations

import streamlit as st

from anatomy.analysis import EncoderRun, run_encoder
from anatomy.pretrained import DEFAULT_MODEL_NAME, ModelLoadError, PretrainedModel, load_pretrained

MAX_CACHED_RUNS = 8  # traced runs kept in memory (a 512-token MiniLM trace is about 160 MB)


def get_model(reference: str = "") -> PretrainedModel:
    """The model for a reference ("" or the default name: the embedded one). Raises ModelLoadError."""
    return _load_model(reference.strip() or DEFAULT_MODEL_NAME)


@st.cache_resource(show_spinner="Loading the model (once per server)…")
def _load_model(reference: str) -> PretrainedModel:
    # One cache entry per distinct model: callers normalise the reference first. Errors are not cached.
    return load_pretrained(reference)


@st.cache_resource(max_entries=MAX_CACHED_RUNS, show_spinner="Running the model…")
def get_encoder_run(reference: str, text: str, pair: str | None = None) -> EncoderRun:
    """A traced forward pass of the model named `reference` over `text` (and an optional second sentence)."""
    pretrained = get_model(reference)
    return run_encoder(pretrained.model, pretrained.tokenizer, text, pair)


def try_get_model(reference: str) -> tuple[PretrainedModel, str | None]:
    """The requested model, or the embedded default plus the reason the requested one failed."""
    try:
        return get_model(reference), None
    except ModelLoadError as error:
        return get_model(DEFAULT_MODEL_NAME), str(error)
