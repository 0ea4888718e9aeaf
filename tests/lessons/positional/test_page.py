"""The positional-encoding page, driven headlessly: what it draws equals what `anatomy` computes, every
control and link changes it, and bad numbers or hostile text give a message, never a crash."""

from __future__ import annotations

import re

import numpy as np
import pytest
import torch

from anatomy.positional import sinusoidal_positional_encoding
from harness.apptest import HOSTILE_TEXTS, all_markdown, assert_clean, numbers, open_page, plotly_figures, show_tab
from lessons.common.runs import tokenize
from lessons.common.ui.sidebar import DEFAULT_TEXT
from lessons.positional import links
from lessons.positional.analysis import describe_encoding, offset_profile, similarity_matrix
from lessons.positional.links import CURVES, PROPERTIES, SIMILARITY, TABLE

PAGE = "lesson_pages/positional.py"


def open_tab(tab: str, query: dict[str, str] | None = None, text: str | None = None):
    return open_page(PAGE, text=text, query={links.TAB: tab, **(query or {})})


def title_of(figure: dict) -> str:
    """A chart's title and subtitle as a learner reads them: lines joined by spaces, markup left out."""
    title = figure["layout"]["title"]
    text = " ".join([title["text"], *([title["subtitle"]["text"]] if "subtitle" in title else [])])
    return re.sub(r"<[^>]+>", "", text.replace("<br>", " "))


def figure_titled(app, words: str) -> dict:
    """The one chart on the page whose title contains `words`."""
    found = [figure for figure in plotly_figures(app) if words in title_of(figure)]
    assert len(found) == 1, [title_of(figure) for figure in plotly_figures(app)]
    return found[0]


def table_values(app, table: str) -> np.ndarray:
    """The values drawn in the heatmap of the "Sinusoidal" or "Learned" position table."""
    titles = [(figure, title_of(figure)) for figure in plotly_figures(app)]
    tables = [figure for figure, title in titles if title.startswith(table) and "positions ×" in title]
    assert len(tables) == 1
    return numbers(tables[0]["data"][0]["z"])


def metrics_by_table(app) -> dict[str, dict[str, str]]:
    """The measurements of the properties tab, per table: each column is headed by its table's name."""
    found = {}
    for column in app.columns:
        heads = [item.value for item in column.markdown if item.value.startswith("**The ")]
        if heads and column.metric:
            found[heads[0].strip("*")] = {metric.label: metric.value for metric in column.metric}
    return found


def learned_weight(embedded, positions: int) -> np.ndarray:
    return embedded.model.embeddings.position.weight[:positions].numpy()


def test_the_page_opens_on_the_formula_and_its_curves_alone():
    app = open_page(PAGE)
    assert_clean(app)
    assert app.session_state[links.TAB] == CURVES
    assert any(r"\omega_k = \text{base}^{-k/d}" in formula.value for formula in app.latex)
    assert [figure["layout"]["title"]["text"] for figure in plotly_figures(app)] == [
        "Sinusoidal encoding, d = 384, base = 10000"
    ]
    assert open_tab("no such tab").session_state[links.TAB] == CURVES


@pytest.mark.slow
@pytest.mark.parametrize("tab, charts", [(CURVES, 1), (TABLE, 2), (SIMILARITY, 4), (PROPERTIES, 0)])
def test_only_the_open_tab_is_drawn(tab, charts):
    app = open_tab(tab)
    assert_clean(app)
    assert len(plotly_figures(app)) == charts
    assert (len(app.dataframe) == 1) == (tab == PROPERTIES)


def test_the_whole_table_tab_draws_the_paper_encoding_beside_the_models_learned_table(embedded):
    app = open_tab(TABLE)
    assert_clean(app)
    assert app.number_input(key=links.WIDTH).value == 384  # the model's own width
    assert app.number_input(key=links.BASE).value == 10_000.0
    assert app.slider(key=links.SHOWN).value == 64
    sinusoidal = sinusoidal_positional_encoding(64, 384)
    np.testing.assert_array_equal(table_values(app, "Sinusoidal 64 positions × 384 "), sinusoidal.numpy())
    np.testing.assert_array_equal(table_values(app, "Learned"), learned_weight(embedded, 64))
    assert "BERT-family models" in all_markdown(app) and "**learn**" in all_markdown(app)


def test_default_curves_follow_the_encodings_columns_and_shade_the_texts_positions(embedded):
    app = open_page(PAGE)
    dimensions = app.multiselect(key=links.DIMENSIONS).value
    assert dimensions == [0, 1, 48, 96, 192]  # the first pair, then d/8, d/4, d/2
    curves = figure_titled(app, "Sinusoidal encoding, d = 384, base = 10000")
    encoding = sinusoidal_positional_encoding(64, 384).numpy()
    for trace, dimension in zip(curves["data"], dimensions, strict=True):
        np.testing.assert_array_equal(numbers(trace["y"]), encoding[:, dimension])
    tokens = len(tokenize(embedded.tokenizer, DEFAULT_TEXT))
    assert tokens == 7  # [CLS] time flies like an arrow [SEP]
    assert curves["layout"]["shapes"][0]["x1"] == tokens - 0.5
    assert any(f"makes {tokens} tokens" in caption.value for caption in app.caption)


