"""The causal-masking page, driven headlessly: what it shows equals what `anatomy` computes."""

from __future__ import annotations

import numpy as np
import pytest

from anatomy.masks import causal_mask
from harness.apptest import (
    HOSTILE_TEXTS,
    all_markdown,
    assert_clean,
    chart,
    chart_keys,
    numbers,
    open_expander,
    open_page,
    show_tab,
    source_shown,
    table_with,
)
from lessons.causal import links
from lessons.causal import masking as mask_demo
from lessons.common import examples as toy
from lessons.common.runs import run_encoder

PAGE = "lesson_pages/causal.py"
TEXT = "time flies like an arrow"  # [CLS] time flies like an arrow [SEP]: 7 tokens
LONG_TEXT = " ".join(f"w{index}" for index in range(300))  # far more than the 512 tokens the model reads
WORKED_EXAMPLE, REAL_HEAD, THREE_MASKS, TRAINED = links.TABS


def open_tab(tab: str, text: str = TEXT, query: dict[str, str] | None = None):
    return open_page(PAGE, text=text, query={links.TAB: tab, **(query or {})})


def named(spec: dict, name: str) -> list[dict]:
    return [trace for trace in spec["data"] if trace.get("name") == name]


@pytest.fixture(scope="module")
def model_run(embedded):
    return run_encoder(embedded.model, embedded.tokenizer, TEXT)


def expected_causal(run, layer: int, head: int) -> np.ndarray:
    inputs = mask_demo.head_inputs(run.output.trace.layers[layer].attention, head)
    return mask_demo.causal(inputs).weights.double().numpy()


@pytest.fixture(scope="module")
def default_app():
    app = open_page(PAGE, text=TEXT)
    assert_clean(app)
    return app


@pytest.fixture(scope="module")
def real_head_app():
    app = open_tab(REAL_HEAD)
    assert_clean(app)
    return app


@pytest.fixture(scope="module")
def three_masks_app():
    app = open_tab(THREE_MASKS)
    assert_clean(app)
    return app


@pytest.mark.slow
def test_the_page_opens_on_the_worked_example_and_runs_only_the_open_tab(default_app, real_head_app, three_masks_app):
    assert default_app.session_state[links.TAB] == WORKED_EXAMPLE
    assert chart_keys(default_app) == ["cm_toy_steps"]
    assert chart_keys(real_head_app) == ["cm_real_steps", "cm_real_weights"]
    assert chart_keys(three_masks_app) == ["cm_compare"]
    assert chart_keys(open_tab(TRAINED)) == ["cm_sorter_heads", "cm_sorter_next", "cm_sorter_step"]
    assert open_tab("no such tab").session_state[links.TAB] == WORKED_EXAMPLE


def test_the_worked_example_is_computed_first_row_one_then_zeros_rows_summing_to_one(default_app):
    weights = numbers(named(chart(default_app, "cm_toy_steps"), "weight")[0]["z"])
    assert weights[0].tolist() == [1.0, 0.0, 0.0, 0.0]
    assert (weights[np.triu_indices(4, 1)] == 0.0).all()
    shown = table_with(default_app, "row sum")
    computed = mask_demo.mask_scores(toy.CAUSAL_EXAMPLE_SCORES, causal_mask(4))
    assert np.allclose(shown.iloc[:4, :4].to_numpy(), computed.weights.numpy(), atol=1e-15)
    assert shown["row sum"].tolist() == pytest.approx([1.0] * 4, abs=1e-12)
    assert "0.450 and 0.550" in all_markdown(default_app)  # softmax(0.1, 0.3)


def test_minus_infinity_is_written_in_every_masked_score_cell(real_head_app):
    forbidden = named(chart(real_head_app, "cm_real_steps"), "forbidden")[1]  # panel 3: scores + mask
    counts = [row.count("−∞") for row in forbidden["text"]]
    assert counts == [6, 5, 4, 3, 2, 1, 0]
    masked = numbers(named(chart(real_head_app, "cm_real_steps"), "score")[1]["z"])
    assert np.isnan(masked[np.triu_indices(7, 1)]).all()


