"""Scaled dot-product attention, one step at a time, on numbers the learner can edit or on their own text.

Four sources feed the same five steps (Q, K, V → QKᵀ → ÷√d_k → softmax → ·V): the notes' 3-token toy
with every entry editable, the notes' 2-feature "Apple" example, a text's embeddings used directly as
Q = K = V, and one head of the real model. Every number comes from `anatomy`; this page only chooses.
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd
import streamlit as st

from anatomy import toy
from anatomy.attention import scaled_dot_product_attention
from anatomy.head_steps import (
    FOCUS_WINDOW, embedding_self_attention, focus_window, output_contributions, score_anatomy, traced_head_steps,
)
from anatomy.matrix_input import matrix_cells, parse_matrix
from anatomy.toy import SingleHeadSteps, single_head_steps
from anatomy.ui import loaders, sidebar, state, widgets
from anatomy.viz.attention_steps import full_pattern, neuron_view, projection_panels, score_matrix, step_matrix

SOURCES = {
    "toy": "“I love mathematics” (editable)",
    "apple": "“I love Apple iPhones”",
    "embeddings": "Your text, Q = K = V",
    "model": "Your text, a model head",
}
STEPS = {1: "Q, K, V", 2: "QKᵀ", 3: "÷ √d_k", 4: "softmax", 5: "· V"}
SCORE_TABLES = {"raw": "QKᵀ (query ↓ key →)", "scaled": "QKᵀ/√d_k (query ↓ key →)",
                "weights": "softmax weights (query ↓ key →)"}
STEP_FORMULAS = {
    2: r"S = Q K^\top, \qquad S_{ij} = q_i \cdot k_j = \sum_f q_{i,f}\,k_{j,f}",
    3: r"\tilde S = \frac{S}{\sqrt{d_k}}",
    4: r"A_{ij} = \frac{e^{\tilde S_{ij}}}{\sum_{j'} e^{\tilde S_{ij'}}}",
    5: r"\text{output}_i = \sum_j A_{ij}\, v_j \qquad (\text{output} = A V)",
}
STEP_EXPLANATIONS = {
    1: "Every token gets three vectors, one row each of Q, K and V: what it looks for, what it offers to be "
    "found by, and what it passes on when found. Rows are tokens; the $d_k$ columns are features.",
    2: "Every query is compared with every key by a dot product: large when the two vectors point the same "
    "way. Row *i* of this matrix says how well token *i*'s question matches each token's label. Hover a cell "
    "to see the whole computation it goes through.",
    3: "A dot product of two $d$-wide vectors with unit-variance entries has variance $d$. Dividing by "
    "$\\sqrt{d_k}$ brings the scores back to unit scale, so that for wide heads the softmax does not collapse onto a "
    "single key and its gradients do not vanish.",
    4: "The softmax turns each row into weights: positive, and summing to 1. Exponentials magnify "
    "differences, so a score a few units above the rest takes almost all the weight.",
    5: "Each token's output is the weighted average of the value vectors, with the weights of its row. "
    "This is where information moves between tokens.",
}
TOY_MATRICES = {  # name shown → (seed values, what its rows are)
    "X": (toy.LOVE_MATHEMATICS_X, toy.LOVE_MATHEMATICS_TOKENS),
    "W_Q": (toy.LOVE_MATHEMATICS_W_Q, None),
    "W_K": (toy.LOVE_MATHEMATICS_W_K, None),
    "W_V": (toy.LOVE_MATHEMATICS_W_V, None),
}
SOURCE_CODE = {  # the anatomy functions each source runs, shown under the page
    "toy": [parse_matrix, single_head_steps],
    "apple": [toy.apple_iphones, single_head_steps],
    "embeddings": [embedding_self_attention],
    "model": [traced_head_steps],
}
# Quoted from seed 004, the value this page corrects: the notes' "updated Apple embedding".
NOTES_PRINTED_APPLE_OUTPUT = (8.5, 14.5)
WIDEST_TABLE = 64  # columns; wider tables are offered as CSV only
_GENERATION, _CELLS = "att_toy_generation", "att_toy_cells"  # editor reset counter; edits kept across sources


@dataclass(frozen=True)
class Lesson:
    """The steps of one head, ready to show: the numbers and how to name their rows and columns."""

    steps: SingleHeadSteps
    labels: tuple[str, ...]          # one unique name per token
    features: tuple[str, ...]        # names of the columns of Q, K and V
    projection: str                  # LaTeX: how Q, K and V were made
    shared_qkv: bool                 # Q = K = V (no projections): show the matrix once
    file_stem: str                   # for CSV file names

    @property
    def head_width(self) -> int:
        return self.steps.query.size(-1)


def main() -> None:
    context = sidebar.current()
    st.title("Scaled dot-product attention, step by step")
    st.markdown(
        "Attention lets every token rebuild its vector from the other tokens. Each token asks a question "
        "(its **query**), offers a label (its **key**) and carries content (its **value**). A query is "
        "compared with every key, the comparisons become weights, and the weights average the values:"
    )
    st.latex(r"\mathrm{Attention}(Q, K, V) = \mathrm{softmax}\!\left(\frac{Q K^\top}{\sqrt{d_k}}\right) V")
    state.restore("att_source", "toy", valid=lambda value: value in SOURCES)
    source = st.segmented_control(
        "What to attend over", list(SOURCES), format_func=SOURCES.get, key="att_source", required=True
    )
    state.publish(att_source=source)
    if source == "toy":
        lesson = toy_lesson()
    elif source == "apple":
        lesson = apple_lesson()
    else:
        lesson = text_lesson(context, source)
    if lesson is None:
        return
    step, show_all, window, query_index, key_index = choose_focus(lesson)
    for number in STEPS if show_all else [step]:
        show_step(number, lesson, window, (query_index, key_index), framed=show_all and number == step)
    show_neuron_view(lesson, query_index, key_index)
    if source == "apple":
        show_apple_correction(lesson.steps)
    if len(lesson.labels) > FOCUS_WINDOW:
        show_full_pattern(lesson)
    widgets.show_source(scaled_dot_product_attention, *SOURCE_CODE[source], score_anatomy)


# ----- the four sources ---------------------------------------------------------------------------------


def toy_lesson() -> Lesson | None:
    """Seed 002's example, every entry of X, W_Q, W_K and W_V editable."""
    st.markdown(
        "Three tokens with 4-wide embeddings **X** and three 4×4 projections, as in the chapter notes. "
        "Change any entry: every step below is recomputed. Each row of X is a token; "
        "Q = X·W_Q, K = X·W_K and V = X·W_V."
    )
    st.button("Reset to the notes' values", icon=":material/restart_alt:", key="att_reset", on_click=_reset_toy)
    generation = st.session_state.setdefault(_GENERATION, 0)
    kept = st.session_state.setdefault(_CELLS, {})
    parsed = []
    grid = [*st.columns(2), *st.columns(2)]  # two rows of two: each editor wide enough for its 4 columns
    for column, (name, (seed, row_labels)) in zip(grid, TOY_MATRICES.items()):
        with column:
            st.latex(name)
            cells = kept.get(name) or matrix_cells(seed)
            rows = list(row_labels or [f"row {index + 1}" for index in range(seed.size(0))])
            frame = pd.DataFrame(cells, index=rows, columns=[str(index + 1) for index in range(seed.size(1))])
            edited = st.data_editor(
                frame, key=f"att_edit_{generation}_{name}", num_rows="fixed",
                column_config={label: st.column_config.TextColumn(width="small") for label in frame.columns},
            )
            kept[name] = edited.to_numpy(dtype=object).tolist()
            parsed.append(parse_matrix(name, kept[name], tuple(seed.shape)))
    problems = [problem for matrix in parsed for problem in matrix.problems]
    if problems:
        listed = "\n".join(f"- {widgets.escape_markdown(problem.message)}" for problem in problems)
        st.error(f"Some entries are not usable numbers yet, so nothing below is recomputed.\n\n{listed}",
                 icon=":material/edit_off:")
        return None
    steps = single_head_steps(toy.LOVE_MATHEMATICS_TOKENS, *(matrix.values for matrix in parsed))
    features = tuple(str(index + 1) for index in range(steps.query.size(-1)))
    return Lesson(steps, steps.tokens, features, r"Q = X W_Q,\quad K = X W_K,\quad V = X W_V", False, "toy")