def test_similarity_and_properties_shown_equal_what_anatomy_computes(embedded):
    app = open_tab(SIMILARITY)
    tables = {
        "sinusoidal": sinusoidal_positional_encoding(64, 384),
        "learned": torch.tensor(learned_weight(embedded, 64)),
    }
    assert app.slider(key=links.POSITION).value == 32 and app.radio(key=links.MEASURE).value == "cosine"
    row = figure_titled(app, "Cosine of position 32 with every position")
    for trace, (name, table) in zip(row["data"], tables.items(), strict=True):
        assert trace["name"] == name
        np.testing.assert_allclose(numbers(trace["y"]), similarity_matrix(table)[32].numpy(), rtol=1e-5, atol=1e-6)
    properties = show_tab(app, links.TAB, PROPERTIES).dataframe[0].value
    for name, table in tables.items():
        expected = describe_encoding(table)
        assert properties.loc[name, "largest |value|"] == pytest.approx(expected.largest_magnitude)
        assert properties.loc[name, "smallest distance"] == pytest.approx(expected.closest_distance)
        shown_pair = (properties.loc[name, "closest pair p"], properties.loc[name, "closest pair q"])
        assert shown_pair == expected.closest_pair
        spread = offset_profile(similarity_matrix(table)).largest_spread
        assert properties.loc[name, "widest band at one distance"] == pytest.approx(spread, abs=1e-12)
    assert properties.loc["sinusoidal", "largest |value|"] == 1.0
    assert properties.loc["sinusoidal", "widest band at one distance"] < 1e-6  # distance alone decides
    assert properties.loc["learned", "widest band at one distance"] > 0.1  # not for the learned one
    metrics = metrics_by_table(app)
    assert metrics["The sinusoidal table"]["largest |value|"] == "1.000000"
    assert metrics["The sinusoidal table"]["built twice"] == "identical"
    learned = describe_encoding(tables["learned"])
    assert metrics["The learned table"]["largest |value|"] == f"{learned.largest_magnitude:.6f}"
    assert metrics["The learned table"]["smallest distance between two rows"] == f"{learned.closest_distance:.6f}"


def test_each_tables_measurements_stand_in_its_own_column_under_its_name_with_labels_that_fit_it():
    app = open_tab(PROPERTIES)
    assert_clean(app)
    metrics = metrics_by_table(app)
    assert list(metrics) == ["The sinusoidal table", "The learned table"]
    measured = ["largest |value|", "smallest distance between two rows"]
    assert list(metrics["The sinusoidal table"]) == [*measured, "built twice"]
    assert list(metrics["The learned table"]) == measured
    # Half of a desktop zoomed to 150 % holds about 36 characters of a metric's label beside its help icon.
    assert max(len(metric.label) for metric in app.metric) <= 36


def test_width_base_positions_and_dimensions_redraw_the_encoding(embedded):
    app = open_page(PAGE)
    app.number_input(key=links.WIDTH).set_value(16)
    app.number_input(key=links.BASE).set_value(100.0)
    app.run()
    assert_clean(app)
    assert app.multiselect(key=links.DIMENSIONS).value == [0, 1]  # 48, 96 and 192 no longer exist
    assert (app.query_params[links.WIDTH], app.query_params[links.BASE]) == ("16", "100")
    show_tab(app, links.TAB, TABLE)
    np.testing.assert_array_equal(
        table_values(app, "Sinusoidal 64 positions × 16 "), sinusoidal_positional_encoding(64, 16, 100.0).numpy()
    )

    app.slider(key=links.SHOWN).set_value(16).run()
    np.testing.assert_array_equal(table_values(app, "Learned"), learned_weight(embedded, 16))
    assert show_tab(app, links.TAB, SIMILARITY).slider(key=links.POSITION).value == 15  # p = 32 is gone: the last

    show_tab(app, links.TAB, CURVES).multiselect(key=links.DIMENSIONS).set_value([3, 7]).run()
    curves = figure_titled(app, "Sinusoidal encoding, d = 16, base = 100")
    assert [trace["name"] for trace in curves["data"]] == ["i = 3 (cos)", "i = 7 (cos)"]
    np.testing.assert_array_equal(
        numbers(curves["data"][1]["y"]), sinusoidal_positional_encoding(16, 16, 100.0)[:, 7].numpy()
    )
    assert app.query_params[links.DIMENSIONS] == "3,7" and app.query_params[links.SHOWN] == "16"


def test_position_and_measure_redraw_the_similarity():
    app = open_tab(SIMILARITY)
    app.slider(key=links.POSITION).set_value(5)
    app.radio(key=links.MEASURE).set_value("dot")
    app.run()
    assert_clean(app)
    row = figure_titled(app, "Dot product of position 5 with every position")
    dots = similarity_matrix(sinusoidal_positional_encoding(64, 384), "dot")
    np.testing.assert_allclose(numbers(row["data"][0]["y"]), dots[5].numpy(), rtol=1e-5)
    assert numbers(row["data"][0]["y"])[5] == pytest.approx(192.0)  # |P(t)|² = d/2
    assert row["layout"]["shapes"][0]["x0"] == 5
    assert "zmin" not in figure_titled(app, "Sinusoidal dot product of every pair")["data"][0]
    assert (app.query_params[links.POSITION], app.query_params[links.MEASURE]) == ("5", "dot")


