"""The positional lesson's sections: the formula and its curves, the whole table, how alike positions are,
and the paper's three promises measured on both tables.

Every number comes from `anatomy.positional` and `lessons.positional.analysis`; every figure from
`lessons.positional.figures`. This module only chooses what to show and lays it out.
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd
import streamlit as st
import torch
from torch import Tensor

from anatomy.checkpoints.pretrained import ModelLoadError
from anatomy.config import SMOLLM2_135M
from anatomy.models import DecoderOnlyLM
from anatomy.positional import sinusoidal_positional_encoding
from lessons.common import hosting
from lessons.common.labels import token_label
from lessons.common.llm import readable
from lessons.common.plots import safe_label
from lessons.common.runs import tokenize
from lessons.common.safe_text import visible
from lessons.common.ui import charts, linked, loaders, widgets
from lessons.common.ui.sidebar import StudyContext
from lessons.positional import links, rotary, text
from lessons.positional.analysis import (
    MAX_WIDTH,
    MIN_WIDTH,
    Similarity,
    base_is_usable,
    default_curve_dimensions,
    encoding_settings_problem,
    learned_position_table,
    rebuilds_identically,
    similarities_with,
    slowest_period,
    study_table,
    width_is_usable,
)
from lessons.positional.figures import (
    colour_limit,
    dimension_curves,
    encoding_heatmap,
    rotation_frequencies,
    scores_under_shifts,
    similarity_by_offset,
    similarity_heatmap,
    similarity_to_position,
    turning_pairs,
)

DEFAULT_BASE = 10_000.0  # the paper's ("Attention Is All You Need", section 3.5)
MIN_SHOWN, MAX_SHOWN, DEFAULT_SHOWN = 8, 512, 64
FALLBACK_WIDTH = 128  # the width offered when the model's own is outside MIN_WIDTH..MAX_WIDTH
MAX_CURVES = 8
# Choices drawn inside one tab. Streamlit forgets a widget's value after a run that does not draw it, and only
# the open tab runs: setting them from Python on every run keeps them through a visit to another tab.
TAB_CHOICES = (links.DIMENSIONS, links.POSITION, links.MEASURE)


@dataclass(frozen=True)
class Encoding:
    """What every tab reads: the sinusoidal table chosen above the tabs, the similarity measure, and the
    model whose learned table stands beside it."""

    model_key: str  # the model's name, which stands for its learned table in the caches
    model_name: str  # the last part of that name, for titles
    learned_table: Tensor | None  # (max_positions, D); None for a model built with sinusoidal positions
    width: int  # d
    base: float
    shown: int  # positions (rows of each table) the charts use
    measure: Similarity
    positions_in_text: int  # positions the sidebar's text uses, shaded on the curves
    text: str = ""  # the sidebar's text, whose SmolLM2 queries and keys the rotary tab turns


# ----- the settings above the tabs --------------------------------------------------------------------------


def show_text_positions(context: StudyContext) -> int:
    """How many positions the sidebar's text uses, said in a caption (0 without a text or a tokenizer)."""
    pretrained = context.pretrained
    if not context.has_text or pretrained.tokenizer is None:
        return 0
    tokenized = tokenize(pretrained.tokenizer, context.text, max_tokens=pretrained.config.max_positions)
    widgets.truncation_notice(tokenized)
    st.caption(text.text_positions(len(tokenized)))
    return len(tokenized)