def _reset_toy() -> None:
    """New editor keys: the browser's editors forget their edits only when their identity changes."""
    st.session_state[_GENERATION] = st.session_state.get(_GENERATION, 0) + 1
    st.session_state[_CELLS] = {}


def apple_lesson() -> Lesson:
    """Seed 004's example: two hand-made features, no projections."""
    st.markdown(
        "Four words described by two features, **fruitiness** and **technology**. There are no learned "
        "projections here: each word's embedding is its query, its key and its value at once, so a word "
        "attends to the words whose features point the same way as its own."
    )
    steps = toy.apple_iphones()
    return Lesson(steps, steps.tokens, toy.APPLE_IPHONES_FEATURES, r"Q = K = V = X", True, "apple")


def text_lesson(context: sidebar.StudyContext, source: str) -> Lesson | None:
    """The sidebar's text through the real model: its embeddings as Q = K = V, or one traced head."""
    if not context.has_text:
        st.info("Type some text in the sidebar: its tokens become the rows of every matrix below.")
        return None
    if context.pretrained.family != "encoder" or context.pretrained.tokenizer is None:
        st.info("This lesson reads an encoder's traced run; the model in use is not an encoder with a tokenizer.")
        return None
    run = loaders.get_encoder_run(context.reference, context.text)
    widgets.truncation_notice(run.tokenized)
    labels = tuple(f"{index}: {token}" for index, token in enumerate(run.tokenized.tokens))
    if source == "embeddings":
        st.markdown(
            "The simplest attention of the notes: the model's input embeddings (token + position, "
            "normalised) are used directly as queries, keys and values, with no projections. A vector "
            "always agrees best with itself, so watch the diagonal."
        )
        steps = _embedding_steps(context.reference, context.text)
        features = tuple(str(index + 1) for index in range(steps.query.size(-1)))
        return Lesson(steps, labels, features, r"Q = K = V = E", True, "embeddings")
    config = context.pretrained.config
    state.restore("att_layer", 0, parse=int, valid=lambda value: 0 <= value < config.num_layers)
    state.restore("att_head", 0, parse=int, valid=lambda value: 0 <= value < config.num_heads)
    left, right = st.columns(2)
    layer = left.slider("Layer", 0, config.num_layers - 1, key="att_layer")
    head = right.slider("Head", 0, config.num_heads - 1, key="att_head")
    state.publish(att_layer=layer, att_head=head)
    st.markdown(
        f"The numbers the model computed in layer {layer}, head {head}. Its queries, keys and values are "
        f"{config.head_width}-wide slices of learned projections of the layer's input (with biases); "
        f"the other {config.num_heads - 1} heads do the same with their own projections."
    )
    steps = _head_steps(context.reference, context.text, layer, head)
    features = tuple(str(index + 1) for index in range(steps.query.size(-1)))
    projection = r"Q = X W_Q^{(h)} + b_Q^{(h)},\quad K = X W_K^{(h)} + b_K^{(h)},\quad V = X W_V^{(h)} + b_V^{(h)}"
    return Lesson(steps, labels, features, projection, False, f"layer{layer}_head{head}")


