"""The attention lesson's sections: the four sources of Q, K and V, the five steps, one score up close.

Every number comes from `lessons.attention.steps` and `lessons.common.examples`; every figure from
`lessons.attention.figures`. This module only chooses what to show and lays it out.
"""

from __future__ import annotations

import pandas as pd
import streamlit as st

from lessons.attention import links, text
from lessons.attention.figures import (
    ScoreStage,
    full_pattern,
    neuron_view,
    projection_panels,
    score_matrix,
    step_matrix,
)
from lessons.attention.matrix_input import decode_matrices, encode_matrices, matrix_cells, parse_matrix
from lessons.attention.steps import (
    HeadLesson,
    embedding_self_attention,
    feature_labels,
    output_contributions,
    score_anatomy,
    traced_head_steps,
)
from lessons.common import examples
from lessons.common.labels import token_labels
from lessons.common.safe_text import escape_markdown
from lessons.common.ui import charts, linked, loaders, widgets
from lessons.common.ui.sidebar import StudyContext
from lessons.common.windows import FOCUS_WINDOW, focus_window

WIDEST_TABLE = 64  # columns; wider tables are offered as CSV only
SCORE_STAGES: tuple[ScoreStage, ...] = ("raw", "scaled", "weights")  # what steps 2, 3 and 4 show
TOY_MATRICES = {  # name shown → (starting values, what its rows are)
    "X": (examples.LOVE_MATHEMATICS_X, examples.LOVE_MATHEMATICS_TOKENS),
    "W_Q": (examples.LOVE_MATHEMATICS_W_Q, None),
    "W_K": (examples.LOVE_MATHEMATICS_W_K, None),
    "W_V": (examples.LOVE_MATHEMATICS_W_V, None),
}
_GENERATION, _CELLS = "att_toy_generation", "att_toy_cells"  # editor reset counter; edits kept across sources
_LINKED_CELLS = "att_toy_linked"  # the matrices last taken from a link (taken once)


# ----- the four sources ---------------------------------------------------------------------------------


def lesson_from(source: str, context: StudyContext) -> HeadLesson | None:
    """The head to study, from the chosen source (None, with a message, when the text cannot give one)."""
    if source == "toy":
        return toy_lesson()
    if source == "apple":
        return apple_lesson()
    return text_lesson(context, source)


def toy_lesson() -> HeadLesson | None:
    """The "I love mathematics" example, every entry of X, W_Q, W_K and W_V editable, the edits in the link."""
    st.markdown(text.TOY_INTRO)
    st.button(text.TOY_RESET, icon=":material/restart_alt:", key="att_reset", on_click=_reset_toy)
    _cells_from_the_link()
    generation = st.session_state.setdefault(_GENERATION, 0)
    kept = st.session_state.setdefault(_CELLS, {})
    parsed = []
    grid = [*st.columns(2), *st.columns(2)]  # two rows of two: each editor wide enough for its 4 columns
    for column, (name, (seed, row_labels)) in zip(grid, TOY_MATRICES.items(), strict=True):
        with column:
            st.latex(name)
            cells = kept.get(name) or matrix_cells(seed)
            rows = list(token_labels(row_labels) if row_labels else [f"row {index}" for index in range(seed.size(0))])
            frame = pd.DataFrame(cells, index=rows, columns=[str(index) for index in range(seed.size(1))])
            edited = st.data_editor(
                frame,
                key=f"att_edit_{generation}_{name}",
                num_rows="fixed",
                column_config={label: st.column_config.TextColumn(width="small") for label in frame.columns},
            )
            kept[name] = edited.to_numpy(dtype=object).tolist()
            parsed.append(parse_matrix(name, kept[name], (seed.size(0), seed.size(1))))
    problems = [problem for matrix in parsed for problem in matrix.problems]
    if problems:
        linked.unpublish(links.TOY_MATRICES)
        listed = "\n".join(f"- {escape_markdown(problem.message)}" for problem in problems)
        st.error(
            f"Some entries are not usable numbers yet, so nothing below is recomputed (and the link does not "
            f"carry the matrices until they are).\n\n{listed}",
            icon=":material/edit_off:",
        )
        return None
    values = {matrix.name: matrix.values for matrix in parsed if matrix.values is not None}
    edits = encode_matrices(values, {name: seed for name, (seed, _) in TOY_MATRICES.items()})
    if edits:
        linked.publish(links.TOY_MATRICES, edits)
    else:
        linked.unpublish(links.TOY_MATRICES)
    steps = examples.single_head_steps(
        examples.LOVE_MATHEMATICS_TOKENS, values["X"], values["W_Q"], values["W_K"], values["W_V"]
    )
    return HeadLesson(
        steps,
        tuple(token_labels(steps.tokens)),
        feature_labels(steps.query.size(-1)),
        text.TOY_PROJECTION,
        False,
        "toy",
        text.TOY_EDITED if edits else text.TOY_ABOUT,
    )


