"""The encoder-stack page, driven headlessly: every number it shows is the number `anatomy` computes, every
choice survives a shared link, and no typed text is ever rendered as markdown."""

from __future__ import annotations

import inspect
import json
import textwrap

import numpy as np
import pytest

from anatomy.blocks import EncoderLayer
from harness.apptest import HOSTILE_TEXTS, all_markdown, assert_clean, decoded, open_expander, open_page, plotly_figures
from lessons.common.runs import run_encoder
from lessons.common.ui import widgets
from lessons.encoder import analysis as stack_analysis
from lessons.encoder import links, text

PAGE = "lesson_pages/encoder.py"
TEXT = "time flies like an arrow"
# about 150 tokens: long enough for pooled overview maps and for a window of query rows
LONG_TEXT = " ".join(["the quick brown fox jumps over the lazy dog"] * 16)


def figure_titled(app, title_start: str) -> dict:
    """The figure whose title, read as a learner reads it (its subtitle lines after its first), starts with
    `title_start`, its trace arrays decoded."""
    for figure in plotly_figures(app):
        title = figure["layout"].get("title") or {}
        lines = [title.get("text") or "", (title.get("subtitle") or {}).get("text") or ""]
        if " ".join(line for line in lines if line).startswith(title_start):
            figure["data"] = [{key: decoded(value) for key, value in trace.items()} for trace in figure["data"]]
            return figure
    raise AssertionError(f"no figure titled {title_start!r}")


def heatmaps(app) -> list[dict]:
    return [
        {key: decoded(value) for key, value in trace.items()}
        for figure in plotly_figures(app)
        for trace in figure["data"]
        if trace["type"] == "heatmap"
    ]


def open_tab(tab: str, query: dict[str, str] | None = None):
    return open_page(PAGE, text=TEXT, query={links.TAB: tab, **(query or {})})


@pytest.fixture(scope="module")
def traced(served):
    return run_encoder(served.model, served.tokenizer, TEXT)


# ---------------------------------------------------------------------------------------------------------
# Attention of every layer and head (both counted from 0, as in `trace.layers[0]` and `encoder.layer.0`)


def test_default_view_tiles_all_72_maps_and_shows_layer_0_head_0_in_full(traced):
    app = open_page(PAGE, text=TEXT)
    assert_clean(app)
    assert app.slider(key=links.LAYER).value == 0 and app.slider(key=links.HEAD).value == 0
    assert (app.slider(key=links.LAYER).max, app.slider(key=links.HEAD).max) == (5, 11)
    assert app.query_params[links.LAYER] == "0" and app.query_params[links.HEAD] == "0"
    assert [subheader.value for subheader in app.subheader] == ["Layer 0, head 0, every weight"]
    overview, full_map = heatmaps(app)
    mosaic = overview["z"]
    assert mosaic.shape == (6 * 8 - 1, 12 * 8 - 1)  # 7 tokens per map plus one empty line
    weights = traced.attention_weights.cpu().numpy()
    np.testing.assert_allclose(mosaic[8:15, 16:23], weights[1, 2], rtol=1e-6)  # layer 1, head 2
    np.testing.assert_allclose(full_map["z"], weights[0, 0], rtol=1e-6)
    assert "average-pooled" not in all_markdown(app)


def test_choosing_a_layer_and_head_shows_that_map_and_puts_it_in_the_url(traced):
    app = open_page(PAGE, text=TEXT)
    app.slider(key=links.LAYER).set_value(3).run()
    app.slider(key=links.HEAD).set_value(8).run()
    assert_clean(app)
    np.testing.assert_allclose(heatmaps(app)[1]["z"], traced.attention_weights[3, 8].cpu().numpy(), rtol=1e-6)
    (frame,) = plotly_figures(app)[0]["layout"]["shapes"]
    assert (frame["x0"], frame["y0"]) == (8 * 8 - 0.5, 3 * 8 - 0.5)
    assert [subheader.value for subheader in app.subheader] == ["Layer 3, head 8, every weight"]
    assert app.query_params[links.LAYER] == "3" and app.query_params[links.HEAD] == "8"


def test_a_shared_link_restores_layer_and_head_as_the_indices_the_code_uses(traced):
    app = open_page(PAGE, text=TEXT, query={links.LAYER: "1", links.HEAD: "6"})
    assert_clean(app)
    assert app.slider(key=links.LAYER).value == 1 and app.slider(key=links.HEAD).value == 6
    np.testing.assert_allclose(heatmaps(app)[1]["z"], traced.attention_weights[1, 6].cpu().numpy(), rtol=1e-6)
    assert [subheader.value for subheader in app.subheader] == ["Layer 1, head 6, every weight"]