def test_real_head_causal_weights_equal_anatomy_zero_above_the_diagonal_rows_sum_to_one(real_head_app, model_run):
    expected = expected_causal(model_run, 0, 0)
    shown = numbers(named(chart(real_head_app, "cm_real_weights"), "weight")[0]["z"])
    assert np.allclose(shown, expected, atol=1e-6)
    assert (shown[np.triu_indices(7, 1)] == 0.0).all()
    real_table = [frame.value for frame in real_head_app.dataframe if frame.value.shape == (7, 8)][0]
    assert np.allclose(real_table.iloc[:, :7].to_numpy(), expected, atol=1e-6)
    assert (real_table.iloc[:, :7].to_numpy()[np.triu_indices(7, 1)] == 0.0).all()
    assert np.allclose(real_table["row sum"].to_numpy(), 1.0, atol=1e-6)
    assert real_table.index[1] == "1: time"


def test_three_masks_no_mask_is_the_models_own_attention_and_padding_columns_get_zero(three_masks_app, model_run):
    spec = chart(three_masks_app, "cm_compare")
    no_mask, padded, causal = (numbers(trace["z"]) for trace in named(spec, "weight"))
    assert np.allclose(no_mask, model_run.attention_weights[0, 0].numpy(), atol=1e-6)
    assert padded.shape == (10, 10)  # 7 tokens + the default 3 [PAD]
    assert named(spec, "weight")[1]["x"][-3:] == ["7: [PAD]", "8: [PAD]", "9: [PAD]"]
    assert (padded[:, 7:] == 0.0).all()
    assert np.allclose(padded[:7, :7], no_mask, atol=1e-5)
    assert (causal[np.triu_indices(7, 1)] == 0.0).all()
    facts = table_with(three_masks_app, "largest weight on a forbidden key")
    assert facts["largest weight on a forbidden key"].tolist() == [0.0, 0.0, 0.0]
    assert facts["forbidden (query, key) pairs"].tolist() == [0, 30, 21]  # 10 rows × 3 [PAD]; 6+5+…+1
    assert three_masks_app.query_params[links.PADS] == "3"


@pytest.mark.slow
def test_every_choice_redraws_the_figures(model_run):
    app = open_tab(REAL_HEAD)
    app.selectbox(key=links.LAYER).set_value(3).run()
    app.selectbox(key=links.HEAD).set_value(7).run()
    assert_clean(app)
    shown = numbers(named(chart(app, "cm_real_weights"), "weight")[0]["z"])
    assert np.allclose(shown, expected_causal(model_run, 3, 7), atol=1e-6)
    assert app.query_params[links.LAYER] == "3" and app.query_params[links.HEAD] == "7"

    show_tab(app, links.TAB, THREE_MASKS).number_input(key=links.PADS).set_value(5).run()
    app.toggle(key=links.PAD_AND_CAUSAL).set_value(True).run()
    assert_clean(app)
    padded = numbers(named(chart(app, "cm_compare"), "weight")[1]["z"])
    assert padded.shape == (12, 12)
    assert (padded[:, 7:] == 0.0).all() and (padded[np.triu_indices(12, 1)] == 0.0).all()
    assert np.allclose(padded[:7, :7], expected_causal(model_run, 3, 7), atol=1e-5)
    assert table_with(app, "largest weight on a forbidden key").index[1] == "padding + causal"


def test_a_shared_link_restores_layer_head_and_padding(model_run):
    link = {links.LAYER: "2", links.HEAD: "5", links.PADS: "6", links.PAD_AND_CAUSAL: "true"}
    app = open_tab(REAL_HEAD, query=link)
    assert_clean(app)
    assert app.selectbox(key=links.LAYER).value == 2 and app.selectbox(key=links.HEAD).value == 5
    shown = numbers(named(chart(app, "cm_real_weights"), "weight")[0]["z"])
    assert np.allclose(shown, expected_causal(model_run, 2, 5), atol=1e-6)
    app = open_tab(THREE_MASKS, query=link)
    assert app.selectbox(key=links.LAYER).value == 2 and app.selectbox(key=links.HEAD).value == 5
    assert app.number_input(key=links.PADS).value == 6 and app.toggle(key=links.PAD_AND_CAUSAL).value is True
    assert numbers(named(chart(app, "cm_compare"), "weight")[1]["z"]).shape == (13, 13)


@pytest.mark.parametrize(
    "query",
    [
        {links.LAYER: "99", links.HEAD: "abc", links.PADS: "abc"},
        {links.LAYER: "-1", links.HEAD: "12", links.PADS: "99", links.PAD_AND_CAUSAL: "maybe"},
    ],
)
def test_bad_link_values_fall_back_to_the_defaults(query):
    app = open_tab(THREE_MASKS, query=query)
    assert_clean(app)
    assert app.selectbox(key=links.LAYER).value == 0 and app.selectbox(key=links.HEAD).value == 0
    assert app.number_input(key=links.PADS).value == 3 and app.toggle(key=links.PAD_AND_CAUSAL).value is False
    assert numbers(named(chart(app, "cm_compare"), "weight")[1]["z"]).shape == (10, 10)