def _cells_from_the_link() -> None:
    """Matrices a link carries replace the editors' contents (new editor keys make the browser redraw them)."""
    shapes = {name: (seed.size(0), seed.size(1)) for name, (seed, _) in TOY_MATRICES.items()}
    cells = linked.bind(
        links.TOY_MATRICES,
        None,
        parse=lambda raw: decode_matrices(raw, shapes),
        fits=lambda value: value is None or isinstance(value, dict),
        requirement="matrices of the toy's shapes, written by this app",
    )
    if cells is not None and cells is not st.session_state.get(_LINKED_CELLS):
        st.session_state[_LINKED_CELLS] = cells
        st.session_state[_CELLS] = {name: [list(row) for row in rows] for name, rows in cells.items()}
        st.session_state[_GENERATION] = st.session_state.get(_GENERATION, 0) + 1


def _reset_toy() -> None:
    """New editor keys: the browser's editors forget their edits only when their identity changes."""
    st.session_state[_GENERATION] = st.session_state.get(_GENERATION, 0) + 1
    st.session_state[_CELLS] = {}
    linked.set_value(links.TOY_MATRICES, None)


def apple_lesson() -> HeadLesson:
    """Two hand-made features per word, no projections."""
    st.markdown(text.APPLE_INTRO)
    steps = examples.apple_iphones()
    return HeadLesson(
        steps,
        tuple(token_labels(steps.tokens)),
        examples.APPLE_IPHONES_FEATURES,
        r"Q = K = V = X",
        True,
        "apple",
        text.APPLE_ABOUT,
    )


def text_lesson(context: StudyContext, source: str) -> HeadLesson | None:
    """The sidebar's text through the real model: its embeddings as Q = K = V, or one traced head."""
    if not context.has_text:
        st.info(text.NEEDS_TEXT)
        return None
    if context.pretrained.family != "encoder" or context.pretrained.tokenizer is None:
        st.info(text.NEEDS_ENCODER)
        return None
    run = loaders.get_encoder_run(context.reference, context.text)
    widgets.truncation_notice(run.tokenized)
    labels = tuple(token_labels(run.tokenized.tokens))
    if source == "embeddings":
        st.markdown(text.EMBEDDINGS_INTRO)
        steps = _embedding_steps(context.reference, context.text)
        return HeadLesson(
            steps,
            labels,
            feature_labels(steps.query.size(-1)),
            r"Q = K = V = E",
            True,
            "embeddings",
            text.EMBEDDINGS_ABOUT,
        )
    config = context.pretrained.config
    left, right = st.columns(2)
    layer = linked.slider("Layer", links.LAYER, 0, config.num_layers - 1, 0, container=left)
    head = linked.slider("Head", links.HEAD, 0, config.num_heads - 1, 0, container=right)
    st.markdown(text.head_intro(layer, head, config.head_width, config.num_heads))
    steps = _head_steps(context.reference, context.text, layer, head)
    return HeadLesson(
        steps,
        labels,
        feature_labels(steps.query.size(-1)),
        text.HEAD_PROJECTION,
        False,
        f"layer{layer}_head{head}",
        text.head_about(layer, head),
    )


# Both caches hold float64 (T, T) matrices, about 8 to 9 MB an entry at 512 tokens: few entries keep the
# server within its memory budget (lessons/common/memory.py), and a miss costs a few milliseconds.
@st.cache_resource(max_entries=2, show_spinner=False)
def _embedding_steps(reference: str, text: str):
    run = loaders.get_encoder_run(reference, text)
    return embedding_self_attention(run.tokenized.tokens, run.trace.embeddings.output[0])


@st.cache_resource(max_entries=4, show_spinner=False)
def _head_steps(reference: str, text: str, layer: int, head: int):
    run = loaders.get_encoder_run(reference, text)
    traced = run.trace.layers[layer]
    return traced_head_steps(run.tokenized.tokens, traced.attention, head, traced.input)


# ----- choosing what to look at ---------------------------------------------------------------------------