def test_the_last_layer_and_head_are_reachable_from_a_link(traced):
    app = open_page(PAGE, text=TEXT, query={links.LAYER: "5", links.HEAD: "11"})
    assert_clean(app)
    assert app.slider(key=links.LAYER).value == 5 and app.slider(key=links.HEAD).value == 11
    np.testing.assert_allclose(heatmaps(app)[1]["z"], traced.attention_weights[5, 11].cpu().numpy(), rtol=1e-6)


@pytest.mark.slow
@pytest.mark.parametrize("layer, head", [("6", "12"), ("-1", "-1"), ("abc", "1.5"), ("99", "")])
def test_invalid_tab_layer_and_head_in_a_link_fall_back_to_the_first(traced, layer, head):
    app = open_page(PAGE, text=TEXT, query={links.TAB: "nonsense", links.LAYER: layer, links.HEAD: head})
    assert_clean(app)
    assert app.slider(key=links.LAYER).value == 0 and app.slider(key=links.HEAD).value == 0
    overview, full_map = heatmaps(app)  # the first tab, attention, is open
    np.testing.assert_allclose(full_map["z"], traced.attention_weights[0, 0].cpu().numpy(), rtol=1e-6)
    assert app.query_params[links.LAYER] == "0" and app.query_params[links.HEAD] == "0"


@pytest.mark.slow
def test_a_long_text_is_pooled_in_the_overview_and_windowed_at_full_resolution(served):
    long_run = run_encoder(served.model, served.tokenizer, LONG_TEXT)
    num_tokens = len(long_run.tokenized)
    assert num_tokens > 128
    app = open_page(PAGE, text=LONG_TEXT, query={links.WINDOW_START: "10"})
    assert_clean(app)
    assert "average-pooled to 32 × 32" in all_markdown(app)
    pooled = stack_analysis.pool_overview(long_run.attention_weights)
    overview, full_map = heatmaps(app)
    np.testing.assert_allclose(overview["z"][:32, :32], pooled.values[0, 0].cpu().numpy(), rtol=1e-5)
    # the map below is not pooled: 64 query rows from token 10, every key
    assert app.slider(key=links.WINDOW_START).value == 10
    assert full_map["y"][0].startswith("10: ") and len(full_map["y"]) == 64 and len(full_map["x"]) == num_tokens
    np.testing.assert_allclose(full_map["z"], long_run.attention_weights[0, 0, 10:74].cpu().numpy(), rtol=1e-6)


# ---------------------------------------------------------------------------------------------------------
# Hidden states


def test_hidden_state_norms_and_self_similarities_are_the_traced_ones(traced):
    app = open_tab(links.HIDDEN_STATES)
    assert_clean(app)
    states = traced.output.hidden_states
    norms = figure_titled(app, "‖h‖ of every token")["data"][0]
    np.testing.assert_allclose(norms["z"], stack_analysis.hidden_state_norms(states).cpu().numpy(), rtol=1e-6)
    # each hidden state is named for the layer that produced it
    assert list(norms["y"]) == ["embeddings"] + [f"after layer {layer}" for layer in range(6)]
    similarity = figure_titled(app, "cosine similarity of each token")["data"][0]
    np.testing.assert_allclose(
        similarity["z"], stack_analysis.similarity_to_previous_layer(states).cpu().numpy(), rtol=1e-6
    )
    assert similarity["y"][0] == "after layer 0 vs embeddings"
    assert "“after layer 5 vs after layer 4”: 0.658" in all_markdown(app)

    app.segmented_control(key=links.COMPARE).set_value("embeddings").run()
    assert_clean(app)
    similarity = figure_titled(app, "cosine similarity of each token")["data"][0]
    np.testing.assert_allclose(
        similarity["z"], stack_analysis.similarity_to_embeddings(states).cpu().numpy(), rtol=1e-6
    )
    assert similarity["y"][-1] == "after layer 5 vs embeddings"
    assert app.query_params[links.COMPARE] == "embeddings"


# ---------------------------------------------------------------------------------------------------------
# A word in two contexts


def test_flies_as_verb_and_noun_drifts_from_1_to_0_63():
    app = open_tab(links.WORD_IN_CONTEXT)
    assert_clean(app)
    assert [(metric.label, metric.value) for metric in app.metric] == [
        ("At the embeddings", "1.000"),
        ("After layer 5", "0.631"),
    ]
    (figure,) = plotly_figures(app)
    curve = decoded(figure["data"][0]["y"])
    assert [round(value, 3) for value in curve] == [1.0, 0.917, 0.903, 0.871, 0.807, 0.808, 0.631]
    pieces = app.dataframe[0].value
    assert list(pieces["word pieces used"]) == ["flies", "flies"] and list(pieces["positions"]) == ["2", "2"]


