"""The multi-head page, driven headlessly: what it draws equals what `anatomy` computes, every widget
changes the view, the URL restores it, and hostile text is shown literally or not at all."""

from __future__ import annotations

from urllib.parse import urlencode

import numpy as np
import pytest

from harness.apptest import (
    HOSTILE_TEXTS,
    aligned_lines,
    all_markdown,
    assert_clean,
    numbers,
    open_page,
    plotly_figures,
    show_tab,
)
from lessons.common import pooling
from lessons.common.runs import run_encoder
from lessons.language_model import links as language_model_links
from lessons.multihead import ablation, comparison, links
from lessons.multihead import statistics as head_stats
from tests.lessons.multihead.resting_by_loop import resting_counts_by_loop

PAGE = "lesson_pages/multihead.py"
TEXT = "time flies like an arrow"  # [CLS] time flies like an arrow [SEP]: 7 tokens


@pytest.fixture(scope="module")
def run(embedded):
    return run_encoder(embedded.model, embedded.tokenizer, TEXT)


def traces(figure: dict, kind: str) -> list[dict]:
    return [trace for trace in figure["data"] if trace.get("type") == kind]


def drawn_links(figure: dict) -> int:
    """How many query → key lines a head view draws (each line is x = 0, 1, gap)."""
    return sum(
        len(numbers(trace["x"])) // 3
        for trace in traces(figure, "scatter")
        if trace.get("mode") == "lines" and trace.get("showlegend") is False
    )


def legend_heads(figure: dict) -> list[str]:
    return [
        trace["name"]
        for trace in traces(figure, "scatter")
        if trace.get("mode") == "lines" and trace.get("showlegend") is not False
    ]


def test_the_default_view_shows_every_head_of_layer_0_on_one_colour_scale(run):
    app = open_page(PAGE, text=TEXT)
    assert_clean(app)
    assert app.selectbox(key=links.LAYER).value == 0 and app.selectbox(key=links.HEAD).value == 2
    grid = plotly_figures(app)[0]
    heatmaps = traces(grid, "heatmap")
    assert len(heatmaps) == 12 and {trace["coloraxis"] for trace in heatmaps} == {"coloraxis"}
    for head, trace in enumerate(heatmaps):
        np.testing.assert_allclose(numbers(trace["z"]), run.attention_weights[0, head].numpy(), atol=1e-6)
    assert heatmaps[0]["x"] == ["0: [CLS]", "1: time", "2: flies", "3: like", "4: an", "5: arrow", "6: [SEP]"]
    assert app.query_params[links.LAYER] == "0" and app.query_params[links.HEAD] == "2"  # the view is shareable


def test_layer_head_and_full_resolution_widgets_redraw_the_maps(run):
    app = open_page(PAGE, text=TEXT)
    app.selectbox(key=links.LAYER).set_value(4).run()
    np.testing.assert_allclose(
        numbers(traces(plotly_figures(app)[0], "heatmap")[7]["z"]), run.attention_weights[4, 7].numpy(), atol=1e-6
    )
    app.selectbox(key=links.HEAD).set_value(9)
    app.toggle(key=links.FULL_RESOLUTION).set_value(True).run()
    assert_clean(app)
    assert app.query_params[links.LAYER] == "4" and app.query_params[links.FULL_RESOLUTION] == "True"
    full = traces(plotly_figures(app)[1], "heatmap")
    assert len(full) == 1
    np.testing.assert_allclose(numbers(full[0]["z"]), run.attention_weights[4, 9].numpy(), atol=1e-6)


def test_the_head_view_draws_the_chosen_heads_above_the_threshold(run):
    app = open_page(PAGE, text=TEXT, query={links.TAB: links.HEAD_VIEW})
    app.multiselect(key=links.HEADS).set_value([0, 7])
    app.slider(key=links.THRESHOLD).set_value(0.3).run()
    assert_clean(app)
    view = plotly_figures(app)[0]
    assert legend_heads(view) == ["head 0", "head 7"]
    assert drawn_links(view) == int((run.attention_weights[0, [0, 7]] > 0.3).sum())
    app.multiselect(key=links.HEADS).set_value([]).run()
    assert_clean(app)
    assert "Choose at least one head" in all_markdown(app) and not plotly_figures(app)