def choose_encoding(context: StudyContext, positions_in_text: int) -> Encoding | None:
    """Width, base and positions shown, then the measure and position p that the tabs read; None (and the
    reason) while a typed width or base cannot make a table. A bad typed number stays in its field, so the
    learner can see and fix it, but it is never written into the link."""
    _keep_tab_choices()
    pretrained = context.pretrained
    model_width = pretrained.config.width
    width_column, base_column, shown_column = st.columns([1, 1, 2])
    width = linked.number_input(
        "Model width d",
        links.WIDTH,
        None,
        None,
        model_width if width_is_usable(model_width) else FALLBACK_WIDTH,
        step=2,
        usable=width_is_usable,
        requirement=text.width_requirement(MIN_WIDTH, MAX_WIDTH),
        container=width_column,
        help=text.width_help(MIN_WIDTH, MAX_WIDTH, model_width),
    )
    base = linked.number_input(
        "Base",
        links.BASE,
        None,
        None,
        DEFAULT_BASE,
        parse=float,
        step=1000.0,
        usable=base_is_usable,
        requirement=text.BASE_REQUIREMENT,
        text=lambda value: f"{value:g}",
        container=base_column,
        format="%g",
        help=text.BASE_HELP,
    )
    shown = linked.slider(
        "Positions shown",
        links.SHOWN,
        MIN_SHOWN,
        MAX_SHOWN,
        DEFAULT_SHOWN,
        container=shown_column,
        help=text.SHOWN_HELP,
    )
    if problem := encoding_settings_problem(width, base):
        st.error(text.settings_problem(problem), icon=":material/error:")
        return None
    # Every tab below reads the study of both tables, made with this measure; it is chosen in the similarity tab.
    measure: Similarity = linked.bind(
        links.MEASURE, "cosine", fits=text.MEASURES.__contains__, requirement=text.MEASURE_REQUIREMENT
    )
    _bind_position(shown)
    return Encoding(
        pretrained.name,
        pretrained.name.split("/")[-1],
        learned_position_table(pretrained.model),
        width,
        base,
        shown,
        measure,
        positions_in_text,
        context.text if context.has_text else "",
    )


def _keep_tab_choices() -> None:
    for key in TAB_CHOICES:
        if key in st.session_state:
            linked.set_value(key, st.session_state[key])


def _bind_position(shown: int) -> None:
    """Position p, bound here although only the similarity tab draws it, so that a link's p is checked
    whichever tab opens. Fewer positions shown move a p past the last one onto the last one."""
    chosen = st.session_state.get(links.POSITION)
    linked.bind(
        links.POSITION,
        shown // 2 if chosen is None else min(chosen, shown - 1),
        parse=int,
        fits=lambda position: 0 <= position < shown,
        requirement=text.position_requirement(shown),
    )


# ----- cached pieces ----------------------------------------------------------------------------------------
# A plotly figure costs far more to build than the numbers in it, so the studies and their figures are
# cached on the settings that decide them. Arguments starting with "_" are not hashed: the settings
# before them already name them. Nothing cached is changed afterwards (st.plotly_chart only reads).


@st.cache_resource(max_entries=16, show_spinner=False)
def studies(model_key, shown, width, base, measure, _learned_table):
    """Sinusoidal (and learned) table of `shown` positions, each with its similarities and properties."""
    tables = {"sinusoidal": sinusoidal_positional_encoding(shown, width, base)}
    if _learned_table is not None:
        tables["learned"] = _learned_table[:shown]
    return {name: study_table(table, measure) for name, table in tables.items()}


@st.cache_resource(max_entries=16, show_spinner=False)
def study_figures(model_key, shown, width, base, measure, model_name, _studies):
    label = text.MEASURES[measure]
    # The two tables are drawn side by side: a title of one word each, the rest in the subtitle below it.
    titles = {"sinusoidal": "Sinusoidal", "learned": "Learned"}
    made_by = {"sinusoidal": "", "learned": f"by {safe_label(model_name)}<br>"}
    return {
        "tables": {
            name: encoding_heatmap(
                study.table,
                titles[name],
                f"{made_by[name]}{len(study.table)} positions × {study.table.shape[1]} dimensions",
            )
            for name, study in _studies.items()
        },
        "similarities": {
            name: similarity_heatmap(
                study.similarities,
                label,
                titles[name],
                f"{made_by[name]}{label} of every pair",
                centre_on_zero=measure == "cosine",
            )
            for name, study in _studies.items()
        },
        "by_offset": similarity_by_offset(
            {
                name: (study.by_offset.mean, study.by_offset.lowest, study.by_offset.highest)
                for name, study in _studies.items()
            },
            label,
            f"{label.capitalize()} against distance",
        ),
    }


@st.cache_resource(max_entries=32, show_spinner=False)
def row_figure(model_key, shown, width, base, measure, position, _studies):
    label = text.MEASURES[measure]
    return similarity_to_position(
        similarities_with(position, _studies),
        position,
        label,
        f"{label.capitalize()} of position {position} with every position",
    )


@st.cache_resource(max_entries=32, show_spinner=False)
def curves_figure(shown, width, base, dimensions, positions_in_text):
    encoding = sinusoidal_positional_encoding(shown, width, base)
    return dimension_curves(
        encoding,
        list(dimensions),
        f"Sinusoidal encoding, d = {width}, base = {base:g}",
        positions_in_text=positions_in_text,
    )