@pytest.mark.slow
def test_a_long_text_is_shown_through_a_48_token_window_with_the_whole_matrix_one_click_away(embedded):
    app = open_tab(REAL_HEAD, text=LONG_TEXT, query={links.WINDOW_START: "100"})
    assert_clean(app)
    assert app.slider(key=links.WINDOW_START).value == 100
    warnings = " ".join(warning.value for warning in app.warning)
    assert "at most 512" in warnings
    padding = " ".join(warning.value for warning in open_tab(THREE_MASKS, text=LONG_TEXT).warning)
    assert "no [PAD] token fits" in padding  # truncated, so no room for padding
    weights = named(chart(app, "cm_real_weights"), "weight")[0]
    assert weights["y"][0].startswith("100: ") and len(weights["y"]) == 48
    assert not app.dataframe  # 48 rows: the numbers wait in a closed expander
    open_expander(app, "cm_real_numbers")
    real_table = [frame.value for frame in app.dataframe if frame.value.shape == (48, 49)][0]
    run = run_encoder(embedded.model, embedded.tokenizer, LONG_TEXT)
    full = expected_causal(run, 0, 0)
    assert np.allclose(real_table.iloc[:, :48].to_numpy(), full[100:148, 100:148], atol=1e-6)
    assert np.allclose(real_table["row sum"].to_numpy(), 1.0, atol=1e-5)  # over all 512 keys, not the 48
    assert not any(element.proto.id.endswith("-cm_full_figure") for element in app.get("plotly_chart"))

    app.slider(key=links.WINDOW_START).set_value(400).run()
    app.toggle(key=links.WHOLE_MATRIX).set_value(True).run()
    assert_clean(app)
    assert named(chart(app, "cm_real_weights"), "weight")[0]["y"][0].startswith("400: ")
    overview = numbers(chart(app, "cm_full_figure")["data"][0]["z"])
    assert overview.shape == (512, 512)
    assert (overview[np.triu_indices(512, 1)] == 0.0).all()
    assert np.allclose(overview, full, atol=1e-6)


@pytest.mark.slow
def test_without_text_the_real_head_tabs_explain_what_to_type_and_the_others_still_draw():
    for tab in (REAL_HEAD, THREE_MASKS):
        app = open_tab(tab, text="")
        assert_clean(app)
        assert any("Text to study" in info.value for info in app.info)
        assert chart_keys(app) == []
    # The worked example and the sorter read their own inputs, not the sidebar's text.
    assert chart_keys(open_tab(WORKED_EXAMPLE, text="")) == ["cm_toy_steps"]
    assert chart_keys(open_tab(TRAINED, text="")) == ["cm_sorter_heads", "cm_sorter_next", "cm_sorter_step"]


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(HOSTILE_TEXTS))
def test_hostile_text_is_never_rendered_and_never_crashes(name):
    text = HOSTILE_TEXTS[name]
    app = open_tab(REAL_HEAD, text=text)
    assert_clean(app)
    if text.strip():
        assert text.strip() not in all_markdown(app)
        names = named(chart(app, "cm_real_weights"), "weight")[0]["x"]
        assert all("<" not in label for label in names)  # HTML is escaped before plotly sees it
    else:
        assert any("Text to study" in info.value for info in app.info)


def test_a_link_made_before_the_worked_example_was_renamed_still_opens_it():
    app = open_tab("The chapter's example")
    assert_clean(app)
    assert app.session_state[links.TAB] == WORKED_EXAMPLE
    assert chart_keys(app) == ["cm_toy_steps"]


# One function each tab runs, shown under it (and under no other tab).
CODE_OF_EACH_TAB = {
    WORKED_EXAMPLE: "lessons.causal.masking.mask_scores",
    REAL_HEAD: "anatomy.attention.attention_scores",
    THREE_MASKS: "lessons.causal.masking.padded",
    TRAINED: "anatomy.generation.generation_loop",
}


@pytest.mark.parametrize("tab", links.TABS)
def test_the_code_under_the_page_is_the_code_of_the_open_tab(tab):
    shown = source_shown(open_tab(tab))
    assert CODE_OF_EACH_TAB[tab] in shown
    assert not {name for other, name in CODE_OF_EACH_TAB.items() if other != tab} & set(shown)
