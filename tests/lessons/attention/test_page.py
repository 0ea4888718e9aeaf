"""The attention page, driven headlessly: every number it shows is the number `anatomy` computes."""

import json

import numpy as np
import pytest

from harness.apptest import HOSTILE_TEXTS, all_markdown, assert_clean, decoded, open_expander, open_page, plotly_figures
from lessons.attention import links, text
from lessons.attention.steps import embedding_self_attention
from lessons.common import examples as toy
from lessons.common.runs import run_encoder
from lessons.common.ui import widgets
from lessons.common.windows import FOCUS_WINDOW

PAGE = "lesson_pages/attention.py"
TEXT = "the cat sat on the mat"


def table(app, name: str) -> np.ndarray:
    """The numbers of the table whose corner cell (index name) is `name`."""
    frames = [frame.value for frame in app.dataframe if frame.value.index.name == name]
    assert len(frames) == 1, [frame.value.index.name for frame in app.dataframe]
    return frames[0].to_numpy(dtype=float)


def figure_trace(app, title_or_name: str) -> dict:
    """The first trace whose figure title or trace name is `title_or_name`, its arrays decoded."""
    for figure in plotly_figures(app):
        title = (figure["layout"].get("title") or {}).get("text")
        for trace in figure["data"]:
            if title_or_name in (title, trace.get("name")):
                return {key: decoded(value) for key, value in trace.items()}
    raise AssertionError(f"no figure {title_or_name!r}")


def all_traces(app) -> list[dict]:
    return [
        {key: decoded(value) for key, value in trace.items()}
        for figure in plotly_figures(app)
        for trace in figure["data"]
    ]


def edit(app, matrix: str, edits: dict[int, dict[str, str]]):
    """Type into the toy editor of `matrix` the way the browser reports edits (row → column → text)."""
    (editor,) = [element for element in app.data_editor if element.key.endswith(f"_{matrix}")]
    app.session_state[editor.key] = {"edited_rows": edits, "added_rows": [], "deleted_rows": []}
    return app.run()


def metric(app, label_start: str) -> float:
    (found,) = [item for item in app.metric if item.label.startswith(label_start)]
    return float(found.value)


@pytest.fixture(scope="module")
def traced(served):
    return run_encoder(served.model, served.tokenizer, TEXT)


def test_the_toy_example_shows_its_numbers_step_by_step():
    app = open_page(PAGE)
    assert_clean(app)
    assert app.segmented_control(key=links.SOURCE).value == "toy"
    assert app.select_slider(key=links.STEP).value == 1
    expected = toy.love_mathematics()
    assert np.array_equal(table(app, "Q"), expected.query.cpu().numpy())
    assert np.array_equal(table(app, "K"), expected.key.cpu().numpy())
    assert np.array_equal(table(app, "V"), expected.value.cpu().numpy())
    assert np.array_equal(figure_trace(app, "K")["z"], expected.key.cpu().numpy())
    for step, name, matrix in [
        (2, "QKᵀ (query ↓ key →)", expected.raw_scores),
        (3, "QKᵀ/√dₖ (query ↓ key →)", expected.scaled_scores),
        (4, "softmax weights (query ↓ key →)", expected.weights),
        (5, "output", expected.output),
    ]:
        app.select_slider(key=links.STEP).set_value(step).run()
        assert_clean(app)
        assert np.allclose(table(app, name), matrix.cpu().numpy(), rtol=1e-12), name
    assert np.allclose(figure_trace(app, "output = A V")["z"], expected.output.cpu().numpy(), rtol=1e-3)
    assert np.allclose(table(app, "weight × value, query 1")[:, 0], expected.weights[1].cpu().numpy())


def test_editing_a_cell_recomputes_every_step():
    app = open_page(PAGE, query={links.STEP: "4"})
    edit(app, "X", {0: {"0": "5"}})  # X[0][0]: 0 → 5
    assert_clean(app)
    edited_x = toy.LOVE_MATHEMATICS_X.clone()
    edited_x[0, 0] = 5
    expected = toy.single_head_steps(
        toy.LOVE_MATHEMATICS_TOKENS,
        edited_x,
        toy.LOVE_MATHEMATICS_W_Q,
        toy.LOVE_MATHEMATICS_W_K,
        toy.LOVE_MATHEMATICS_W_V,
    )
    weights = table(app, "softmax weights (query ↓ key →)")
    assert np.allclose(weights, expected.weights.cpu().numpy(), rtol=1e-12)
    assert not np.allclose(weights, toy.love_mathematics().weights.cpu().numpy())  # the edit really changed them
    app.select_slider(key=links.STEP).set_value(1).run()
    assert table(app, "Q")[0].tolist() == [13.0, 1.0, 5.0, 4.0]  # (5, 2, 0, 1) · W_Q