def test_a_word_missing_from_one_sentence_says_so_and_keeps_the_input():
    app = open_tab(links.WORD_IN_CONTEXT)
    app.text_input(key=links.WORD).set_value("banana").run()
    assert_clean(app)
    assert [warning.value for warning in app.warning] == [
        "The word does not occur in sentence A. Check the spelling, or type a sentence that uses it."
    ]
    assert not plotly_figures(app)
    assert app.text_input(key=links.WORD).value == "banana"


def test_a_word_of_several_pieces_is_averaged_and_the_page_says_so(served):
    sentence_a, sentence_b = "unbelievably good", "that is unbelievably bad"
    app = open_tab(
        links.WORD_IN_CONTEXT, {links.SENTENCE_A: sentence_a, links.SENTENCE_B: sentence_b, links.WORD: "unbelievably"}
    )
    assert_clean(app)
    assert "mean of its pieces" in all_markdown(app)
    assert list(app.dataframe[0].value["word pieces used"]) == ["un ##bel ##ie ##va ##bly"] * 2
    run_a = run_encoder(served.model, served.tokenizer, sentence_a)
    run_b = run_encoder(served.model, served.tokenizer, sentence_b)
    expected = stack_analysis.contextual_similarity(
        run_a.output.hidden_states, range(1, 6), run_b.output.hidden_states, range(3, 8)
    )
    np.testing.assert_allclose(decoded(plotly_figures(app)[0]["data"][0]["y"]), expected.cpu().numpy(), rtol=1e-6)


def test_hostile_sentences_are_never_rendered_as_markdown():
    app = open_tab(links.WORD_IN_CONTEXT)
    for name in ("html", "markdown", "latex"):
        app.text_input(key=links.SENTENCE_A).set_value(HOSTILE_TEXTS[name]).run()
        assert_clean(app)
        assert HOSTILE_TEXTS[name] not in all_markdown(app)
    app.text_input(key=links.WORD).set_value(HOSTILE_TEXTS["script"]).run()
    app.text_input(key=links.SENTENCE_B).set_value(HOSTILE_TEXTS["emoji"]).run()
    assert_clean(app)
    assert HOSTILE_TEXTS["script"] not in all_markdown(app) and HOSTILE_TEXTS["emoji"] not in all_markdown(app)
    assert app.text_input(key=links.WORD).value == HOSTILE_TEXTS["script"]


# ---------------------------------------------------------------------------------------------------------
# Layer norm placement


@pytest.mark.slow
def test_the_main_path_and_the_untrained_demonstration_are_computed_not_asserted(served, traced):
    app = open_tab(links.LAYER_NORM, {links.LAYER: "2"})
    assert_clean(app)
    main_path = figure_titled(app, "‖h‖ along the main path")
    expected = stack_analysis.stack_main_path_norms(traced.output.trace).cpu().numpy()
    by_name = {trace["name"]: trace["y"] for trace in main_path["data"]}
    np.testing.assert_allclose(by_name["mean over tokens"], expected.mean(axis=1), rtol=1e-6)
    shaded = [shape for shape in main_path["layout"]["shapes"] if shape["type"] == "rect"]
    assert (shaded[0]["x0"], shaded[0]["x1"]) == (8.5, 12.5)  # layer 2's four checkpoints, after 1 + 4 + 4
    assert "Layer 2: ‖h‖ of every token at each point of the block (from the trace)." in all_markdown(app)
    table = app.dataframe[0].value
    np.testing.assert_allclose(
        table.to_numpy(dtype=float),
        stack_analysis.main_path_norms(traced.output.trace.layers[2]).cpu().numpy().T,
        atol=5e-4,
    )

    growth = figure_titled(app, "mean ‖h‖ on the main path untrained")
    by_name = {trace["name"]: trace["y"] for trace in growth["data"]}
    embeddings = traced.output.trace.embeddings.output
    pre = stack_analysis.main_path_growth(embeddings, served.config, "pre").norms.mean(dim=1).cpu().numpy()
    np.testing.assert_allclose(by_name["pre-LN"], pre, rtol=1e-6)
    np.testing.assert_allclose(by_name["post-LN"][1:], np.full(6, 384**0.5), atol=1e-3)
    assert "pre-LN grows from 8.96 to 17.26 (×1.93)" in all_markdown(app)


# ---------------------------------------------------------------------------------------------------------
# Feed-forward