# Both caches hold float64 (T, T) matrices, about 8 to 9 MB an entry at 512 tokens: few entries keep the
# server within its memory budget (anatomy/ui/memory.py), and a miss costs a few milliseconds.
@st.cache_resource(max_entries=2, show_spinner=False)
def _embedding_steps(reference: str, text: str) -> SingleHeadSteps:
    run = loaders.get_encoder_run(reference, text)
    return embedding_self_attention(run.tokenized.tokens, run.output.trace.embeddings.output[0])


@st.cache_resource(max_entries=4, show_spinner=False)
def _head_steps(reference: str, text: str, layer: int, head: int) -> SingleHeadSteps:
    run = loaders.get_encoder_run(reference, text)
    traced = run.output.trace.layers[layer]
    return traced_head_steps(run.tokenized.tokens, traced.attention, head, traced.input)


# ----- choosing what to look at ---------------------------------------------------------------------------


def choose_focus(lesson: Lesson) -> tuple[int, bool, range, int, int]:
    """The step shown (or emphasised among all five), the window of tokens, and the query/key cell followed."""
    tokens = len(lesson.labels)
    _keep_in_range("att_query", min(1, tokens - 1), tokens)
    _keep_in_range("att_key", min(2, tokens - 1), tokens)
    state.restore("att_step", 1, parse=int, valid=lambda value: value in STEPS)
    state.restore("att_all", False, parse=state.parse_bool)
    slider, back, forward, everything = st.columns([7, 1, 1, 2], vertical_alignment="bottom")
    step = slider.select_slider(
        "Step", options=list(STEPS), format_func=lambda number: f"{number}. {STEPS[number]}", key="att_step"
    )
    back.button("Back", key="att_back", on_click=_move_step, args=(-1,), disabled=step == 1, width="stretch")
    forward.button("Next", key="att_next", on_click=_move_step, args=(1,), disabled=step == len(STEPS),
                   width="stretch")
    show_all = everything.toggle("All steps at once", key="att_all",
                                 help="Show the five steps one under another, the chosen one framed.")
    query_column, key_column = st.columns(2)
    query_index = query_column.selectbox(
        "Follow the query of", range(tokens), format_func=lesson.labels.__getitem__, key="att_query"
    )
    key_index = key_column.selectbox(
        "against the key of", range(tokens), format_func=lesson.labels.__getitem__, key="att_key"
    )
    state.publish(att_step=step, att_all=show_all, att_query=query_index, att_key=key_index)
    window = focus_window(tokens, 0)
    if tokens > FOCUS_WINDOW:
        _keep_in_range("att_window_start", 0, tokens - FOCUS_WINDOW + 1)
        start = st.slider(
            f"The text has {tokens} tokens: the matrices show a window of {FOCUS_WINDOW}, starting at token",
            0, tokens - FOCUS_WINDOW, key="att_window_start",
        )
        state.publish(att_window_start=start)
        window = focus_window(tokens, start)
    return step, show_all, window, query_index, key_index