def both_tables(encoding: Encoding):
    """The study of the sinusoidal and the learned table, run (once per settings) by the tab that shows it."""
    return studies(
        encoding.model_key, encoding.shown, encoding.width, encoding.base, encoding.measure, encoding.learned_table
    )


def figures_of(encoding: Encoding, studied):
    return study_figures(
        encoding.model_key,
        encoding.shown,
        encoding.width,
        encoding.base,
        encoding.measure,
        encoding.model_name,
        studied,
    )


# ----- the four tabs ----------------------------------------------------------------------------------------


def show_curves(encoding: Encoding) -> None:
    """The formula, and the chosen columns of the sinusoidal table drawn as waves."""
    width, base = encoding.width, encoding.base
    st.markdown(text.COMPONENT)
    st.latex(text.FORMULA)
    st.markdown(text.clock_hands(width, base, slowest_period(width, base)))
    dimensions = tuple(choose_dimensions(width))
    if dimensions:
        charts.show(curves_figure(encoding.shown, width, base, dimensions, encoding.positions_in_text))
    else:
        st.info(text.NO_DIMENSIONS, icon=":material/show_chart:")


def choose_dimensions(width: int) -> list[int]:
    """The columns to draw. A narrower table keeps those of the chosen columns it still has."""
    chosen = st.session_state.get(links.DIMENSIONS)
    kept = default_curve_dimensions(width) if chosen is None else [index for index in chosen if index < width]
    return linked.multiselect(
        "Dimensions i to draw",
        links.DIMENSIONS,
        range(width),
        kept,
        max_selections=MAX_CURVES,
        format_func=lambda index: f"{index} ({'sin' if index % 2 == 0 else 'cos'})",
        parse=int,
    )


def show_tables(encoding: Encoding) -> None:
    """Both tables as heatmaps, side by side."""
    studied = both_tables(encoding)
    figures = figures_of(encoding, studied)
    st.markdown(text.TABLE_INTRO)
    for column, (name, study) in zip(st.columns(2), studied.items()):
        with column:
            charts.show(figures["tables"][name], about="")
            offer_table_download(study.table, f"{name}_positions.csv")
    learned_table = encoding.learned_table
    if learned_table is None:
        st.info(text.NO_LEARNED_TABLE)
    else:
        learned = studied["learned"]
        rows, width = learned_table.shape
        st.caption(
            text.learned_table_caption(rows, width, colour_limit(learned.table), learned.properties.largest_magnitude)
        )


def offer_table_download(table: Tensor, file_name: str) -> None:
    """The full table as CSV, written only when the button is pressed (a 512 × 1024 table takes seconds)."""
    st.download_button(
        "Download this table (CSV)",
        lambda: pd.DataFrame(table.numpy()).rename_axis("position").to_csv(),
        file_name=file_name,
        mime="text/csv",
        icon=":material/download:",
        key=f"download-{file_name}",
    )


def show_similarity(encoding: Encoding) -> None:
    """Similarity of position p with every position, of every pair, and of all pairs grouped by distance."""
    studied = both_tables(encoding)
    figures = figures_of(encoding, studied)
    st.markdown(text.SIMILARITY_INTRO)
    st.latex(text.SIMILARITY_FORMULA)
    st.markdown(text.DISTANCE_ALONE)
    position_column, measure_column = st.columns([3, 1])
    position = linked.slider(
        "Position p", links.POSITION, 0, encoding.shown - 1, encoding.shown // 2, container=position_column
    )
    # The radio shows the measure the studies above were made with (bound before the tabs).
    linked.radio("Measure", links.MEASURE, text.MEASURES, "cosine", container=measure_column, horizontal=True)
    measure = encoding.measure
    if measure == "dot" and "learned" in studied:
        st.caption(text.DOT_SCALES)
    charts.show(
        row_figure(encoding.model_key, encoding.shown, encoding.width, encoding.base, measure, position, studied)
    )
    widgets.download_csv(
        pd.DataFrame(
            {name: pd.Series(row.numpy()) for name, row in similarities_with(position, studied).items()}
        ).rename_axis("q"),
        f"{measure}_with_position_{position}.csv",
        label="Download these similarities (CSV)",
    )
    for column, name in zip(st.columns(len(studied)), studied):
        charts.show(figures["similarities"][name], about="", into=column)
    st.markdown(text.BY_DISTANCE)
    charts.show(figures["by_offset"], about="")
    for column, (name, study) in zip(st.columns(len(studied)), studied.items()):
        column.metric(
            f"{name.capitalize()}: widest band", f"{study.by_offset.largest_spread:.2e}", help=text.WIDEST_BAND_HELP
        )