def test_the_url_restores_layer_heads_threshold_and_tab(run):
    app = open_page(
        PAGE,
        text=TEXT,
        query={links.LAYER: "2", links.HEADS: "1,4", links.THRESHOLD: "0.2", links.TAB: links.HEAD_VIEW},
    )
    assert_clean(app)
    assert app.selectbox(key=links.LAYER).value == 2
    assert app.multiselect(key=links.HEADS).value == [1, 4]
    assert app.slider(key=links.THRESHOLD).value == pytest.approx(0.2)
    view = plotly_figures(app)[0]
    assert legend_heads(view) == ["head 1", "head 4"]
    assert drawn_links(view) == int((run.attention_weights[2, [1, 4]] > 0.2).sum())


@pytest.mark.parametrize("bad", ["99", "abc", "1,1"])
def test_invalid_url_values_fall_back_to_the_defaults(bad):
    app = open_page(
        PAGE,
        text=TEXT,
        query={links.LAYER: bad, links.HEAD: bad, links.HEADS: bad, links.THRESHOLD: bad, links.TAB: bad},
    )
    assert_clean(app)
    assert app.selectbox(key=links.LAYER).value == 0 and app.selectbox(key=links.HEAD).value == 2
    assert len(traces(plotly_figures(app)[0], "heatmap")) == 12  # back on the first tab
    app.session_state[links.TAB] = links.HEAD_VIEW
    app.run()
    assert_clean(app)
    assert app.multiselect(key=links.HEADS).value == [2, 3] and app.slider(key=links.THRESHOLD).value == 0.1


@pytest.mark.slow
def test_two_sentences_show_where_the_shared_word_looks_in_each(embedded):
    app = open_page(PAGE, text=TEXT, query={links.TAB: links.TWO_SENTENCES, links.LAYER: "3", links.HEAD: "11"})
    assert_clean(app)
    assert app.text_input(key=links.SENTENCE_A).value == "time flies like an arrow"
    assert app.selectbox(key=links.WORD).value == "flies"
    runs = [
        run_encoder(embedded.model, embedded.tokenizer, sentence)
        for sentence in ("time flies like an arrow", "fruit flies like a banana")
    ]
    maps, rows, similarity = plotly_figures(app)
    for panel, sentence_run in enumerate(runs):
        np.testing.assert_allclose(
            numbers(traces(maps, "heatmap")[panel]["z"]), sentence_run.attention_weights[3, 11].numpy(), atol=1e-6
        )
        np.testing.assert_allclose(
            numbers(traces(rows, "bar")[panel]["y"]), sentence_run.attention_weights[3, 11, 2].numpy(), atol=1e-6
        )  # "flies" is token 2
    expected = ablation.cosine_similarity(*(ablation.states_by_depth(r.output.trace)[:, 2] for r in runs))
    np.testing.assert_allclose(numbers(similarity["data"][0]["y"]), expected.numpy(), atol=1e-6)
    assert numbers(similarity["data"][0]["y"])[0] == pytest.approx(1.0)  # same token, same position

    app.text_input(key=links.SENTENCE_B).input("the cat sat").run()
    assert_clean(app)
    assert "share no word" in all_markdown(app)
    app.text_input(key=links.SENTENCE_B).input("   ").run()
    assert_clean(app)
    assert "Type a sentence in both boxes" in all_markdown(app)
    assert app.text_input(key=links.SENTENCE_B).value == "   "  # what the user typed is kept