def choose_focus(lesson: HeadLesson) -> tuple[int, bool, range, int, int]:
    """The step shown (or emphasised among all five), the window of tokens, and the query/key cell followed."""
    tokens = range(len(lesson.labels))
    # The slider on a line of its own: beside it, at 150 % zoom, the buttons were too narrow for "Back".
    slider = st.container()
    back, forward, everything = st.columns([1, 1, 2], vertical_alignment="center")
    step = linked.select_slider(
        "Step",
        links.STEP,
        list(text.STEPS),
        1,
        parse=int,
        container=slider,
        format_func=lambda number: f"{number}. {text.STEPS[number]}",
    )
    back.button("Back", key="att_back", on_click=_move_step, args=(-1,), disabled=step == 1, width="stretch")
    forward.button(
        "Next", key="att_next", on_click=_move_step, args=(1,), disabled=step == len(text.STEPS), width="stretch"
    )
    show_all = linked.toggle(
        "All steps at once",
        links.ALL_STEPS,
        container=everything,
        help="Show the five steps one under another, the chosen one framed.",
    )
    query_column, key_column = st.columns(2)
    query_index = linked.selectbox(
        "Follow the query of",
        links.QUERY,
        tokens,
        min(1, len(tokens) - 1),
        parse=int,
        format_func=lesson.labels.__getitem__,
        container=query_column,
    )
    key_index = linked.selectbox(
        "against the key of",
        links.KEY,
        tokens,
        min(2, len(tokens) - 1),
        parse=int,
        format_func=lesson.labels.__getitem__,
        container=key_column,
    )
    window = focus_window(len(tokens), 0)
    if len(tokens) > FOCUS_WINDOW:
        start = linked.slider(
            f"The text has {len(tokens)} tokens: the matrices show a window of {FOCUS_WINDOW}, starting at token",
            links.WINDOW_START,
            0,
            len(tokens) - FOCUS_WINDOW,
            0,
        )
        window = focus_window(len(tokens), start)
    return step, show_all, window, query_index, key_index


def _move_step(change: int) -> None:
    linked.set_value(links.STEP, min(max(st.session_state[links.STEP] + change, 1), len(text.STEPS)))


# ----- the five steps ---------------------------------------------------------------------------------------


def show_steps(lesson: HeadLesson, step: int, show_all: bool, window: range, focus: tuple[int, int]) -> None:
    """The chosen step, or all five one under another with the chosen one framed."""
    for number in text.STEPS if show_all else [step]:
        show_step(number, lesson, window, focus, framed=show_all and number == step)


def show_step(number: int, lesson: HeadLesson, window: range, focus: tuple[int, int], framed: bool) -> None:
    """One step: what it does, its formula, its numbers. `framed` marks the chosen step among all five."""
    with st.container(border=framed):
        st.subheader(f"{number}. {text.STEPS[number]}")
        if framed:
            st.badge("chosen step", icon=":material/arrow_forward:")
        st.markdown(text.STEP_EXPLANATIONS[number])
        st.latex(text.STEP_FORMULAS.get(number, lesson.projection))
        if number == 1:
            show_projections(lesson, window)
        elif number in (2, 3, 4):
            show_scores(lesson, window, focus, SCORE_STAGES[number - 2])
        else:
            show_outputs(lesson, window, focus[0])


def show_projections(lesson: HeadLesson, window: range) -> None:
    steps, rows = lesson.steps, _window_labels(lesson, window)
    if lesson.shared_qkv:
        st.markdown(
            f"No projection: every row below is a token's embedding, {lesson.head_width} numbers wide, "
            "and it serves as that token's query, key and value alike."
        )
    matrices = {"Q = K = V": steps.query} if lesson.shared_qkv else {"Q": steps.query, "K": steps.key, "V": steps.value}
    shown = {name: matrix[window.start : window.stop] for name, matrix in matrices.items()}
    charts.show(
        projection_panels(shown, rows, lesson.features),
        key="att_figure_projections",
    )
    if numbers := widgets.expander_if_open("The numbers", "att_numbers_projections", expanded=_small(steps.query)):
        with numbers:
            for name, matrix in shown.items():
                show_table(_table(matrix, rows, lesson.features, name), f"{lesson.file_stem}_{name.replace(' = ', '')}")


def show_scores(lesson: HeadLesson, window: range, focus: tuple[int, int], stage: ScoreStage) -> None:
    steps, labels = lesson.steps, _window_labels(lesson, window)
    crop = slice(window.start, window.stop)
    raw, scaled, weights = (matrix[crop, crop] for matrix in (steps.raw_scores, steps.scaled_scores, steps.weights))
    highlight = (focus[0] - window.start, focus[1] - window.start) if all(i in window for i in focus) else None
    charts.show(
        score_matrix(raw, scaled, weights, labels, labels, stage, highlight=highlight),
        key=f"att_figure_{stage}",
    )
    if stage == "scaled":
        st.caption(
            f"Here $d_k$ = {lesson.head_width}, so every score is divided by √{lesson.head_width} "
            f"= {lesson.head_width**0.5:.4g}."
        )
    if stage == "weights" and len(window) < len(lesson.labels):
        st.caption("The window shows part of each row; a full row, over every key, sums to 1.")
    shown = {"raw": raw, "scaled": scaled, "weights": weights}[stage]
    if numbers := widgets.expander_if_open("The numbers", f"att_numbers_{stage}", expanded=_small(raw)):
        with numbers:
            show_table(_table(shown, labels, labels, text.SCORE_TABLES[stage]), f"{lesson.file_stem}_{stage}")