def show_properties(encoding: Encoding) -> None:
    """Bounded, unique, deterministic: the paper's promises measured on both tables."""
    studied = both_tables(encoding)
    st.markdown(text.PROPERTIES_INTRO)
    repeatable = rebuilds_identically(
        lambda: sinusoidal_positional_encoding(encoding.shown, encoding.width, encoding.base)
    )
    # One column per table, headed by its name: the labels need not repeat it, so they fit a column of a
    # desktop zoomed to 150 % (a third of it cut "smallest distance between two rows" short).
    for column, (name, study) in zip(st.columns(len(studied)), studied.items()):
        found = study.properties  # closest_pair is never None here: at least MIN_SHOWN positions
        column.markdown(f"**{text.TABLE_NAMES[name]}**")
        column.metric("largest |value|", f"{found.largest_magnitude:.6f}")
        column.metric(
            "smallest distance between two rows",
            f"{found.closest_distance:.6f}",
            help=f"Between positions {found.closest_pair[0]} and {found.closest_pair[1]}.",
        )
        if name == "sinusoidal":
            column.metric("built twice", "identical" if repeatable else "different")
    properties = properties_table(studied)
    st.dataframe(properties, width="stretch")
    widgets.download_csv(properties, "position_table_properties.csv")


def properties_table(studied) -> pd.DataFrame:
    """One row per table: its size and what was measured on it."""
    return pd.DataFrame(
        {
            "positions": [study.properties.num_positions for study in studied.values()],
            "dimensions": [study.properties.width for study in studied.values()],
            "largest |value|": [study.properties.largest_magnitude for study in studied.values()],
            "closest pair p": [study.properties.closest_pair[0] for study in studied.values()],
            "closest pair q": [study.properties.closest_pair[1] for study in studied.values()],
            "smallest distance": [study.properties.closest_distance for study in studied.values()],
            "widest band at one distance": [study.by_offset.largest_spread for study in studied.values()],
        },
        index=pd.Index(list(studied), name="table"),
    )


# ----- rotary positions: SmolLM2's own queries and keys ----------------------------------------------------

ROTARY_SHIFTS = list(range(0, 513, 8))  # both tokens moved up to 512 places along
ROTARY_ARROW_POSITIONS = 8  # positions 0..7 drawn as arrows


@st.cache_resource(max_entries=8, show_spinner=False)
def rotary_frequency_figure(head_width: int, theta: float, width: int, base: float):
    return rotation_frequencies(
        rotary.rotary_frequencies(head_width, theta),
        rotary.sinusoidal_frequencies(width, base),
        theta,
        head_width,
        base,
        width,
        "Radians each pair turns per position",
    )


# At most two texts' layer inputs, on the model's device: 35 MB each at 512 tokens (the cap on a CPU), far less
# for a sentence, 566 MB at 8,192 (a CUDA GPU's cap).
@st.cache_resource(max_entries=2, show_spinner="Running SmolLM2 on your text…")
def rotary_layer_inputs(study_text: str, cap: int) -> tuple[tuple[Tensor, ...], tuple[str, ...]]:
    """What each of SmolLM2's layers reads of the text (its first `cap` tokens), with the tokens' readable
    pieces: one forward pass per text, shared by every session and every layer. A text of fewer than two tokens
    has no pair to turn, and is not run: no inputs."""
    chat = loaders.get_chat_model()
    tokens = readable.text_tokens(chat, study_text, cap)
    if len(tokens.ids) < 2:
        return (), tokens.pieces
    model = chat.loaded.model
    ids = torch.tensor([tokens.ids], dtype=torch.long, device=next(model.parameters()).device)
    return rotary.layer_inputs(model, ids), tokens.pieces


def rotary_token_cap() -> int:
    """Tokens of the text SmolLM2 reads here, as in lesson 9 (`loaders.decoder_token_cap`)."""
    return loaders.decoder_token_cap(loaders.get_chat_model().loaded.model_as(DecoderOnlyLM))