def _keep_in_range(key: str, default: int, stop: int) -> None:
    """Seed a position widget from the URL, and move it back to the default when the text got shorter."""
    state.restore(key, default, parse=int, valid=lambda value: 0 <= value < stop)
    if not 0 <= st.session_state[key] < stop:
        st.session_state[key] = default


def _move_step(change: int) -> None:
    st.session_state["att_step"] = min(max(st.session_state["att_step"] + change, 1), len(STEPS))


# ----- the five steps ---------------------------------------------------------------------------------------


def show_step(number: int, lesson: Lesson, window: range, focus: tuple[int, int], framed: bool) -> None:
    """One step: what it does, its formula, its numbers. `framed` marks the chosen step among all five."""
    with st.container(border=framed):
        st.subheader(f"{number}. {STEPS[number]}")
        if framed:
            st.badge("chosen step", icon=":material/arrow_forward:")
        st.markdown(STEP_EXPLANATIONS[number])
        st.latex(STEP_FORMULAS.get(number, lesson.projection))
        if number == 1:
            show_projections(lesson, window)
        elif number in (2, 3, 4):
            show_scores(lesson, window, focus, ("raw", "scaled", "weights")[number - 2])
        else:
            show_outputs(lesson, window, focus[0])


def show_projections(lesson: Lesson, window: range) -> None:
    steps, rows = lesson.steps, _window_labels(lesson, window)
    if lesson.shared_qkv:
        st.markdown(
            f"No projection: every row below is a token's embedding, {lesson.head_width} numbers wide, "
            "and it serves as that token's query, key and value alike."
        )
    matrices = {"Q = K = V": steps.query} if lesson.shared_qkv else {
        "Q": steps.query, "K": steps.key, "V": steps.value
    }
    shown = {name: matrix[window.start:window.stop] for name, matrix in matrices.items()}
    st.plotly_chart(
        projection_panels(shown, rows, lesson.features, show_values=_small(steps.query[window.start:window.stop])),
        key="att_figure_projections",
    )
    if numbers := widgets.expander_if_open("The numbers", "att_numbers_projections", expanded=_small(steps.query)):
        with numbers:
            for name, matrix in shown.items():
                show_table(_table(matrix, rows, lesson.features, name),
                           f"{lesson.file_stem}_{name.replace(' = ', '')}")


