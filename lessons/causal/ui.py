"""The causal-masking lesson's sections on attention heads: the 4 × 4 worked example, a mask laid over a head of
the sidebar's model, and no mask vs padding vs causal on the same head. (The decoders trained here, and a GPT-2
chosen in the sidebar: `decoders_ui`.)

Each part is built by a cached function of the choices that define it (text, layer, head, window, padding), so
a rerun that changes nothing, or changes another part, only redraws.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pandas as pd
import streamlit as st

from anatomy.masks import causal_mask
from lessons.causal import decoders_ui, exercises, links, masking, text
from lessons.causal import figures as mask_figures
from lessons.common import examples, matrix_figures, windows
from lessons.common.labels import token_labels
from lessons.common.plots import as_array
from lessons.common.runs import EncoderRun
from lessons.common.ui import charts, linked, loaders, widgets

MAX_PADS = 8
DEFAULT_PADS = 3
WINDOW = windows.FOCUS_WINDOW
SMALL_WINDOW = 12  # tokens up to which a head's numbers are shown without asking (the table opens by itself)
CACHED_VIEWS = 16  # per section: enough to flip between a few layers and heads without recomputing


@dataclass(frozen=True)
class Section:
    """What one part of the page shows, built once per set of choices (never mutated after)."""

    figures: dict = field(default_factory=dict)
    tables: dict = field(default_factory=dict)
    numbers: dict = field(default_factory=dict)


def labelled_frame(matrix, rows, columns, tokens) -> pd.DataFrame:
    """A table whose rows and columns are named as everywhere in the app ("3: flies", `labels.token_labels`):
    tokens shown literally, never rendered."""
    rows, columns = list(rows), list(columns)
    return pd.DataFrame(
        as_array(matrix),
        index=token_labels([tokens[i] for i in rows], rows),
        columns=token_labels([tokens[i] for i in columns], columns),
    )


# --- A worked 4 × 4 example ---------------------------------------------------------------------------


@st.cache_resource(show_spinner=False)
def worked_example_section() -> Section:
    labels = examples.APPLE_IPHONES_TOKENS
    view = masking.mask_scores(examples.CAUSAL_EXAMPLE_SCORES, causal_mask(len(labels)))
    figures = {
        "steps": mask_figures.steps_figure(view.mask, view.scores, view.masked_scores, labels, weights=view.weights),
    }
    table = labelled_frame(view.weights, range(4), range(4), labels).assign(**{"row sum": as_array(view.row_sums)})
    return Section(figures, {"weights": table}, {"weights": as_array(view.weights)})


def show_worked_example() -> None:
    st.subheader("A worked 4 × 4 example")
    st.markdown(text.WORKED_EXAMPLE)
    section = worked_example_section()
    charts.show(section.figures["steps"], "cm_toy_steps", about="")
    table = section.tables["weights"]
    st.dataframe(table, key="cm_toy_table", column_config=widgets.rounded_numbers(table))
    st.markdown(text.worked_example_rows(section.numbers["weights"]))
    widgets.download_csv(section.tables["weights"], "causal_mask_worked_example.csv", key="cm_toy_csv")


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


def choose_layer_and_head(config) -> tuple[int, int]:
    return linked.layer_and_head(config.num_layers, config.num_heads, links.LAYER, links.HEAD)


def choose_window_start(num_tokens: int) -> int:
    """0 when every token fits on screen, else the first position of a slider-chosen window."""
    if num_tokens <= WINDOW:
        return 0
    return linked.slider(
        f"Focus window: first of the {WINDOW} tokens shown",
        links.WINDOW_START,
        0,
        num_tokens - WINDOW,
        0,
        help=f"The text has {num_tokens} tokens. A {num_tokens} × {num_tokens} grid is unreadable, so the "
        f"figures show {WINDOW} consecutive queries against the same {WINDOW} keys.",
    )


def choose_padding(room: int) -> tuple[int, bool]:
    left, right = st.columns(2)
    requested = linked.number_input(
        "[PAD] tokens added after the text",
        links.PADS,
        0,
        MAX_PADS,
        DEFAULT_PADS,
        container=left,
        requirement=f"a whole number from 0 to {MAX_PADS}",
    )
    also_causal = linked.toggle(
        "Padding and causal together",
        links.PAD_AND_CAUSAL,
        container=right,
        help="Both masks at once, as in a padded batch of a decoder.",
    )
    if requested > room:
        st.warning(
            "The text already fills every position the model has, so no [PAD] token fits after it. Shorten the "
            "text to see the padding mask at work."
            if room == 0
            else f"The model has position embeddings for only {room} more token(s), so {room} [PAD] token(s) are "
            "added instead of the number asked for.",
            icon=":material/straighten:",
        )
    return min(requested, room), also_causal


def window_note(window: range, num_tokens: int) -> None:
    if len(window) < num_tokens:
        st.caption(
            f"Showing positions {window.start}–{window.stop - 1} of {num_tokens}. Keys outside the window still "
            "take part in each row's softmax, so the row sums in the table are over all keys."
        )


# --- A causal mask on a real head ------------------------------------------------------------------


def head_of(run: EncoderRun, layer: int, head: int) -> masking.HeadInputs:
    return masking.head_inputs(run.trace.layers[layer].attention, head)


def recorded_head_output(run: EncoderRun, layer: int, head: int):
    """(T, d_head) what this head handed on in the forward pass itself: its weights times V."""
    return run.trace.layers[layer].attention.head_outputs[0, head]


@st.cache_resource(max_entries=CACHED_VIEWS, show_spinner=False)
def causal_section(reference: str, text: str, layer: int, head: int, window_start: int) -> Section:
    run = loaders.get_encoder_run(reference, text)
    tokens = run.tokenized.tokens
    window = windows.focus_window(len(tokens), window_start)
    view = masking.causal(head_of(run, layer, head))
    labels = [tokens[i] for i in window]
    where = f"layer {layer}, head {head}"

    def crop(matrix):
        return windows.crop(matrix, window, window)

    figures = {
        "steps": mask_figures.steps_figure(
            crop(view.mask),
            crop(view.scores),
            crop(view.masked_scores),
            labels,
            title=where.capitalize(),
            positions=window,
        ),
        "weights": matrix_figures.weights_figure(crop(view.weights), labels, f"4 · softmax rows, {where}", window),
    }
    table = labelled_frame(crop(view.weights), window, window, tokens).assign(
        **{"row sum": as_array(view.row_sums[window.start : window.stop])}
    )
    return Section(figures, {"weights": table}, {"window": window})


@st.cache_resource(max_entries=4, show_spinner="Drawing every token…")
def overview_figure(reference: str, text: str, layer: int, head: int):
    view = masking.causal(head_of(loaders.get_encoder_run(reference, text), layer, head))
    return mask_figures.overview_figure(view.weights, f"Causal weights, layer {layer}, head {head}, every token")


def show_causal_on_real_head(context, run, layer: int, head: int, window_start: int) -> None:
    section = causal_section(context.reference, context.text, layer, head, window_start)
    num_tokens = len(run.tokenized)
    window_note(section.numbers["window"], num_tokens)
    charts.show(section.figures["steps"], "cm_real_steps")
    charts.show(section.figures["weights"], "cm_real_weights")
    shown = len(section.numbers["window"])
    if numbers := widgets.expander_if_open("The numbers", "cm_real_numbers", expanded=shown <= SMALL_WINDOW):
        with numbers:
            st.caption("The softmax rows as numbers, with each row's sum over all of its keys.")
            table = section.tables["weights"]
            st.dataframe(table, key="cm_real_table", column_config=widgets.rounded_numbers(table))
            widgets.download_csv(
                section.tables["weights"], f"causal_weights_layer{layer}_head{head}.csv", key="cm_real_csv"
            )
    if num_tokens > WINDOW:
        if linked.toggle(f"Show the whole {num_tokens} × {num_tokens} matrix of this head", links.WHOLE_MATRIX):
            charts.show(overview_figure(context.reference, context.text, layer, head), key="cm_full_figure")


# --- No mask, padding mask, causal mask ------------------------------------------------------------


@st.cache_resource(max_entries=2, show_spinner="Running the model on the padded text…")
def padded_run(reference: str, text: str, num_pads: int) -> masking.PaddedText:
    """The text plus num_pads [PAD] tokens through the same model as the page's run (Q, K, V kept); with no
    [PAD] to add, the page's own run serves."""
    run = loaders.get_encoder_run(reference, text)
    if num_pads == 0:
        return masking.unpadded(run)
    pretrained = loaders.get_model(reference)
    return masking.run_padded(pretrained.model, pretrained.tokenizer, run.tokenized, num_pads)


