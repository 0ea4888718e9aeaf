"""Positional encodings: the sinusoidal table of the original paper, its promised properties measured,
and the table a real BERT-family model learned instead."""

import math

import pandas as pd
import streamlit as st

from anatomy.analysis import tokenize
from anatomy.position_analysis import (
    MAX_WIDTH,
    MIN_WIDTH,
    describe_encoding,
    encoding_settings_problem,
    learned_position_table,
    offset_profile,
    rebuilds_identically,
    similarity_matrix,
    slowest_period,
    study_table,
)
from anatomy.positional import sinusoidal_positional_encoding
from anatomy.ui import sidebar, state, widgets
from anatomy.viz.common import safe_label
from anatomy.viz.positional import (
    colour_limit,
    dimension_curves,
    encoding_heatmap,
    similarity_by_offset,
    similarity_heatmap,
    similarity_to_position,
)

DEFAULT_BASE = 10_000.0
MIN_SHOWN, MAX_SHOWN, DEFAULT_SHOWN = 8, 512, 64
MAX_CURVES = 8
MEASURES = {"cosine": "cosine", "dot": "dot product"}


# ---- cached pieces -------------------------------------------------------------------------------
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
    label = MEASURES[measure]
    titles = {"sinusoidal": "Sinusoidal", "learned": f"Learned by {safe_label(model_name)}"}
    return {
        "tables": {
            name: encoding_heatmap(study.table, f"{titles[name]}: {len(study.table)} positions × "
                                                f"{study.table.shape[1]} dimensions")
            for name, study in _studies.items()
        },
        "similarities": {
            name: similarity_heatmap(study.similarities, label, f"{titles[name]}: {label} of every pair",
                                     centre_on_zero=measure == "cosine")
            for name, study in _studies.items()
        },
        "by_offset": similarity_by_offset(
            {name: (study.by_offset.mean, study.by_offset.lowest, study.by_offset.highest)
             for name, study in _studies.items()},
            label, f"{label.capitalize()} against distance",
        ),
    }


def similarities_with(position, studied):
    """Row p of each table's similarity matrix (a learned table shorter than p has none)."""
    return {name: study.similarities[position] for name, study in studied.items() if position < len(study.table)}


@st.cache_resource(max_entries=32, show_spinner=False)
def row_figure(model_key, shown, width, base, measure, position, _studies):
    label = MEASURES[measure]
    return similarity_to_position(similarities_with(position, _studies), position, label,
                                  f"{label.capitalize()} of position {position} with every position")


@st.cache_resource(max_entries=32, show_spinner=False)
def curves_figure(shown, width, base, dimensions, positions_in_text):
    encoding = sinusoidal_positional_encoding(shown, width, base)
    return dimension_curves(encoding, list(dimensions), f"Sinusoidal encoding, d = {width}, base = {base:g}",
                            positions_in_text=positions_in_text)


# ---- URL state -----------------------------------------------------------------------------------

def restore_from_link(key, default, parse, valid, requirement):
    """`state.restore`, plus a visible note when the link carried a value this page cannot use."""
    from_link = key not in st.session_state and key in st.query_params
    value = state.restore(key, default, parse=parse, valid=valid)
    if from_link and not _usable(st.query_params[key], parse, valid):
        st.warning(f"The link's {requirement}, so the default {_readable(default)} is used.",
                   icon=":material/link_off:")
    return value


def _usable(raw, parse, valid):
    try:
        return valid(parse(raw))
    except (TypeError, ValueError):
        return False


def _readable(value):
    if isinstance(value, float):
        return f"{value:g}"
    if isinstance(value, list):
        return ", ".join(map(str, value))
    return str(value)


def parse_dimensions(raw):
    return [int(part) for part in raw.split(",") if part.strip()]