def show_scores(lesson: Lesson, window: range, focus: tuple[int, int], stage: str) -> None:
    steps, labels = lesson.steps, _window_labels(lesson, window)
    crop = slice(window.start, window.stop)
    raw, scaled, weights = (matrix[crop, crop] for matrix in (steps.raw_scores, steps.scaled_scores, steps.weights))
    highlight = (focus[0] - window.start, focus[1] - window.start) if all(i in window for i in focus) else None
    st.plotly_chart(
        score_matrix(raw, scaled, weights, labels, labels, stage, show_values=_small(raw), highlight=highlight),
        key=f"att_figure_{stage}",
    )
    if stage == "scaled":
        st.caption(f"Here $d_k$ = {lesson.head_width}, so every score is divided by √{lesson.head_width} "
                   f"= {lesson.head_width ** 0.5:.4g}.")
    if stage == "weights" and len(window) < len(lesson.labels):
        st.caption("The window shows part of each row; a full row, over every key, sums to 1.")
    shown = {"raw": raw, "scaled": scaled, "weights": weights}[stage]
    if numbers := widgets.expander_if_open("The numbers", f"att_numbers_{stage}", expanded=_small(raw)):
        with numbers:
            show_table(_table(shown, labels, labels, SCORE_TABLES[stage]), f"{lesson.file_stem}_{stage}")


def show_outputs(lesson: Lesson, window: range, query_index: int) -> None:
    steps, rows = lesson.steps, _window_labels(lesson, window)
    shown = steps.output[window.start:window.stop]
    st.plotly_chart(step_matrix(shown, rows, lesson.features, "output = A V", show_values=_small(shown)),
                    key="att_figure_output")
    st.markdown(f"How row {query_index} of the output is built: each value vector, times its weight.")
    contributions = output_contributions(steps, query_index)[window.start:window.stop]
    contribution_frame = _table(contributions, rows, lesson.features, f"weight × value, query {query_index}")
    contribution_frame.insert(0, "weight", steps.weights[query_index, window.start:window.stop].numpy())
    show_table(contribution_frame, f"{lesson.file_stem}_contributions_query{query_index}")
    if numbers := widgets.expander_if_open("The numbers", "att_numbers_output", expanded=_small(steps.output)):
        with numbers:
            show_table(_table(shown, rows, lesson.features, "output"), f"{lesson.file_stem}_output")


# ----- one score up close, the Apple correction, the whole pattern ------------------------------------------


def show_neuron_view(lesson: Lesson, query_index: int, key_index: int) -> None:
    st.subheader("Inside one score")
    st.markdown(
        f"Query {query_index} against key {key_index}, feature by feature. The bottom bars are the products "
        "$q_f\\,k_f$; their sum is the dot product, the very entry of QKᵀ that the heatmaps show."
    )
    parts = score_anatomy(lesson.steps, query_index, key_index)
    st.plotly_chart(
        neuron_view(parts.query, parts.key, parts.products, lesson.labels[query_index], lesson.labels[key_index],
                    lesson.features),
        key="att_figure_neuron",
    )
    sum_column, matrix_column, scaled_column, weight_column = st.columns(4)
    sum_column.metric("Sum of the products", f"{parts.sum_of_products:.6g}")
    matrix_column.metric(f"QKᵀ[{query_index}, {key_index}]", f"{parts.raw_score:.6g}")
    scaled_column.metric(f"÷ √{lesson.head_width}", f"{parts.scaled_score:.6g}")
    weight_column.metric("Weight after softmax", f"{parts.weight:.6g}")
    frame = pd.DataFrame(
        {"query": parts.query.numpy(), "key": parts.key.numpy(), "query × key": parts.products.numpy()},
        index=pd.Index(lesson.features, name="feature"),
    )
    if numbers := widgets.expander_if_open("The numbers", "att_numbers_neuron", expanded=lesson.head_width <= 8):
        with numbers:
            show_table(frame, f"{lesson.file_stem}_query{query_index}_key{key_index}")