def test_feed_forward_shows_the_most_active_neurons_and_the_share_above_zero(traced):
    app = open_tab(links.FEED_FORWARD, {links.LAYER: "1"})
    assert_clean(app)
    activation = traced.output.trace.layers[1].feed_forward.hidden_activation[0]
    neurons = stack_analysis.most_active_neurons(activation, 32)
    (heatmap,) = heatmaps(app)
    np.testing.assert_allclose(heatmap["z"], activation[:, neurons].cpu().numpy(), rtol=1e-6)
    assert list(heatmap["x"]) == [f"n{neuron}" for neuron in neurons.tolist()]
    fractions = stack_analysis.positive_fraction_by_layer(traced.output.trace)
    assert app.metric[0].label == "Activations above 0 in layer 1"
    assert app.metric[0].value == f"{fractions[1].item():.1%}" == "17.2%"

    app.slider(key=links.NEURONS).set_value(8).run()
    assert_clean(app)
    assert heatmaps(app)[0]["z"].shape == (7, 8)


# ---------------------------------------------------------------------------------------------------------
# Classification head


def test_the_untrained_head_maps_cls_to_the_chosen_number_of_labels(served, traced):
    app = open_tab(links.CLASSIFIER, {links.LABELS: "7"})
    assert_clean(app)
    assert app.number_input(key=links.LABELS).value == 7
    head = stack_analysis.apply_classifier_head(
        served.model, traced.output.last_hidden_state, stack_analysis.untrained_classifier(384, 7)
    )
    table = app.dataframe[0].value
    np.testing.assert_allclose(table["logit"], head.logits.cpu().numpy(), rtol=1e-5)
    np.testing.assert_allclose(table["probability"], head.probabilities.cpu().numpy(), rtol=1e-5)
    assert "W (7, 384)" in all_markdown(app) and "untrained" in all_markdown(app)

    app.number_input(key=links.LABELS).set_value(3).run()
    assert_clean(app)
    assert len(app.dataframe[0].value) == 3 and app.query_params[links.LABELS] == "3"


@pytest.mark.parametrize("raw", ["11", "1", "two"])
def test_a_number_of_labels_out_of_range_in_a_link_falls_back_to_2(raw):
    app = open_tab(links.CLASSIFIER, {links.LABELS: raw})
    assert_clean(app)
    assert app.number_input(key=links.LABELS).value == 2
    assert len(app.dataframe[0].value) == 2


# ---------------------------------------------------------------------------------------------------------
# Parameters


def test_the_parameter_table_adds_up_to_the_loaded_model(embedded):
    app = open_tab(links.PARAMETERS)
    assert_clean(app)
    table = app.dataframe[0].value.set_index("component")
    total = sum(parameter.numel() for parameter in embedded.model.parameters())
    assert table.loc["total", "in the loaded model"] == total == 22_713_216
    assert table.loc["total", "from the configuration"] == total
    assert table.drop(index="total")["in the loaded model"].sum() == total
    zoo = app.dataframe[1].value.set_index("model")
    assert zoo.loc["bert-base-uncased", "≈"] == "109.5M" and zoo.loc["bert-large-uncased", "≈"] == "335.1M"
    assert "22,713,216" in all_markdown(app)

    # Counts are shown with thousands separators (11,720,448), and stay numbers underneath.
    for frame in app.dataframe:
        settings = json.loads(frame.proto.columns)
        counts = frame.value.select_dtypes("integer").columns
        assert len(counts) >= 2
        assert all(settings[name]["type_config"]["format"] == "localized" for name in counts)


# ---------------------------------------------------------------------------------------------------------
# The code behind each tab


@pytest.mark.slow
@pytest.mark.parametrize("tab", links.TABS)
def test_every_tab_shows_the_packages_own_code_for_it_and_for_the_block(tab):
    app = open_tab(tab)
    # the page's own expanders: the sidebar has its own (the guided tour)
    assert [expander.label for expander in app.main.expander] == [widgets.SOURCE_TITLE, text.SOURCE_TITLE]
    for expander in list(app.main.expander):
        app = open_expander(app, expander.key)
    assert_clean(app)
    shown = [block.value for block in app.code]
    assert textwrap.dedent(inspect.getsource(EncoderLayer.forward)).rstrip("\n") in shown  # from the margin
    assert len(shown) > 2


# ---------------------------------------------------------------------------------------------------------
# Hostile text in the sidebar


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(HOSTILE_TEXTS))
def test_hostile_text_never_reaches_markdown(name):
    app = open_page(PAGE, text=HOSTILE_TEXTS[name])
    assert_clean(app)
    assert HOSTILE_TEXTS[name] not in all_markdown(app)
    if name == "whitespace":
        assert "Type a sentence in the sidebar" in all_markdown(app)
    else:
        labels = " ".join(str(label) for figure in plotly_figures(app) for label in figure["data"][0]["y"])
        assert "<b>" not in labels and "<script>" not in labels