def mask_facts(views: dict[str, masking.MaskedAttention]) -> pd.DataFrame:
    """One row per mask: how much it forbids, and proof that forbidden keys get nothing and rows sum to 1."""
    columns = [
        "forbidden (query, key) pairs",
        "largest weight on a forbidden key",
        "smallest row sum",
        "largest row sum",
    ]
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
    no_mask, causal = masking.unmasked(head_inputs), masking.causal(head_inputs)
    padded = masking.padded(padded_text.head(layer, head), padded_text.attention_mask, also_causal)

    window = windows.focus_window(len(tokens), window_start)
    labels = [tokens[i] for i in window]
    with_pads = list(window) + list(range(len(tokens), len(padded_text.tokens)))  # the window, then the [PAD]s

    def in_window(view):
        return windows.crop(view.weights, window, window)

    panels = [
        mask_figures.Panel("no mask", in_window(no_mask), labels, window),
        mask_figures.Panel(
            f"{padding}<br>(+{num_pads} [PAD])",
            windows.crop(padded.weights, with_pads, with_pads),
            [padded_text.tokens[i] for i in with_pads],
            with_pads,
        ),
        mask_figures.Panel("causal mask", in_window(causal), labels, window),
    ]
    real = slice(0, len(tokens))
    numbers = {
        "window": window,
        "padding_drift": masking.largest_difference(
            padded.weights[real, real], (causal if also_causal else no_mask).weights
        ),
        "recompute_drift": masking.largest_difference(
            no_mask.weights @ head_inputs.value, recorded_head_output(run, layer, head)
        ),
    }
    return Section(
        {"compare": mask_figures.compare_figure(panels, f"Layer {layer}, head {head}")},
        {"facts": mask_facts({"no mask": no_mask, padding: padded, "causal mask": causal})},
        numbers,
    )