def default_dimensions(width):
    """The first sine/cosine pair, then the sines at about d/8, d/4 and d/2: fast, middling and slow waves."""
    picks = {0, 1} | {2 * (width // (2 * share)) for share in (8, 4, 2)}
    return sorted(index for index in picks if index < width)


def offer_table_download(table, file_name):
    """The full table as CSV, written only when the button is pressed (a 512 × 1024 table takes seconds)."""
    st.download_button(
        "Download this table (CSV)", lambda: pd.DataFrame(table.numpy()).rename_axis("position").to_csv(),
        file_name=file_name, mime="text/csv", icon=":material/download:", key=f"download-{file_name}",
    )


# ---- the page ------------------------------------------------------------------------------------
context = sidebar.current()
pretrained = context.pretrained
model_name = pretrained.name.split("/")[-1]
learned_table = learned_position_table(pretrained.model)

st.title("Positional encodings")
st.markdown(
    """
Attention compares every token with every other token, and nothing in that comparison says *where* a
token sits: shuffle the input and each output is shuffled the same way, value for value. So before the
first layer the model adds a **position vector** to each token's embedding: one vector for position 0,
another for position 1, and so on. "Attention Is All You Need" builds those vectors from sines and cosines.
BERT-family models, this one included, do not: they **learn** a table of position vectors during
training, like any other weight.
"""
)
positions_in_text = 0
if context.has_text and pretrained.tokenizer is not None:
    tokenized = tokenize(pretrained.tokenizer, context.text, max_tokens=pretrained.config.max_positions)
    widgets.truncation_notice(tokenized)
    positions_in_text = len(tokenized)
    st.caption(f"The text in the sidebar makes {positions_in_text} tokens, so it uses positions 0 to "
               f"{positions_in_text - 1}; the curves below shade them.")

default_width = pretrained.config.width if MIN_WIDTH <= pretrained.config.width <= MAX_WIDTH else 128
restore_from_link("pos_d", default_width, int, lambda v: MIN_WIDTH <= v <= MAX_WIDTH,
                  f"width d must be a whole number from {MIN_WIDTH} to {MAX_WIDTH}")
restore_from_link("pos_base", DEFAULT_BASE, float, lambda v: math.isfinite(v) and v > 1,
                  "base must be a number greater than 1")
restore_from_link("pos_n", DEFAULT_SHOWN, int, lambda v: MIN_SHOWN <= v <= MAX_SHOWN,
                  f"number of positions must be from {MIN_SHOWN} to {MAX_SHOWN}")
width_column, base_column, shown_column = st.columns([1, 1, 2])
width_column.number_input(
    "Model width d", key="pos_d", step=2,
    help=f"How many numbers encode one position ({MIN_WIDTH} to {MAX_WIDTH}); this model's width is "
         f"{pretrained.config.width}.",
)
base_column.number_input(
    "Base", key="pos_base", step=1000.0, format="%g",
    help="Sets the slowest wave: the last pair turns about once every 2π·base positions. The paper uses 10000.",
)
shown_column.slider("Positions shown", MIN_SHOWN, MAX_SHOWN, key="pos_n",
                    help="How many positions (rows of each table) the charts use.")
width, base, shown = st.session_state["pos_d"], st.session_state["pos_base"], st.session_state["pos_n"]
problem = encoding_settings_problem(width, base)
if problem:
    st.error(f"{problem} Change it above to see the encoding.", icon=":material/error:")
    st.stop()
state.publish(pos_d=width, pos_base=f"{base:g}", pos_n=shown)

# Only the open tab runs (the tab is bound to the URL): a chart in a hidden tab would still be sent and drawn
# before the page counts as painted.
curves_tab, table_tab, similarity_tab, properties_tab = st.tabs(
    ["Formula and curves", "The whole table", "Similarity between positions", "Bounded, unique, deterministic"],
    key="pos_tab", bind="query-params",
)

if curves_tab.open:
    with curves_tab:
        st.markdown("Component $i$ of the vector for position $t$, in a model of width $d$:")
        st.latex(
            r"p_i(t) = \begin{cases} \sin(\omega_i\, t) & i \text{ even} \\ \cos(\omega_{i-1}\, t) & i \text{ odd}"
            r"\end{cases} \qquad \omega_k = \text{base}^{-k/d}"
        )
        st.markdown(
            f"""
Dimensions come in pairs that share one frequency: a sine at each even $i$ and a cosine at the odd $i$
just after it. The first pair turns fastest, one full cycle every $2\\pi \\approx 6.3$ positions; each
following pair turns slower, and the last one needs about {slowest_period(width, base):,.0f} positions for a
cycle (with d = {width} and base {base:g}). Read one position as a row of clock hands turning at different
speeds: the fast hands tell neighbours apart, the slow ones tell the start of a long text from its end.
"""
        )
        restore_from_link(
            "pos_dims", default_dimensions(width), parse_dimensions,
            lambda v: len(v) <= MAX_CURVES and all(0 <= index < width for index in v),
            f"dimensions must be at most {MAX_CURVES} whole numbers below d, separated by commas",
        )
        st.session_state["pos_dims"] = [index for index in st.session_state["pos_dims"] if index < width]
        st.multiselect("Dimensions i to draw", list(range(width)), key="pos_dims", max_selections=MAX_CURVES,
                       format_func=lambda index: f"{index} ({'sin' if index % 2 == 0 else 'cos'})")
        dimensions = tuple(st.session_state["pos_dims"])
        state.publish(pos_dims=",".join(map(str, dimensions)))
        if dimensions:
            st.plotly_chart(curves_figure(shown, width, base, dimensions, positions_in_text), width="stretch")
        else:
            st.info("Pick at least one dimension to draw its curve.", icon=":material/show_chart:")
        widgets.show_source(sinusoidal_positional_encoding)

# Every tab below reads the same study of both tables; the measure is chosen in the similarity tab.
restore_from_link("pos_measure", "cosine", str, lambda v: v in MEASURES, "measure must be cosine or dot")
restore_from_link("pos_p", shown // 2, int, lambda v: 0 <= v < shown,
                  f"position p must be a whole number from 0 to {shown - 1}")
st.session_state["pos_p"] = min(st.session_state["pos_p"], shown - 1)
measure = st.session_state["pos_measure"]


def both_tables():
    """The study of the sinusoidal and the learned table, run (once per settings) by the tab that shows it."""
    return studies(pretrained.name, shown, width, base, measure, learned_table)


def figures_of(studied):
    return study_figures(pretrained.name, shown, width, base, measure, model_name, studied)


if table_tab.open:
    studied = both_tables()
    figures = figures_of(studied)
    with table_tab:
        st.markdown(
            """
Each row is one position's vector, each column one dimension. In the sinusoidal table the left columns
flicker from row to row (fast waves) and the right ones barely change (slow waves): that spread of speeds
is what makes every row different. Beside it, the table this model **learned**. Nothing forces it to look
like a sinusoid, and it does not: BERT-family models treat position vectors as weights and train them.
"""
        )
        for column, (name, study) in zip(st.columns(2), studied.items()):
            with column:
                st.plotly_chart(figures["tables"][name], width="stretch")
                offer_table_download(study.table, f"{name}_positions.csv")
        if learned_table is None:
            st.info("This model adds sinusoidal positions, so it has no learned table to show.")
        else:
            learned = studied["learned"]
            st.caption(
                f"The learned table is `model.embeddings.position.weight`, {learned_table.shape[0]} rows of "
                f"{learned_table.shape[1]}: the model cannot place a token past position "
                f"{learned_table.shape[0] - 1}, where a sinusoid would simply keep turning. Its colours saturate at "
                f"±{colour_limit(learned.table):.3f} (99% of its values are smaller), although a few reach "
                f"{learned.properties.largest_magnitude:.2f}."
            )

if similarity_tab.open:
    studied = both_tables()
    figures = figures_of(studied)
    with similarity_tab:
        st.markdown(
            "How alike are the vectors of positions $p$ and $q$? For the sinusoidal table there is a closed form: "
            "each sine/cosine pair adds $\\sin\\omega p \\sin\\omega q + \\cos\\omega p \\cos\\omega q = "
            "\\cos(\\omega(p - q))$, so"
        )
        st.latex(r"P(p)\cdot P(q) = \sum_{k\ \text{even}} \cos\big(\omega_k\,(p - q)\big)")
        st.markdown(
            "depends on the distance $p - q$ alone, not on where the pair sits. Every sinusoidal row has the same "
            "length, so the cosine tells the same story. The learned table only roughly does: nearby positions "
            "are alike, but the pattern drifts along the text."
        )
        position_column, measure_column = st.columns([3, 1])
        position_column.slider("Position p", 0, shown - 1, key="pos_p")
        measure_column.radio("Measure", list(MEASURES), key="pos_measure", format_func=MEASURES.get, horizontal=True)
        position = st.session_state["pos_p"]
        state.publish(pos_p=position, pos_measure=measure)
        if measure == "dot" and "learned" in studied:
            st.caption("The two tables' dot products live on different scales: the cosine compares their shapes.")
        st.plotly_chart(row_figure(pretrained.name, shown, width, base, measure, position, studied), width="stretch")
        widgets.download_csv(
            pd.DataFrame({name: pd.Series(row.numpy()) for name, row in similarities_with(position, studied).items()})
            .rename_axis("q"),
            f"{measure}_with_position_{position}.csv", label="Download these similarities (CSV)",
        )
        for column, name in zip(st.columns(len(studied)), studied):
            column.plotly_chart(figures["similarities"][name], width="stretch")
        st.markdown(
            "Grouping all pairs by their distance $q - p$ makes the claim measurable: where similarity depends on "
            "the distance only, all pairs at one distance agree and the band shrinks to a line."
        )
        st.plotly_chart(figures["by_offset"], width="stretch")
        for column, (name, study) in zip(st.columns(len(studied)), studied.items()):
            column.metric(f"{name.capitalize()}: widest band", f"{study.by_offset.largest_spread:.2e}",
                          help="The largest gap between two pairs of positions the same distance apart.")
        widgets.show_source(similarity_matrix, offset_profile)

if properties_tab.open:
    studied = both_tables()
    with properties_tab:
        st.markdown(
            """
The paper's encoding promises three things. Here they are measured on the tables above, not taken on trust:

* **bounded**: sines and cosines never leave $[-1, 1]$, so a position vector cannot drown the token
  embedding it is added to, however long the text;
* **unique**: no two positions share a vector, so the smallest distance between two rows is above 0;
* **deterministic**: nothing is random or learned, so building the table twice gives the same bits.

A learned table promises none of this: its values are whatever training left, its rows differ only
because training made them differ, and it is fixed only in the sense that the weights are stored.
"""
        )
        repeatable = rebuilds_identically(lambda: sinusoidal_positional_encoding(shown, width, base))
        bounded_column, unique_column, repeat_column = st.columns(3)
        for name, study in studied.items():
            found = study.properties  # closest_pair is never None here: at least MIN_SHOWN positions
            bounded_column.metric(f"{name.capitalize()}: largest |value|", f"{found.largest_magnitude:.6f}")
            unique_column.metric(f"{name.capitalize()}: smallest distance between two rows",
                                 f"{found.closest_distance:.6f}",
                                 help=f"Between positions {found.closest_pair[0]} and {found.closest_pair[1]}.")
        repeat_column.metric("Sinusoidal: built twice", "identical" if repeatable else "different")
        properties = pd.DataFrame(
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
        st.dataframe(properties, width="stretch")
        widgets.download_csv(properties, "position_table_properties.csv")
        widgets.show_source(describe_encoding, rebuilds_identically)