def test_bad_cells_are_named_inline_the_edits_stay_and_fixing_them_recomputes():
    app = open_page(PAGE)
    edit(app, "W_Q", {0: {"0": "abc"}, 1: {"1": ""}, 2: {"2": "1e999"}, 3: {"3": "nan"}})
    assert_clean(app)
    (message,) = [error.value for error in app.error]
    for cell in ("row 0, column 0", "row 1, column 1", "row 2, column 2", "row 3, column 3"):
        assert f"W\\_Q, {cell}" in message.replace("\\:", ":")
    assert app.session_state["att_toy_cells"]["W_Q"][0][0] == "abc"  # what was typed is kept
    assert not any(frame.value.index.name == "Q" for frame in app.dataframe)  # nothing computed from it
    edit(app, "W_Q", {0: {"0": "2"}, 1: {"1": "0"}, 2: {"2": "0"}, 3: {"3": "0"}})  # the starting values
    assert not app.error
    assert np.array_equal(table(app, "Q"), toy.love_mathematics().query.cpu().numpy())


def test_a_hostile_cell_is_quoted_escaped_and_reset_brings_the_seed_back():
    app = open_page(PAGE)
    edit(app, "X", {1: {"1": "<b>**x**</b>"}})
    assert_clean(app)
    assert "<b>" not in all_markdown(app) and "**x**" not in all_markdown(app)
    app.button(key="att_reset").click().run()
    assert not app.error
    assert app.session_state["att_toy_cells"]["X"][1] == ["1", "1", "2", "1"]
    assert np.array_equal(table(app, "Q"), toy.love_mathematics().query.cpu().numpy())


def test_edits_survive_a_visit_to_another_source():
    app = open_page(PAGE)
    edit(app, "X", {0: {"0": "5"}})
    app.segmented_control(key=links.SOURCE).set_value("apple").run()
    app.segmented_control(key=links.SOURCE).set_value("toy").run()
    assert_clean(app)
    assert table(app, "Q")[0].tolist() == [13.0, 1.0, 5.0, 4.0]


def test_the_apple_example_computes_six_and_a_half_and_shows_the_sum():
    app = open_page(PAGE, query={links.SOURCE: "apple", links.STEP: "5"})
    assert_clean(app)
    expected = toy.apple_iphones()
    assert np.allclose(table(app, "output"), expected.output.cpu().numpy())
    assert table(app, "output")[2].tolist() == pytest.approx([6.5, 14.5])
    text = all_markdown(app)
    assert "(6.5, 14.5)" in text
    assert "0.5 × 11 + 0.5 × 2 = 6.5" in text and "0.5 × 9 + 0.5 × 20 = 14.5" in text
    assert "notes" not in text.lower()  # no reference to material the learner was never given


def test_a_model_head_shows_the_traced_weights_of_the_chosen_layer_and_head(traced):
    app = open_page(PAGE, text=TEXT, query={links.SOURCE: "model", links.STEP: "4"})
    assert_clean(app)
    app.slider(key=links.LAYER).set_value(3).run()
    app.slider(key=links.HEAD).set_value(7).run()
    assert_clean(app)
    expected = traced.output.trace.layers[3].attention.weights[0, 7].double().cpu().numpy()
    assert np.allclose(table(app, "softmax weights (query ↓ key →)"), expected, rtol=1e-6, atol=1e-9)
    figure = figure_trace(app, "softmax weight")
    assert np.allclose(figure["z"], expected, rtol=1e-3, atol=1e-6)
    assert figure["y"][0] == "0: [CLS]"
    assert app.query_params[links.LAYER] == "3" and app.query_params[links.HEAD] == "7"