def show_three_masks(context, run, layer: int, head: int, window_start: int) -> None:
    st.subheader("No mask, padding mask, causal mask")
    st.markdown(text.PADDING_TEXT)
    if context.pretrained.tokenizer.pad_token_id is None:
        st.warning("This tokenizer defines no [PAD] token, so there is no padding to show.")
        return
    room = masking.room_for_padding(len(run.tokenized), context.pretrained.config.max_positions)
    num_pads, also_causal = choose_padding(room)
    section = three_masks_section(context.reference, context.text, layer, head, window_start, num_pads, also_causal)
    window_note(section.numbers["window"], len(run.tokenized))
    charts.show(section.figures["compare"], "cm_compare")
    st.dataframe(section.tables["facts"], key="cm_facts")
    st.markdown(
        f"Every [PAD] column receives a weight of exactly 0 from every query. The real tokens' rows match the "
        f"{'causal panel' if also_causal else 'unpadded run'} up to float rounding (largest difference "
        f"{section.numbers['padding_drift']:.2g}): behind the mask, padding changes nothing for them. The "
        f"unmasked panel is the model's own attention, recomputed here from its queries and keys: these "
        f"weights times the values give what the head handed on in the forward pass, to within "
        f"{section.numbers['recompute_drift']:.2g}."
    )


def show_encoder_head(context, part: str) -> None:
    """One of the encoder's heads on the sidebar's text: under a causal mask, or with no mask vs padding vs
    causal. Both parts read the same layer, head and window choices."""
    run = loaders.get_encoder_run(context.reference, context.text)
    widgets.truncation_notice(run.tokenized)
    layer, head = choose_layer_and_head(context.pretrained.config)
    window_start = choose_window_start(len(run.tokenized))
    if part == links.REAL_HEAD:
        st.info(text.ENCODER_HONESTY, icon=":material/info:")
        show_causal_on_real_head(context, run, layer, head, window_start)
    else:
        show_three_masks(context, run, layer, head, window_start)


def show_language_model(context, part: str) -> None:
    """A GPT-2 from the sidebar: its tokens, any head's own causal attention, and its next-token guesses."""
    if part != links.REAL_HEAD:
        st.info(text.THREE_MASKS_NEED_AN_ENCODER, icon=":material/info:")
        return
    run = decoders_ui.language_model_run(context)
    decoders_ui.show_language_model_tokens(context, run)
    layer, head = choose_layer_and_head(context.pretrained.config)
    window_start = choose_window_start(len(run.tokenized))
    decoders_ui.show_language_model_head(context, run, layer, head, window_start)
    decoders_ui.show_next_tokens(context, run)


def show_sidebar_model(context, part: str) -> None:
    """The model and text chosen in the sidebar, under the mask (REAL_HEAD) or under three masks."""
    problem = real_input_problem(context)
    if problem:
        st.info(problem, icon=":material/keyboard:")
    elif decoders_ui.is_language_model(context.pretrained):
        show_language_model(context, part)
    else:
        show_encoder_head(context, part)


# --- What the exercises ask about --------------------------------------------------------------------


def exercise_head(context) -> exercises.MaskedHead:
    """The head the real-head tabs show (its layer and head read from the link, without drawing their pickers),
    masked causally on the sidebar's text; the worked example where the sidebar gives no encoder and text (a
    GPT-2's trace keeps its weights, not the scores the weight exercise lists)."""
    if real_input_problem(context) or decoders_ui.is_language_model(context.pretrained):
        return exercises.worked_example()
    run = loaders.get_encoder_run(context.reference, context.text)
    config = context.pretrained.config
    layer = linked.bind(links.LAYER, 0, parse=int, fits=lambda value: value in range(config.num_layers))
    head = linked.bind(links.HEAD, 0, parse=int, fits=lambda value: value in range(config.num_heads))
    linked.publish(links.LAYER, layer)  # the exercise asks about this head: the link names it
    linked.publish(links.HEAD, head)
    return exercises.MaskedHead(
        run.tokenized.tokens, masking.causal(head_of(run, layer, head)), f"layer {layer}, head {head}"
    )