def show_outputs(lesson: HeadLesson, window: range, query_index: int) -> None:
    steps, rows = lesson.steps, _window_labels(lesson, window)
    shown = steps.output[window.start : window.stop]
    charts.show(step_matrix(shown, rows, lesson.features, "output = A V"), key="att_figure_output")
    st.markdown(f"How row {query_index} of the output is built: each value vector, times its weight.")
    contributions = output_contributions(steps, query_index)[window.start : window.stop]
    contribution_frame = _table(contributions, rows, lesson.features, f"weight × value, query {query_index}")
    contribution_frame.insert(0, "weight", steps.weights[query_index, window.start : window.stop].numpy())
    show_table(contribution_frame, f"{lesson.file_stem}_contributions_query{query_index}")
    if numbers := widgets.expander_if_open("The numbers", "att_numbers_output", expanded=_small(steps.output)):
        with numbers:
            show_table(_table(shown, rows, lesson.features, "output"), f"{lesson.file_stem}_output")


# ----- one score up close, the Apple correction, the whole pattern ------------------------------------------


def show_neuron_view(lesson: HeadLesson, query_index: int, key_index: int) -> None:
    st.subheader("Inside one score")
    st.markdown(text.neuron_intro(query_index, key_index))
    parts = score_anatomy(lesson.steps, query_index, key_index)
    charts.show(
        neuron_view(
            parts.query,
            parts.key,
            parts.products,
            lesson.labels[query_index],
            lesson.labels[key_index],
            lesson.features,
        ),
        key="att_figure_neuron",
    )
    # Two by two: four abreast cut "0.218694" short at 150 % zoom.
    sum_column, matrix_column, scaled_column, weight_column = [*st.columns(2), *st.columns(2)]
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


def show_apple_moves(lesson: HeadLesson) -> None:
    steps = lesson.steps
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


def show_full_pattern(lesson: HeadLesson) -> None:
    """For a text longer than the window: every weight at once, in colour only."""
    tokens = len(lesson.labels)
    if tokens <= FOCUS_WINDOW:
        return
    if linked.toggle(f"Show the whole {tokens} × {tokens} attention pattern (colours only)", links.WHOLE_PATTERN):
        charts.show(full_pattern(lesson.steps.weights, lesson.labels), key="att_figure_full")
        st.download_button(
            "Download every weight (CSV)",
            lambda: (
                pd.DataFrame(lesson.steps.weights.numpy(), index=lesson.labels, columns=lesson.labels)
                .to_csv()
                .encode("utf-8")
            ),
            file_name=f"{lesson.file_stem}_weights_full.csv",
            mime="text/csv",
            icon=":material/download:",
            key="att_download_full",
        )


def show_table(frame: pd.DataFrame, file_stem: str) -> None:
    """A table and its CSV; a table too wide to read (a 384-wide embedding) is offered as the CSV only,
    built when clicked, which keeps the page light."""
    if frame.shape[1] <= WIDEST_TABLE:
        st.dataframe(frame, column_config=widgets.rounded_numbers(frame))
        widgets.download_csv(frame, f"{file_stem}.csv")
        return
    st.caption(f"{frame.shape[1]} columns are too many to read here; hover the heatmap or download them.")
    st.download_button(
        f"Download {frame.index.name} (CSV)",
        lambda: frame.to_csv().encode("utf-8"),
        file_name=f"{file_stem}.csv",
        mime="text/csv",
        icon=":material/download:",
        key=f"download-{file_stem}",
    )


def _table(matrix, rows, columns, name: str) -> pd.DataFrame:
    """A labelled table whose corner cell names it (tests find a table by that name too)."""
    frame = pd.DataFrame(matrix.numpy(), index=list(rows), columns=list(columns))
    frame.index.name = name
    return frame


def _window_labels(lesson: HeadLesson, window: range) -> list[str]:
    return list(lesson.labels[window.start : window.stop])


def _small(matrix) -> bool:
    """Few enough cells to open the table of their numbers under a figure from the start."""
    return matrix.size(0) <= 12 and matrix.size(-1) <= 12
