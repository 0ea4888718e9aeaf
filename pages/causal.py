"""Causal masking: why a decoder must not see the future, and what a mask does to the attention scores.

The page masks a head of the sidebar's encoder (or shows a sidebar GPT-2's own causal heads), then follows a
decoder trained here as it sorts a word one token at a time, beside its twin trained without the mask.

Each part of the page is built by a cached function of the choices that define it (text, layer, head,
window, padding), so a rerun that changes nothing, or changes another part, only redraws.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pandas as pd
import streamlit as st

from anatomy import decoding, mask_demo, toy
from anatomy.attention import scaled_dot_product_attention
from anatomy.masks import causal_mask, combine_masks, padding_mask
from anatomy.ui import decoder_sections, loaders, sidebar, state, widgets
from anatomy.viz import masking
from anatomy.viz.common import as_array

MAX_PADS = 8
DEFAULT_PADS = 3
WINDOW = mask_demo.FOCUS_WINDOW
SMALL_WINDOW = 12  # tokens up to which a head's numbers are shown without asking (the table opens by itself)
CACHED_VIEWS = 16  # per section: enough to flip between a few layers and heads without recomputing

WHY_MASK = r"""
A decoder such as GPT writes text one token at a time, each new token chosen from the ones already
written. It learns this from whole sentences: at every position it is asked to predict the token that
comes *next*. If the token at position *t* could attend to position *t* + 1, that answer would be sitting
in its own input. The model would learn to copy it instead of learning language, and at generation time,
when the future does not exist yet, it would have nothing to copy.

The **causal mask** closes that door. Each query may attend to its own position and to the ones before
it, never to the ones after. The mask works inside the softmax: just before each row of scores is
normalised, the forbidden entries are replaced by −∞. Since $e^{-\infty} = 0$, those keys get a weight of
exactly zero, and the allowed weights still add up to 1. Because the whole matrix is masked at once, one forward
pass trains all *T* next-token predictions in parallel, each one seeing exactly what it would see when
generating.
"""

MASK_FORMULA = (
    r"\operatorname{weights} = \operatorname{softmax}\!\left(\frac{QK^{\top}}{\sqrt{d_k}} + M\right),"
    r"\qquad M_{ts} = \begin{cases} 0 & s \le t \ \text{(the past and the token itself)}\\"
    r" -\infty & s > t \ \text{(the future)} \end{cases}"
)

ENCODER_HONESTY = (
    "The model here (by default all-MiniLM-L6-v2, a BERT-style **encoder**) was trained **without** a causal "
    "mask: its heads learned to read the whole sentence in both directions. This part applies the mask to "
    "the scores one of its heads computes, to show what the mask does to them. It is not how a trained "
    "decoder attends: a decoder's heads learned their scores knowing that the future was hidden (the letter "
    "sorter further down is one)."
)

PADDING_TEXT = (
    "Sentences in a batch must have the same length, so the shorter ones are filled with [PAD] tokens. "
    "A **padding mask** hides those keys from every query: the same −∞ trick, applied to whole columns "
    "instead of a triangle. An encoder like BERT uses only this one; a decoder uses the causal mask, plus "
    "padding when it batches. Below: the same head on the same text under each mask, on one colour scale."
)


@dataclass(frozen=True)
class Section:
    """What one part of the page shows, built once per set of choices (never mutated after)."""

    figures: dict = field(default_factory=dict)
    tables: dict = field(default_factory=dict)
    numbers: dict = field(default_factory=dict)


def labelled_frame(matrix, rows, columns, tokens) -> pd.DataFrame:
    """A table whose rows and columns are named "position: token" (tokens shown literally, never rendered)."""
    return pd.DataFrame(
        as_array(matrix), index=[f"{i}: {tokens[i]}" for i in rows], columns=[f"{i}: {tokens[i]}" for i in columns]
    )


# --- The chapter's 4 × 4 example -------------------------------------------------------------------

@st.cache_resource(show_spinner=False)
def chapter_section() -> Section:
    labels = toy.APPLE_IPHONES_TOKENS
    view = mask_demo.mask_scores(toy.CAUSAL_EXAMPLE_SCORES, causal_mask(len(labels)))
    figures = {
        "steps": masking.steps_figure(view.mask, view.scores, view.masked_scores, labels, weights=view.weights),
    }
    table = labelled_frame(view.weights, range(4), range(4), labels).assign(**{"row sum": as_array(view.row_sums)})
    return Section(figures, {"weights": table}, {"weights": as_array(view.weights)})


def show_chapter_example() -> None:
    st.subheader("The chapter's 4 × 4 example, computed")
    st.markdown(
        "The notes mask a made-up 4 × 4 score matrix. They give no words for its rows; here they are labelled "
        "with the chapter's running sentence *I love Apple iPhones* to make the figures easier to read."
    )
    section = chapter_section()
    st.plotly_chart(section.figures["steps"], key="cm_toy_steps")
    st.dataframe(section.tables["weights"], key="cm_toy_table")
    weights = section.numbers["weights"]
    st.markdown(
        f"Every row sums to 1 and every cell above the diagonal is exactly 0. The first row is [1, 0, 0, 0]: "
        f"the first token has nothing but itself to look at, whatever its score. The notes print this softmax "
        f"as rough figures: their second row reads 0.2, 0.8, but softmax(0.1, 0.3) is "
        f"{weights[1, 0]:.3f}, {weights[1, 1]:.3f}; their last row repeats the scores 0.4, 0.1, 0.2, 0.3 "
        f"unchanged, while the softmax flattens them to {', '.join(f'{value:.3f}' for value in weights[3])}."
    )
    widgets.download_csv(section.tables["weights"], "causal_mask_chapter_example.csv", key="cm_toy_csv")


# --- Choices ----------------------------------------------------------------------------------------

def real_input_problem(context) -> str | None:
    """Why the sidebar's text and model cannot be shown on a real head here, or None when they can."""
    if not context.has_text:
        return "Type a sentence in the sidebar's **Text to study** box to mask a real attention head."
    if context.pretrained.tokenizer is None or context.pretrained.family not in ("encoder", "decoder"):
        return (
            "This part reads the attention of a BERT-style encoder or a GPT-2 decoder that comes with its "
            "tokenizer; the chosen model is neither. Clear the **Model** box in the sidebar to use the embedded "
            "all-MiniLM-L6-v2. (The letter sorter trained here has its own section below.)"
        )
    return None