def most_different_head(
    embedded, layer: int, sentences=("time flies like an arrow", "fruit flies like a banana")
) -> int:
    """The head in which "flies" (token 2 of both sentences) looks most differently, as comparison computes it."""
    runs = [run_encoder(embedded.model, embedded.tokenizer, sentence) for sentence in sentences]
    first, second = (sentence_run.attention_weights[layer] for sentence_run in runs)
    shifts = comparison.word_attention_shift(first, second, (2, 2))
    return int(shifts.argmax())


@pytest.mark.slow
def test_two_sentences_keep_the_head_of_the_other_tabs_and_offer_the_one_that_differs_most(embedded):
    app = open_page(PAGE, text=TEXT)  # "All heads", on the default head
    assert app.selectbox(key=links.HEAD).value == 2
    show_tab(app, links.TAB, links.TWO_SENTENCES)
    assert_clean(app)
    most = most_different_head(embedded, 0)
    assert most != 2  # the default head shows two maps that look alike: the tab says where to look instead
    assert app.selectbox(key=links.HEAD).value == 2 and app.query_params[links.HEAD] == "2"
    maps, rows, _ = plotly_figures(app)
    assert maps["layout"]["title"]["text"] == "Layer 0, head 2, in both sentences"
    assert f"differs most between the sentences in head {most} " in all_markdown(app)
    offer = app.button(key="mh_study_most")
    assert offer.label == f"Study head {most} instead"
    show_tab(app, links.TAB, links.ALL_HEADS)
    assert app.selectbox(key=links.HEAD).value == 2  # visiting the tab changed no head

    show_tab(app, links.TAB, links.TWO_SENTENCES)
    app.button(key="mh_study_most").click().run()  # the learner takes the offer: from now on it is their head
    assert_clean(app)
    assert app.selectbox(key=links.HEAD).value == most and app.query_params[links.HEAD] == str(most)
    assert "mh_study_most" not in [button.key for button in app.button]  # nothing left to offer
    show_tab(app, links.TAB, links.ALL_HEADS)
    assert app.selectbox(key=links.HEAD).value == most


@pytest.mark.slow
def test_a_head_chosen_in_the_link_or_with_the_picker_stands_on_the_two_sentences_tab(embedded):
    most = most_different_head(embedded, 0)
    chosen = (most + 1) % 12
    app = open_page(PAGE, text=TEXT, query={links.TAB: links.TWO_SENTENCES, links.HEAD: str(chosen)})
    assert app.selectbox(key=links.HEAD).value == chosen

    app = open_page(PAGE, text=TEXT)
    app.selectbox(key=links.HEAD).set_value(chosen).run()  # picked on "All heads"
    show_tab(app, links.TAB, links.TWO_SENTENCES)
    assert app.selectbox(key=links.HEAD).value == chosen
    app.text_input(key=links.SENTENCE_B).input("fruit flies like an apple").run()
    assert_clean(app)
    assert app.selectbox(key=links.HEAD).value == chosen  # the learner's choice outlives new sentences
    app.selectbox(key=links.LAYER).set_value(3).run()
    assert app.selectbox(key=links.HEAD).value == chosen  # and another layer
    show_tab(app, links.TAB, links.ALL_HEADS)
    assert app.selectbox(key=links.HEAD).value == chosen


def test_the_statistics_table_and_map_equal_head_statistics(run):
    app = open_page(PAGE, text=TEXT, query={links.TAB: links.HEAD_STATISTICS})
    assert_clean(app)
    tokens = run.tokenized.tokens
    expected = head_stats.head_statistics(
        run.attention_weights, head_stats.token_marks(tokens, "[CLS]"), head_stats.token_marks(tokens, "[SEP]")
    )
    table = app.dataframe[0].value
    assert len(table) == 72 and list(table.columns) == ["layer", "head", *head_stats.STATISTICS]
    np.testing.assert_allclose(
        table["previous_share"].to_numpy().reshape(6, 12), expected.previous_share.numpy(), atol=1e-6
    )
    np.testing.assert_allclose(
        numbers(plotly_figures(app)[0]["data"][0]["z"]), expected.previous_share.numpy(), atol=1e-6
    )
    app.selectbox(key=links.STATISTIC).set_value("entropy").run()
    np.testing.assert_allclose(numbers(plotly_figures(app)[0]["data"][0]["z"]), expected.entropy.numpy(), atol=1e-6)


