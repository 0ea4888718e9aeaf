"""The sidebar every page shares: which model, on which device, studying which text.

Its values live in session state (so they survive page switches) and in the URL (so a link restores them).
In hosted mode (see `lessons.common.hosting`) the model is picked from an allowlist, and text over the length cap
is refused before any page runs: the message says so and the text stays in its box.
"""

from __future__ import annotations

from dataclasses import dataclass

import streamlit as st

from anatomy.checkpoints.pretrained import DEFAULT_MODEL_NAME, ModelLoadError, PretrainedModel
from anatomy.devices import describe_device
from lessons.common import hosting
from lessons.common.hosting import HostingSettings
from lessons.common.safe_text import escape_markdown
from lessons.common.ui import linked, presentation
from lessons.common.ui.loaders import device_problem, shared_model_fingerprint, try_get_model

DEFAULT_TEXT = "time flies like an arrow"
_TEXT, _MODEL = "text", "model"  # link keys: the sidebar's widgets are drawn on every run, so they keep their values
FINGERPRINT = "fingerprint"  # link key: show the weights' digest (when the server allows it)


@dataclass(frozen=True)
class StudyContext:
    """What the sidebar decided for this run of the page."""

    reference: str  # the model reference actually in use ("" = embedded default)
    pretrained: PretrainedModel
    text: str  # exactly as typed
    model_problem: str | None = None  # why the model asked for could not be used (the embedded one stands in)

    @property
    def has_text(self) -> bool:
        return bool(self.text.strip())


def render() -> StudyContext:
    """Draw the shared sidebar and return the current model and text (or stop the page with a message)."""
    settings = _settings_or_stop()
    linked.bind(_MODEL, "", fits=lambda value: isinstance(value, str))
    linked.bind(
        _TEXT,
        DEFAULT_TEXT,
        parse=linked.decode_text,
        fits=lambda value: isinstance(value, str),
        requirement="it is not a text written by this app",
    )
    with st.sidebar:
        st.text_area("Text to study", key=_TEXT, height=110, help=_text_help(settings))
        if settings.hosted:
            _choose_allowed_model(settings)
        else:
            st.text_input(
                "Model",
                key=_MODEL,
                placeholder=DEFAULT_MODEL_NAME,
                help=f"Leave empty for the embedded all-MiniLM-L6-v2, type {hosting.LANGUAGE_MODEL} for the "
                "embedded language model, or give a local folder or a Hugging Face hub id of a BERT- or GPT-2-family "
                "model (from this machine's cache).",
            )
        reference, pretrained, model_problem = _load_or_stop(st.session_state[_MODEL].strip())
        _describe(pretrained)
        present = presentation.switch()
        refusal = settings.text_problem(st.session_state[_TEXT])
        if refusal:
            st.error(escape_markdown(refusal), icon=":material/content_cut:")
    presentation.apply(present)
    context = StudyContext(reference, pretrained, st.session_state[_TEXT], model_problem)
    if not linked.publish_text(_TEXT, context.text):
        st.sidebar.caption(
            f"This text ({len(context.text):,} characters) is too long to travel in a link: a link copied now "
            "opens with the text in the sidebar then. Everything else about this view is in the link.",
        )
    if reference:  # the model in use; none (the embedded one) when the field is empty or its model failed
        linked.publish(_MODEL, reference)
    st.session_state["_context"] = context
    if refusal:  # no page runs on refused text; the page says why, the sidebar keeps the text
        st.error(escape_markdown(refusal), icon=":material/content_cut:")
        linked.stop()
    return context


def current() -> StudyContext:
    """The context the sidebar computed for this run. Pages call this first: it also says at the top of the lesson
    when the model asked for could not be used (the sidebar, which says it too, may be closed or below the fold)."""
    context: StudyContext = st.session_state["_context"]
    if context.model_problem:
        st.error(
            f"{escape_markdown(context.model_problem)} This lesson runs on the embedded {DEFAULT_MODEL_NAME} instead.",
            icon=":material/error:",
        )
    return context


def _settings_or_stop() -> HostingSettings:
    try:
        return hosting.current()
    except hosting.HostingSettingsError as error:  # the operator's mistake: say so to everyone, plainly
        st.error(f"This server is misconfigured: {escape_markdown(str(error))}", icon=":material/settings:")
        st.stop()


def _text_help(settings: HostingSettings) -> str:
    reads = (
        "Up to 512 tokens are used (the lessons on decoders read up to 8,192 when the app runs on a CUDA GPU)."
        if settings.max_input_tokens is None
        else f"The model reads up to {settings.max_input_tokens} tokens (fewer if its own limit is lower)."
    )
    limit = "" if settings.max_input_characters is None else f" At most {settings.max_input_characters:,} characters."
    return f"Any text: it is split into tokens and run through the model. {reads}{limit}"


def _choose_allowed_model(settings: HostingSettings) -> None:
    """A choice among the allowlisted models only: nothing a visitor types or links reaches the loader."""
    options = list(settings.offered_models)
    wanted = hosting.normalise_reference(st.session_state[_MODEL])
    if wanted not in options:
        linked.unpublish(_MODEL)
        st.warning(
            "The link named a model this demo does not offer, so it uses the embedded model.",
            icon=":material/link_off:",
        )
        wanted = options[0]
    st.session_state[_MODEL] = wanted
    st.selectbox(
        "Model",
        options,
        key=_MODEL,
        format_func=hosting.model_label,
        disabled=len(options) == 1,
        help="This hosted demo offers the models its operator chose.",
    )


def _load_or_stop(reference: str) -> tuple[str, PretrainedModel, str | None]:
    """The model in use, its reference ("" when the embedded model stands in for a failed one) and why the one
    asked for failed (None when it did not)."""
    try:
        pretrained, problem = try_get_model(reference or DEFAULT_MODEL_NAME)
    except ModelLoadError as error:  # the embedded model itself is broken: no page can run
        st.error(
            f"The embedded model could not be loaded, so no lesson can run: {escape_markdown(str(error))}",
            icon=":material/error:",
        )
        st.stop()
    if problem:
        st.error(escape_markdown(problem), icon=":material/error:")
        st.caption("Showing the embedded model instead.")
        reference = ""
    fallback = device_problem()
    if fallback:
        st.warning(f"{escape_markdown(fallback)} Running on the CPU instead.", icon=":material/memory:")
    return reference, pretrained, problem


def _describe(pretrained: PretrainedModel) -> None:
    config = pretrained.config
    st.badge(describe_device(pretrained.device), icon=":material/memory:", color="green")
    st.caption(
        f"{escape_markdown(pretrained.name.split('/')[-1])} · {config.num_layers} layers · {config.num_heads} heads · "
        f"width {config.width}"
    )
    asked = linked.in_link(FINGERPRINT)
    if hosting.fingerprint_enabled() and asked:
        linked.publish(FINGERPRINT, asked)
        # ?fingerprint=1: the embedded model; ?fingerprint=sorter (or another model trained here, or SmolLM2): that one
        try:
            st.caption(f"weights sha256 {shared_model_fingerprint(asked)}")
        except ModelLoadError as error:  # SmolLM2 asked of a server that does not serve it
            st.caption(f"no weights to hash: {escape_markdown(str(error))}")