def test_a_link_restores_every_choice():
    query = {
        links.WIDTH: "8",
        links.BASE: "100",
        links.SHOWN: "16",
        links.POSITION: "3",
        links.MEASURE: "dot",
        links.DIMENSIONS: "0,5",
    }
    app = open_page(PAGE, query=query)
    assert_clean(app)
    assert not app.warning
    assert app.number_input(key=links.WIDTH).value == 8 and app.number_input(key=links.BASE).value == 100.0
    assert app.slider(key=links.SHOWN).value == 16 and app.multiselect(key=links.DIMENSIONS).value == [0, 5]
    encoding = sinusoidal_positional_encoding(16, 8, 100.0)
    np.testing.assert_array_equal(
        table_values(open_tab(TABLE, query), "Sinusoidal 16 positions × 8 "), encoding.numpy()
    )
    app = open_tab(SIMILARITY, query)
    assert app.slider(key=links.POSITION).value == 3 and app.radio(key=links.MEASURE).value == "dot"
    row = figure_titled(app, "Dot product of position 3")
    np.testing.assert_allclose(numbers(row["data"][0]["y"]), similarity_matrix(encoding, "dot")[3].numpy(), rtol=1e-5)


@pytest.mark.slow
@pytest.mark.parametrize(
    "query",
    [
        {
            links.WIDTH: "abc",
            links.BASE: "nan",
            links.SHOWN: "9999",
            links.POSITION: "99",
            links.MEASURE: "manhattan",
            links.DIMENSIONS: "1,x",
        },
        {
            links.WIDTH: "1025",
            links.BASE: "1",
            links.SHOWN: "7",
            links.POSITION: "-1",
            links.MEASURE: "",
            links.DIMENSIONS: "0,999",
        },
    ],
    ids=["malformed", "out-of-range"],
)
def test_unusable_link_values_fall_back_to_the_defaults_with_a_note(query):
    app = open_page(PAGE, query=query)
    assert_clean(app)
    assert len(app.warning) == 6 and all("default" in warning.value for warning in app.warning)
    assert app.number_input(key=links.WIDTH).value == 384 and app.number_input(key=links.BASE).value == 10_000.0
    assert app.slider(key=links.SHOWN).value == 64
    app = open_tab(SIMILARITY, query)
    assert app.slider(key=links.POSITION).value == 32 and app.radio(key=links.MEASURE).value == "cosine"
    np.testing.assert_array_equal(
        table_values(open_tab(TABLE, query), "Sinusoidal 64 positions × 384 "),
        sinusoidal_positional_encoding(64, 384).numpy(),
    )


def test_bad_numbers_typed_in_are_explained_and_kept_until_fixed():
    app = open_page(PAGE)
    for base, complaint in [(1.0, "greater than 1 (got 1)"), (-3.0, "greater than 1 (got -3)")]:
        app.number_input(key=links.BASE).set_value(base).run()
        assert_clean(app)
        assert complaint in app.error[0].value
        assert app.number_input(key=links.BASE).value == base  # what was typed stays
        assert plotly_figures(app) == []
        assert app.query_params[links.BASE] == "10000"  # a link never carries a bad value
    app.number_input(key=links.BASE).set_value(10_000.0)
    for width in (0, 2000, 63):
        app.number_input(key=links.WIDTH).set_value(width).run()
        assert_clean(app)
        assert "an even whole number from 2 to 1024" in app.error[0].value and f"(got {width})" in app.error[0].value
        assert app.number_input(key=links.WIDTH).value == width  # what was typed stays
    app.number_input(key=links.WIDTH).set_value(2).run()
    assert_clean(app)
    assert not app.error
    np.testing.assert_array_equal(
        table_values(show_tab(app, links.TAB, TABLE), "Sinusoidal 64 positions × 2 "),
        sinusoidal_positional_encoding(64, 2).numpy(),
    )


@pytest.mark.slow
@pytest.mark.parametrize("name", list(HOSTILE_TEXTS))
def test_hostile_text_only_changes_the_token_count(name, embedded):
    text = HOSTILE_TEXTS[name]
    app = open_page(PAGE, text=text)
    assert_clean(app)
    markdown = all_markdown(app)
    counts = [caption.value for caption in app.caption if "tokens, so it uses" in caption.value]
    if text.strip():
        assert text not in markdown
        assert counts == [
            f"The text in the sidebar makes {len(tokenize(embedded.tokenizer, text))} tokens, "
            f"so it uses positions 0 to {len(tokenize(embedded.tokenizer, text)) - 1}; "
            "the curves below shade them."
        ]
    else:
        assert counts == []  # no text, no positions used
    assert len(plotly_figures(app)) == 1
    assert len(plotly_figures(show_tab(app, links.TAB, SIMILARITY))) == 4