def test_the_page_counts_the_heads_that_rest_on_cls_and_sep_layer_by_layer(embedded, hf_bert):
    app = open_page(PAGE, text=TEXT, query={links.TAB: links.HEAD_STATISTICS})
    assert_clean(app)
    expected = resting_counts_by_loop(hf_bert, embedded.tokenizer, TEXT)
    shown = app.dataframe[1].value
    assert shown.to_dict("records") == expected
    # On "time flies like an arrow" this distilled model rests on [CLS], not on [SEP] as BERT-base does.
    cls, sep, either = (sum(row[column] for row in expected) for column in ("[CLS]", "[SEP]", "either"))
    assert (cls, sep, either) == (65, 2, 66)
    assert "On your text, **2 of 72** heads rest on [SEP] and **65 of 72** on [CLS] (**66** on one" in all_markdown(app)
    assert not any("tokens long" in caption.value for caption in app.caption)  # 7 tokens: 1/7 is below 0.3


def test_a_one_word_text_warns_that_an_even_head_counts_as_resting_too():
    app = open_page(PAGE, text="arrow", query={links.TAB: links.HEAD_STATISTICS})  # [CLS] arrow [SEP]
    assert_clean(app)
    assert any("only 3 tokens long" in caption.value for caption in app.caption)


def test_the_link_to_a_decoders_sinks_opens_the_language_model_lessons_sinks_tab():
    app = open_page(PAGE, text=TEXT, query={links.TAB: links.HEAD_STATISTICS})
    (sinks,) = [link.proto for link in app.get("page_link") if "sink" in link.proto.label]
    assert sinks.page == language_model_links.__name__.split(".")[1]
    assert sinks.query_string == urlencode({language_model_links.TAB: language_model_links.SINKS})


def test_split_and_recombine_shows_the_heads_concatenation_and_w_o_on_the_same_numbers(embedded, run):
    app = open_page(PAGE, text=TEXT, query={links.TAB: links.SPLIT_AND_RECOMBINE, links.LAYER: "5"})
    app.selectbox(key=links.TOKEN).set_value(2).run()
    assert_clean(app)
    checks = app.dataframe[0].value
    assert checks["largest |difference|"].iloc[0] == 0.0  # the concatenation is exact
    assert checks["largest |difference|"].iloc[1:].max() < 1e-5
    expected = ablation.recombine_heads(embedded.model.layers[5].attention, run.output.trace.layers[5].attention, 2)
    blocks, contributions = plotly_figures(app)
    np.testing.assert_allclose(numbers(blocks["data"][0]["z"]), expected.head_outputs.numpy(), atol=1e-6)
    np.testing.assert_allclose(numbers(blocks["data"][1]["z"])[0], expected.concatenated.numpy(), atol=1e-6)
    np.testing.assert_allclose(numbers(contributions["data"][0]["y"]), expected.contribution_norms.numpy(), rtol=1e-5)
    (shapes,) = aligned_lines(app)
    assert shapes[0].startswith("trace.layers[5].attention.head_outputs  (1, 12, 7, 32)")
    assert shapes[2].startswith("concatenated                            (384,)   H × d_head = 12 × 32")


def test_switching_a_head_off_reports_what_changed(embedded, run):
    app = open_page(PAGE, text=TEXT, query={links.TAB: links.SWITCH_OFF, links.LAYER: "1"})
    assert app.multiselect(key=links.HEADS_OFF).value == [2]  # the studied head by default
    app.multiselect(key=links.HEADS_OFF).set_value([4, 10]).run()
    assert_clean(app)
    expected = ablation.ablate_heads(embedded.model, run.output.trace, 1, [4, 10])
    assert app.metric[0].value == f"{float(expected.final_similarity[0]):.4f}"
    similarity, shift = plotly_figures(app)
    np.testing.assert_allclose(numbers(similarity["data"][0]["z"]), expected.token_similarity.numpy(), atol=1e-6)
    np.testing.assert_allclose(numbers(shift["data"][0]["z"]), expected.attention_shift.numpy(), atol=1e-6)
    app.multiselect(key=links.HEADS_OFF).set_value([]).run()
    assert app.metric[0].value == "1.0000"