def test_the_weights_table_rounds_every_number_to_four_significant_digits():
    # Streamlit's default cut a tiny weight to its first digit: 8.967e-9 read 0.000000008. sprintf's %.4g, which
    # Streamlit applies in the browser, rounds to significant digits as Python's printf does.
    assert widgets.SIGNIFICANT_DIGITS % 8.967e-9 == "8.967e-09" and widgets.SIGNIFICANT_DIGITS % 0.5 == "0.5"
    app = open_page(PAGE, text=TEXT, query={links.SOURCE: "model", links.STEP: "4"})
    shown = next(frame for frame in app.dataframe if frame.value.index.name == "softmax weights (query ↓ key →)")
    columns = json.loads(shown.proto.columns)
    assert set(columns) == set(shown.value.columns)
    assert {column["type_config"]["format"] for column in columns.values()} == {widgets.SIGNIFICANT_DIGITS}


def test_the_neuron_view_sum_equals_the_raw_score(traced):
    app = open_page(PAGE, text=TEXT, query={links.SOURCE: "model", links.LAYER: "1", links.HEAD: "2"})
    app.selectbox(key=links.QUERY).set_value(2).run()
    app.selectbox(key=links.KEY).set_value(5).run()
    assert_clean(app)
    attention = traced.output.trace.layers[1].attention
    raw = float(attention.raw_scores[0, 2, 2, 5])
    assert metric(app, "Sum of the products") == pytest.approx(raw, rel=1e-5)
    assert metric(app, "QKᵀ[2, 5]") == pytest.approx(metric(app, "Sum of the products"), rel=1e-6)
    assert metric(app, "Weight after softmax") == pytest.approx(float(attention.weights[0, 2, 2, 5]), rel=1e-5)
    products = table(open_expander(app, "att_numbers_neuron"), "feature")[:, 2]
    assert products.sum() == pytest.approx(raw, rel=1e-5)
    assert np.allclose(figure_trace(app, "query × key")["y"], products, rtol=1e-3, atol=1e-4)


def test_embeddings_as_q_k_and_v_match_the_package(traced):
    app = open_page(PAGE, text=TEXT, query={links.SOURCE: "embeddings", links.STEP: "4"})
    assert_clean(app)
    expected = embedding_self_attention(traced.tokenized.tokens, traced.output.trace.embeddings.output[0])
    weights = table(app, "softmax weights (query ↓ key →)")
    assert np.allclose(weights, expected.weights.cpu().numpy(), rtol=1e-9)
    assert (weights.argmax(axis=1) == np.arange(len(weights))).all()  # each embedding agrees best with itself


def test_the_url_restores_source_layer_head_step_and_cell():
    query = {
        links.SOURCE: "model",
        links.LAYER: "2",
        links.HEAD: "5",
        links.STEP: "3",
        links.QUERY: "4",
        links.KEY: "1",
        links.ALL_STEPS: "true",
    }
    app = open_page(PAGE, text=TEXT, query=query)
    assert_clean(app)
    assert app.segmented_control(key=links.SOURCE).value == "model"
    assert app.slider(key=links.LAYER).value == 2 and app.slider(key=links.HEAD).value == 5
    assert app.select_slider(key=links.STEP).value == 3
    assert app.selectbox(key=links.QUERY).value == 4 and app.selectbox(key=links.KEY).value == 1
    assert app.toggle(key=links.ALL_STEPS).value is True
    headings = [sub.value for sub in app.subheader]
    assert headings[:5] == ["1. Q, K, V", "2. QKᵀ", "3. ÷ √dₖ", "4. softmax", "5. · V"]


def test_step_names_and_table_corners_write_d_k_with_a_subscript_not_a_raw_underscore():
    # Markdown leaves an underscore inside a word as it is: the heading read "3. ÷ √d_k".
    names = [*text.STEPS.values(), *text.SCORE_TABLES.values()]
    assert "÷ √dₖ" in names and not [name for name in names if "_" in name]


def test_invalid_url_values_fall_back_to_the_defaults():
    query = {links.SOURCE: "bogus", links.LAYER: "99", links.HEAD: "abc", links.STEP: "9", links.QUERY: "-3"}
    app = open_page(PAGE, text=TEXT, query=query)
    assert_clean(app)
    assert app.segmented_control(key=links.SOURCE).value == "toy"
    assert app.select_slider(key=links.STEP).value == 1
    app.segmented_control(key=links.SOURCE).set_value("model").run()
    assert_clean(app)
    assert app.slider(key=links.LAYER).value == 0 and app.slider(key=links.HEAD).value == 0