def keep_choice_valid(key: str, options: range) -> None:
    """The model or the text changed since the choice was made: back to the first option if it vanished."""
    if st.session_state.get(key) not in options:
        st.session_state[key] = options[0]


def choose_layer_and_head(config) -> tuple[int, int]:
    layers, heads = range(config.num_layers), range(config.num_heads)
    state.restore("cm_layer", 0, parse=int, valid=lambda value: value in layers)
    state.restore("cm_head", 0, parse=int, valid=lambda value: value in heads)
    keep_choice_valid("cm_layer", layers)
    keep_choice_valid("cm_head", heads)
    left, right = st.columns(2)
    left.selectbox("Layer", layers, key="cm_layer", format_func=lambda index: f"layer {index}")
    right.selectbox("Head", heads, key="cm_head", format_func=lambda index: f"head {index}")
    state.publish(cm_layer=st.session_state["cm_layer"], cm_head=st.session_state["cm_head"])
    return st.session_state["cm_layer"], st.session_state["cm_head"]


def choose_window_start(num_tokens: int) -> int:
    """0 when every token fits on screen, else the first position of a slider-chosen window."""
    if num_tokens <= WINDOW:
        return 0
    starts = range(num_tokens - WINDOW + 1)
    state.restore("cm_window_start", 0, parse=int, valid=lambda value: value in starts)
    keep_choice_valid("cm_window_start", starts)
    st.slider(
        f"Focus window: first of the {WINDOW} tokens shown", 0, starts[-1], key="cm_window_start",
        help=f"The text has {num_tokens} tokens. A {num_tokens} × {num_tokens} grid is unreadable, so the "
        f"figures show {WINDOW} consecutive queries against the same {WINDOW} keys.",
    )
    state.publish(cm_window_start=st.session_state["cm_window_start"])
    return st.session_state["cm_window_start"]