@st.cache_resource(max_entries=16, show_spinner=False)
def rotary_study(study_text: str, cap: int, layer: int) -> tuple[rotary.QueriesAndKeys | None, tuple[str, ...]]:
    """One layer's unrotated queries and keys of the text (None for a text of fewer than two tokens), with the
    tokens' readable pieces: another layer of the same text projects that layer's input alone, without running
    the model again."""
    inputs, pieces = rotary_layer_inputs(study_text, cap)
    if not inputs:
        return None, pieces
    return rotary.queries_and_keys(loaders.get_chat_model().loaded.model, inputs[layer], layer), pieces


@st.cache_resource(max_entries=32, show_spinner=False)
def rotary_arrows_figure(
    study_text: str, layer: int, head: int, token: int, pairs: tuple[int, ...], _found: rotary.QueriesAndKeys
):
    arrows = {pair: rotary.pair_arrows(_found, head, token, pair, ROTARY_ARROW_POSITIONS) for pair in pairs}
    return turning_pairs(arrows, "One query's pairs, turned")


def show_rotary(encoding: Encoding) -> None:
    """RoPE: how fast each pair turns, one real query's pairs turned, and the score that keeps only distance."""
    st.markdown(text.ROTARY_INTRO)
    for formula in text.ROTARY_FORMULAS:
        st.latex(formula)
    config = SMOLLM2_135M
    st.markdown(text.ROTARY_SPEEDS.format(theta=config.rope_theta, head_width=config.head_width))
    charts.show(rotary_frequency_figure(config.head_width, config.rope_theta, encoding.width, encoding.base))
    if not hosting.current().language_model:
        st.info(text.ROTARY_OFF, icon=":material/info:")
        return
    layer_column, head_column = st.columns(2)
    layer = linked.slider("SmolLM2's layer", links.ROPE_LAYER, 0, config.num_layers - 1, 3, container=layer_column)
    head = linked.slider("Query head", links.ROPE_HEAD, 0, config.num_heads - 1, 0, container=head_column)
    try:
        found, pieces = rotary_study(encoding.text, rotary_token_cap(), layer)
    except ModelLoadError as problem:
        st.error(text.ROTARY_LOAD_FAILED.format(problem=problem), icon=":material/error:")
        return
    if found is None:
        st.info(text.ROTARY_NO_TEXT, icon=":material/edit:")
        return
    positions = range(len(pieces))
    query_column, key_column = st.columns(2)
    query_token = linked.selectbox(
        "Follow the query of",
        links.ROPE_QUERY,
        positions,
        len(pieces) - 1,
        parse=int,
        format_func=lambda position: token_label(position, pieces[position]),
        container=query_column,
    )
    key_token = linked.selectbox(
        "scored against the key of",
        links.ROPE_KEY,
        positions,
        max(0, len(pieces) - 3),
        parse=int,
        format_func=lambda position: token_label(position, pieces[position]),
        container=key_column,
    )
    st.markdown(text.ROTARY_ARROWS.format(last=ROTARY_ARROW_POSITIONS - 1))
    width = found.head_width
    shown_pairs = (0, width // 8, width // 2 - 1)  # the fastest, one in between, the slowest
    charts.show(rotary_arrows_figure(encoding.text, layer, head, query_token, shown_pairs, found))
    frequencies = rotary.rotary_frequencies(width, found.theta)
    st.caption(text.arrows_caption({pair: float(frequencies[pair]) for pair in shown_pairs}))
    st.markdown(text.ROTARY_DISTANCE)
    study = rotary.shift_study(found, head, query_token, key_token, ROTARY_SHIFTS)
    query_name, key_name = token_label(query_token, pieces[query_token]), token_label(key_token, pieces[key_token])
    charts.show(
        scores_under_shifts(
            study.shifts,
            study.same_distance,
            study.other_distance,
            study.own_score,
            "One query with one key, moved along",
            f"query {safe_label(query_name)}, key {safe_label(key_name)}<br>layer {layer}, head {head}",
        )
    )
    named = visible(query_name), visible(key_name)  # a token may be markdown ("**", "$"): shown as written
    st.caption(text.rotary_check(study.own_score, study.largest_change, *named, len(study.shifts)))


SECTIONS = {  # the tabs, in order: only the open one runs
    links.CURVES: show_curves,
    links.TABLE: show_tables,
    links.SIMILARITY: show_similarity,
    links.PROPERTIES: show_properties,
    links.ROTARY: show_rotary,
}