def strings_in(figure: dict) -> list[str]:
    """Every label a figure shows: axis values, texts, titles and annotations."""
    found = []
    for trace in figure["data"]:
        for field in ("x", "y", "text"):
            if isinstance(trace.get(field), list):
                found += [item for item in trace[field] if isinstance(item, str)]
    found += [annotation.get("text", "") for annotation in figure["layout"].get("annotations", [])]
    return found


@pytest.mark.slow
@pytest.mark.parametrize("name", list(HOSTILE_TEXTS))
def test_hostile_text_is_never_rendered(name):
    hostile = HOSTILE_TEXTS[name]
    app = open_page(PAGE, text=hostile, query={links.TAB: links.TWO_SENTENCES, links.SENTENCE_A: hostile})
    assert_clean(app)
    assert hostile not in all_markdown(app)
    if not hostile.strip():  # nothing to study: the page says what to type instead
        assert "Type some text" in all_markdown(app)
        return
    assert app.text_input(key=links.SENTENCE_A).value == hostile
    app.session_state[links.TAB] = links.SPLIT_AND_RECOMBINE
    app.run()
    assert_clean(app)
    assert hostile not in all_markdown(app)
    app.session_state[links.TAB] = links.ALL_HEADS
    app.run()
    labels = strings_in(plotly_figures(app)[0])
    assert not any("<" in label or ">" in label for label in labels)  # plotly would read them as tags
    if "<" in hostile:
        assert any("&lt;" in label for label in labels)  # the tokens are there, escaped


@pytest.mark.slow
def test_a_long_text_is_pooled_to_64_with_full_resolution_and_a_head_view_window_one_click_away(embedded):
    long_text = " ".join(["the cat sat on the mat"] * 17)  # 102 words + [CLS] and [SEP] = 104 tokens
    long_run = run_encoder(embedded.model, embedded.tokenizer, long_text)
    assert len(long_run.tokenized) == 104
    app = open_page(PAGE, text=long_text)
    assert_clean(app)
    assert "average pooling" in all_markdown(app)
    pooled = pooling.average_pool(long_run.attention_weights[0])  # blocks of 2 tokens: 52 × 52
    heatmaps = traces(plotly_figures(app)[0], "heatmap")
    assert numbers(heatmaps[5]["z"]).shape == (52, 52) and heatmaps[5]["x"][:2] == ["0–1", "2–3"]
    np.testing.assert_allclose(numbers(heatmaps[5]["z"]), pooled.values[5].numpy(), atol=1e-6)
    app.toggle(key=links.FULL_RESOLUTION).set_value(True).run()
    full = traces(plotly_figures(app)[1], "heatmap")[0]
    np.testing.assert_allclose(numbers(full["z"]), long_run.attention_weights[0, 2].numpy(), atol=1e-6)

    app.session_state[links.TAB] = links.HEAD_VIEW
    app.run()
    app.selectbox(key=links.TOKEN).set_value(80).run()
    assert_clean(app)
    window = slice(56, 104)  # 48 tokens centred on token 80, pushed back inside the text
    view = plotly_figures(app)[0]
    columns = [trace for trace in traces(view, "scatter") if trace.get("mode") == "markers+text"]
    assert [column["customdata"][0] for column in columns] == [56, 56]  # both columns start at token 56
    expected = sum(min(int((long_run.attention_weights[0, head, window, window] > 0.1).sum()), 300) for head in (2, 3))
    assert drawn_links(view) == expected