def choose_padding(room: int) -> tuple[int, bool]:
    state.restore("cm_pad", DEFAULT_PADS, parse=int, valid=lambda value: 0 <= value <= MAX_PADS)
    state.restore("cm_pad_causal", False, parse=state.parse_bool)
    left, right = st.columns(2)
    left.number_input("[PAD] tokens added after the text", min_value=0, max_value=MAX_PADS, step=1, key="cm_pad")
    right.toggle("Padding and causal mask together (a padded decoder batch)", key="cm_pad_causal")
    state.publish(cm_pad=st.session_state["cm_pad"], cm_pad_causal=st.session_state["cm_pad_causal"])
    requested = st.session_state["cm_pad"]
    if requested > room:
        st.warning(
            "The text already fills every position the model has, so no [PAD] token fits after it. Shorten the "
            "text to see the padding mask at work." if room == 0 else
            f"The model has position embeddings for only {room} more token(s), so {room} [PAD] token(s) are "
            "added instead of the number asked for.",
            icon=":material/straighten:",
        )
    return min(requested, room), st.session_state["cm_pad_causal"]


def window_note(window: range, num_tokens: int) -> None:
    if len(window) < num_tokens:
        st.caption(
            f"Showing positions {window.start}–{window.stop - 1} of {num_tokens}. Keys outside the window still "
            "take part in each row's softmax, so the row sums in the table are over all keys."
        )


# --- A causal mask on a real head ------------------------------------------------------------------

def head_of(run, layer: int, head: int) -> mask_demo.HeadInputs:
    return mask_demo.head_inputs(run.output.trace.layers[layer].attention, head)


def recorded_head_output(run, layer: int, head: int):
    """(T, d_head) what this head handed on in the forward pass itself: its weights times V."""
    return run.output.trace.layers[layer].attention.head_outputs[0, head]


@st.cache_resource(max_entries=CACHED_VIEWS, show_spinner=False)
def causal_section(reference: str, text: str, layer: int, head: int, window_start: int) -> Section:
    run = loaders.get_encoder_run(reference, text)
    tokens = run.tokenized.tokens
    window = mask_demo.focus_window(len(tokens), window_start)
    view = mask_demo.causal(head_of(run, layer, head))
    labels = [tokens[i] for i in window]
    where = f"layer {layer}, head {head}"

    def crop(matrix):
        return mask_demo.crop(matrix, window, window)

    figures = {
        "steps": masking.steps_figure(
            crop(view.mask), crop(view.scores), crop(view.masked_scores), labels, title=where.capitalize(),
            positions=window,
        ),
        "weights": masking.weights_figure(crop(view.weights), labels, f"4 · softmax rows, {where}", window),
    }
    table = labelled_frame(crop(view.weights), window, window, tokens).assign(
        **{"row sum": as_array(view.row_sums[window.start:window.stop])}
    )
    return Section(figures, {"weights": table}, {"window": window})


@st.cache_resource(max_entries=4, show_spinner="Drawing every token…")
def overview_figure(reference: str, text: str, layer: int, head: int):
    view = mask_demo.causal(head_of(loaders.get_encoder_run(reference, text), layer, head))
    return masking.overview_figure(view.weights, f"Causal weights, layer {layer}, head {head}, every token")


def show_causal_on_real_head(context, run, layer: int, head: int, window_start: int) -> None:
    section = causal_section(context.reference, context.text, layer, head, window_start)
    num_tokens = len(run.tokenized)
    window_note(section.numbers["window"], num_tokens)
    st.plotly_chart(section.figures["steps"], key="cm_real_steps")
    st.plotly_chart(section.figures["weights"], key="cm_real_weights")
    shown = len(section.numbers["window"])
    if numbers := widgets.expander_if_open("The numbers", "cm_real_numbers", expanded=shown <= SMALL_WINDOW):
        with numbers:
            st.caption("The softmax rows as numbers, with each row's sum over all of its keys.")
            st.dataframe(section.tables["weights"], key="cm_real_table")
            widgets.download_csv(
                section.tables["weights"], f"causal_weights_layer{layer}_head{head}.csv", key="cm_real_csv"
            )
    if num_tokens > WINDOW:
        state.restore("cm_full", False, parse=state.parse_bool)
        st.toggle(f"Show the whole {num_tokens} × {num_tokens} matrix of this head", key="cm_full")
        state.publish(cm_full=st.session_state["cm_full"])
        if st.session_state["cm_full"]:
            st.plotly_chart(overview_figure(context.reference, context.text, layer, head), key="cm_full_figure")