def show_apple_correction(steps: SingleHeadSteps) -> None:
    apple = steps.tokens.index("Apple")
    computed, weights, values = steps.output[apple].tolist(), steps.weights[apple].tolist(), steps.value.tolist()
    attended = [index for index, weight in enumerate(weights) if weight > 1e-6]  # the rest are below e^-70

    def weighted_sum(feature: int) -> str:
        return " + ".join(f"{weights[index]:.2g} × {values[index][feature]:g}" for index in attended)

    st.subheader("Apple becomes more company-like")
    st.markdown(
        f"Apple's query scores {steps.raw_scores[apple, attended[0]]:g} against both its own key and "
        "iPhones' key, far above the other two, so the softmax splits its weight evenly between them. "
        f"The package computes Apple's new vector as **({computed[0]:.4g}, {computed[1]:.4g})**: "
        f"fruitiness falls from {values[apple][0]:g} to {weighted_sum(0)} = {computed[0]:.4g}, and "
        f"technology rises from {values[apple][1]:g} to {weighted_sum(1)} = {computed[1]:.4g}."
    )
    for feature, (name, printed) in enumerate(zip(toy.APPLE_IPHONES_FEATURES, NOTES_PRINTED_APPLE_OUTPUT)):
        if abs(printed - computed[feature]) > 1e-6:
            st.warning(
                f"The chapter notes print {printed:g} for Apple's {name}, an arithmetic slip: with these "
                f"weights, {weighted_sum(feature)} = {computed[feature]:.4g}.",
                icon=":material/calculate:",
            )


def show_full_pattern(lesson: Lesson) -> None:
    tokens = len(lesson.labels)
    if st.toggle(f"Show the whole {tokens} × {tokens} attention pattern (colours only)", key="att_full"):
        st.plotly_chart(full_pattern(lesson.steps.weights, lesson.labels), key="att_figure_full")
        st.download_button(
            "Download every weight (CSV)",
            lambda: pd.DataFrame(lesson.steps.weights.numpy(), index=lesson.labels, columns=lesson.labels)
            .to_csv().encode("utf-8"),
            file_name=f"{lesson.file_stem}_weights_full.csv", mime="text/csv", icon=":material/download:",
            key="att_download_full",
        )


def show_table(frame: pd.DataFrame, file_stem: str) -> None:
    """A table and its CSV; a table too wide to read (a 384-wide embedding) is offered as the CSV only,
    built when clicked, which keeps the page light."""
    if frame.shape[1] <= WIDEST_TABLE:
        st.dataframe(frame)
        widgets.download_csv(frame, f"{file_stem}.csv")
        return
    st.caption(f"{frame.shape[1]} columns are too many to read here; hover the heatmap or download them.")
    st.download_button(
        f"Download {frame.index.name} (CSV)", lambda: frame.to_csv().encode("utf-8"), file_name=f"{file_stem}.csv",
        mime="text/csv", icon=":material/download:", key=f"download-{file_stem}",
    )


def _table(matrix, rows, columns, name: str) -> pd.DataFrame:
    """A labelled table whose corner cell names it (tests find a table by that name too)."""
    frame = pd.DataFrame(matrix.numpy(), index=list(rows), columns=list(columns))
    frame.index.name = name
    return frame


def _window_labels(lesson: Lesson, window: range) -> list[str]:
    return list(lesson.labels[window.start:window.stop])


def _small(matrix) -> bool:
    """Few enough cells to print every value inside the heatmap."""
    return matrix.size(0) <= 12 and matrix.size(-1) <= 12


main()