def test_next_and_back_move_through_the_steps():
    app = open_page(PAGE)
    assert app.button(key="att_back").disabled
    app.button(key="att_next").click().run()
    app.button(key="att_next").click().run()
    assert app.select_slider(key=links.STEP).value == 3
    assert "3. ÷ √dₖ" in [sub.value for sub in app.subheader]
    app.button(key="att_back").click().run()
    assert app.select_slider(key=links.STEP).value == 2


def test_a_long_text_is_shown_through_a_window_with_the_whole_pattern_one_click_away(served):
    text = " ".join(["word"] * 120)
    app = open_page(PAGE, text=text, query={links.SOURCE: "model", links.STEP: "4", links.WINDOW_START: "30"})
    assert_clean(app)
    tokens = len(run_encoder(served.model, served.tokenizer, text).tokenized)
    assert not app.dataframe  # 48 rows: the numbers wait in a closed expander
    weights = table(open_expander(app, "att_numbers_weights"), "softmax weights (query ↓ key →)")
    assert weights.shape == (FOCUS_WINDOW, FOCUS_WINDOW)
    assert figure_trace(app, "softmax weight")["y"][0] == "30: word"
    assert app.slider(key=links.WINDOW_START).max == tokens - FOCUS_WINDOW
    assert not any(np.shape(trace.get("z"))[:1] == (tokens,) for trace in all_traces(app))
    app.toggle(key=links.WHOLE_PATTERN).set_value(True).run()
    assert_clean(app)
    full = [trace for trace in all_traces(app) if np.shape(trace.get("z")) == (tokens, tokens)]
    assert len(full) == 1 and "texttemplate" not in full[0]


@pytest.mark.slow
@pytest.mark.parametrize("name", HOSTILE_TEXTS)
def test_hostile_texts_are_shown_literally_and_never_crash(name):
    text = HOSTILE_TEXTS[name]
    app = open_page(PAGE, text=text, query={links.SOURCE: "model", links.STEP: "2"})
    assert_clean(app)
    if text.strip():
        assert table(open_expander(app, "att_numbers_raw"), "QKᵀ (query ↓ key →)").shape[0] >= 3
        assert "Inside one score" in [sub.value for sub in app.subheader]
    else:
        assert "Type some text in the sidebar" in all_markdown(app)
    for fragment in (text.strip(), "<b>", "<script>", "![pic]", "$x^2$"):
        if fragment and fragment in text:
            assert fragment not in all_markdown(app)


def test_edited_toy_matrices_travel_in_the_link_and_a_link_brings_them_back():
    app = open_page(PAGE, query={links.STEP: "1"})
    edit(app, "X", {0: {"0": "5"}})
    assert app.query_params[links.TOY_MATRICES] == "X:5,2,0,1;1,1,2,1;1,0,2,0"
    shared = open_page(PAGE, query={links.STEP: "1", links.TOY_MATRICES: app.query_params[links.TOY_MATRICES]})
    assert_clean(shared)
    assert table(shared, "Q")[0].tolist() == [13.0, 1.0, 5.0, 4.0]  # (5, 2, 0, 1) · W_Q, as edited
    assert not shared.warning


def test_while_a_cell_is_not_a_number_the_link_does_not_pretend_to_carry_the_matrices():
    app = open_page(PAGE)
    edit(app, "X", {0: {"0": "5"}})
    assert links.TOY_MATRICES in app.query_params
    edit(app, "X", {0: {"0": "five"}})
    assert links.TOY_MATRICES not in app.query_params
    assert "the link does not carry the matrices" in app.error[0].value


def test_a_link_with_unusable_matrices_says_so_and_shows_the_starting_values():
    app = open_page(PAGE, query={links.STEP: "1", links.TOY_MATRICES: "X:1,2|nonsense"})
    assert_clean(app)
    assert any("cannot be used" in warning.value for warning in app.warning)
    assert np.array_equal(table(app, "Q"), toy.love_mathematics().query.cpu().numpy())


def test_tokens_rows_and_features_are_all_counted_from_zero():
    app = open_page(PAGE)
    assert app.selectbox(key=links.QUERY).value == 1
    assert app.selectbox(key=links.QUERY).format_func(1) == "1: love"
    assert "Query 1 against key 2" in all_markdown(app)
    assert list(table(app, "Q").shape) == [3, 4]
    frame = [f.value for f in app.dataframe if f.value.index.name == "Q"][0]
    assert list(frame.columns) == ["0", "1", "2", "3"] and list(frame.index) == ["0: I", "1: love", "2: mathematics"]