# --- No mask, padding mask, causal mask ------------------------------------------------------------

@st.cache_resource(max_entries=2, show_spinner="Running the model on the padded text…")
def padded_run(reference: str, text: str, num_pads: int) -> mask_demo.PaddedText:
    """The text plus num_pads [PAD] tokens through the same model as the page's run (Q, K, V kept); with no
    [PAD] to add, the page's own run serves."""
    run = loaders.get_encoder_run(reference, text)
    if num_pads == 0:
        return mask_demo.unpadded(run)
    pretrained = loaders.get_model(reference)
    return mask_demo.run_padded(pretrained.model, pretrained.tokenizer, run.tokenized, num_pads)


def mask_facts(views: dict[str, mask_demo.MaskedAttention]) -> pd.DataFrame:
    """One row per mask: how much it forbids, and proof that forbidden keys get nothing and rows sum to 1."""
    columns = ["forbidden (query, key) pairs", "largest weight on a forbidden key", "smallest row sum",
               "largest row sum"]
    rows = [(view.num_forbidden, view.largest_forbidden_weight, *view.row_sum_range) for view in views.values()]
    return pd.DataFrame(rows, index=list(views), columns=columns)


@st.cache_resource(max_entries=CACHED_VIEWS, show_spinner=False)
def three_masks_section(
    reference: str, text: str, layer: int, head: int, window_start: int, num_pads: int, also_causal: bool
) -> Section:
    run = loaders.get_encoder_run(reference, text)
    tokens = run.tokenized.tokens
    padded_text = padded_run(reference, text, num_pads)
    head_inputs = head_of(run, layer, head)
    padding = "padding + causal" if also_causal else "padding mask"
    no_mask, causal = mask_demo.unmasked(head_inputs), mask_demo.causal(head_inputs)
    padded = mask_demo.padded(padded_text.head(layer, head), padded_text.attention_mask, also_causal)

    window = mask_demo.focus_window(len(tokens), window_start)
    labels = [tokens[i] for i in window]
    with_pads = list(window) + list(range(len(tokens), len(padded_text.tokens)))  # the window, then the [PAD]s

    def in_window(view):
        return mask_demo.crop(view.weights, window, window)

    panels = [
        masking.Panel("no mask (as the model ran)", in_window(no_mask), labels, window),
        masking.Panel(
            f"{padding} (+{num_pads} [PAD])", mask_demo.crop(padded.weights, with_pads, with_pads),
            [padded_text.tokens[i] for i in with_pads], with_pads,
        ),
        masking.Panel("causal mask", in_window(causal), labels, window),
    ]
    real = slice(0, len(tokens))
    numbers = {
        "window": window,
        "padding_drift": mask_demo.largest_difference(
            padded.weights[real, real], (causal if also_causal else no_mask).weights
        ),
        "recompute_drift": mask_demo.largest_difference(
            no_mask.weights @ head_inputs.value, recorded_head_output(run, layer, head)
        ),
    }
    return Section(
        {"compare": masking.compare_figure(panels, f"Layer {layer}, head {head}")},
        {"facts": mask_facts({"no mask": no_mask, padding: padded, "causal mask": causal})},
        numbers,
    )


def show_three_masks(context, run, layer: int, head: int, window_start: int) -> None:
    st.subheader("No mask, padding mask, causal mask")
    st.markdown(PADDING_TEXT)
    if context.pretrained.tokenizer.pad_token_id is None:
        st.warning("This tokenizer defines no [PAD] token, so there is no padding to show.")
        return
    room = mask_demo.room_for_padding(len(run.tokenized), context.pretrained.config.max_positions)
    num_pads, also_causal = choose_padding(room)
    section = three_masks_section(
        context.reference, context.text, layer, head, window_start, num_pads, also_causal
    )
    window_note(section.numbers["window"], len(run.tokenized))
    st.plotly_chart(section.figures["compare"], key="cm_compare")
    st.dataframe(section.tables["facts"], key="cm_facts")
    st.markdown(
        f"Every [PAD] column receives a weight of exactly 0 from every query. The real tokens' rows match the "
        f"{'causal panel' if also_causal else 'unpadded run'} up to float rounding (largest difference "
        f"{section.numbers['padding_drift']:.2g}): behind the mask, padding changes nothing for them. The "
        f"unmasked panel is the model's own attention, recomputed here from its queries and keys: these "
        f"weights times the values give what the head handed on in the forward pass, to within "
        f"{section.numbers['recompute_drift']:.2g}."
    )


# --- The page ---------------------------------------------------------------------------------------

THREE_MASKS_NEED_AN_ENCODER = (
    "This comparison lifts the mask from a head, then pads the text: it needs an encoder, whose heads were "
    "trained to read the whole sentence. The model in the sidebar is a decoder trained under the causal mask, "
    "so without it its heads would compute weights they never learned to use. Clear the **Model** box in the "
    "sidebar to see the comparison on the embedded all-MiniLM-L6-v2."
)


def show_encoder_head(context, part: str) -> None:
    """One of the encoder's heads on the sidebar's text: under a causal mask, or with no mask vs padding vs
    causal. Both parts read the same layer, head and window choices."""
    run = loaders.get_encoder_run(context.reference, context.text)
    widgets.truncation_notice(run.tokenized)
    layer, head = choose_layer_and_head(context.pretrained.config)
    window_start = choose_window_start(len(run.tokenized))
    if part == REAL_HEAD:
        st.info(ENCODER_HONESTY, icon=":material/info:")
        show_causal_on_real_head(context, run, layer, head, window_start)
    else:
        show_three_masks(context, run, layer, head, window_start)


def show_language_model(context, part: str) -> None:
    """A GPT-2 from the sidebar: its tokens, any head's own causal attention, and its next-token guesses."""
    if part != REAL_HEAD:
        st.info(THREE_MASKS_NEED_AN_ENCODER, icon=":material/info:")
        return
    run = decoder_sections.language_model_run(context)
    decoder_sections.show_language_model_tokens(context, run)
    layer, head = choose_layer_and_head(context.pretrained.config)
    window_start = choose_window_start(len(run.tokenized))
    decoder_sections.show_language_model_head(context, run, layer, head, window_start)
    decoder_sections.show_next_tokens(context, run)


def show_sidebar_model(context, part: str) -> None:
    """The model and text chosen in the sidebar, under the mask (REAL_HEAD) or under three masks."""
    problem = real_input_problem(context)
    if problem:
        st.info(problem, icon=":material/keyboard:")
    elif decoder_sections.is_language_model(context.pretrained):
        show_language_model(context, part)
    else:
        show_encoder_head(context, part)


CHAPTER, REAL_HEAD, THREE_MASKS, TRAINED = (
    "The chapter's example", "One head on your text", "No mask, padding, causal", "A trained decoder",
)
SECTIONS = {
    CHAPTER: lambda context: show_chapter_example(),
    REAL_HEAD: lambda context: show_sidebar_model(context, REAL_HEAD),
    THREE_MASKS: lambda context: show_sidebar_model(context, THREE_MASKS),
    TRAINED: lambda context: decoder_sections.show_trained_decoder(),
}


def page() -> None:
    context = sidebar.current()
    st.title("Causal masking")
    st.markdown(WHY_MASK)
    st.latex(MASK_FORMULA)
    widgets.show_open_tab(SECTIONS, "cm_tab", context)
    widgets.show_source(
        mask_demo.attend, causal_mask, padding_mask, combine_masks, scaled_dot_product_attention,
        toy.masked_softmax, mask_demo.run_padded, decoding.generate_greedily, decoding.teacher_force,
    )


page()
