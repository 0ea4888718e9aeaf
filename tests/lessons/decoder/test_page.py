"""The decoder page, driven headlessly: the reverser's three attentions and its answer on the word from the
field or the link, numbers equal to what `anatomy` computes, and every bad entry answered with a message."""

from __future__ import annotations

import numpy as np
import pytest

from anatomy.checkpoints.pretrained import load_pretrained
from anatomy.config import parameter_count
from anatomy.training.recipes import RECIPES
from harness.apptest import (
    HOSTILE_TEXTS,
    all_markdown,
    assert_clean,
    chart,
    chart_keys,
    literal_texts,
    numbers,
    open_page,
    show_tab,
    table_with,
)
from lessons.decoder import families, links
from lessons.decoder.reversal import reverse_word

PAGE = "lesson_pages/decoder.py"
CHARTS = ["dec_encoder_chart", "dec_decoder_chart", "dec_cross_chart", "dec_distribution_chart"]


def head_grids(spec: dict) -> list[np.ndarray]:
    return [numbers(trace["z"]) for trace in spec["data"] if trace["type"] == "heatmap"]


@pytest.fixture(scope="module")
def reverser():
    return load_pretrained(str(RECIPES["reverser"].folder), device="cpu")


def open_tab(tab: str, query: dict[str, str] | None = None):
    return open_page(PAGE, query={links.TAB: tab, **(query or {})})


@pytest.fixture(scope="module")
def default_app():
    app = open_page(PAGE)
    assert_clean(app)
    return app


@pytest.fixture(scope="module")
def generation_app():
    app = open_tab(links.GENERATION)
    assert_clean(app)
    return app


def test_the_default_view_reverses_decoder_and_draws_its_three_attentions(default_app):
    assert default_app.text_input(key=links.WORD).value == "decoder"
    assert default_app.session_state[links.TAB] == links.ATTENTIONS
    assert chart_keys(default_app) == CHARTS[:3]
    assert not default_app.warning and not default_app.error


def test_each_tab_draws_only_its_own_figures(generation_app):
    assert chart_keys(generation_app) == ["dec_distribution_chart"]
    assert any("redoced" in item.value for item in generation_app.success)
    assert chart_keys(open_tab(links.FAMILIES)) == ["dec_family_masks_chart"]
    assert open_tab("no such tab").session_state[links.TAB] == links.ATTENTIONS


@pytest.mark.slow
def test_the_three_attentions_on_screen_are_the_ones_anatomy_computes(default_app, reverser):
    lesson = reverse_word(reverser.model, reverser.task, "decoder")
    encoder, decoder, cross = (head_grids(chart(default_app, key)) for key in CHARTS[:3])
    for head in range(2):
        assert encoder[head].shape == (7, 7) and decoder[head].shape == (8, 8) and cross[head].shape == (8, 7)
        assert np.allclose(encoder[head], lesson.encoder_attention[head].numpy(), atol=1e-6)
        assert np.allclose(decoder[head], lesson.decoder_attention[head].numpy(), atol=1e-6)
        assert np.allclose(cross[head], lesson.cross_attention[head].numpy(), atol=1e-6)
        assert (decoder[head][np.triu_indices(8, 1)] == 0.0).all()  # the causal mask
        assert np.allclose(cross[head].sum(axis=1), 1.0, atol=1e-5)


def test_the_outlined_cells_are_the_anti_diagonal_and_the_text_counts_them(default_app):
    spec = chart(default_app, "dec_cross_chart")
    outlines = [trace for trace in spec["data"] if trace["type"] == "scatter"]
    columns = ["0: d", "1: e", "2: c", "3: o", "4: d", "5: e", "6: r"]
    assert [trace["x"] for trace in outlines] == [[columns[i] for i in (6, 5, 4, 3, 2, 1, 0, 0)]] * 2
    heatmap = [trace for trace in spec["data"] if trace["type"] == "heatmap"][0]
    assert heatmap["x"] == columns and heatmap["y"][0] == "0: &lt;bos&gt; → r"
    text = all_markdown(default_app)
    assert "exactly that mirrored one: 7 of 7 in head 0, 7 of 7 in head 1." in text
    assert "0.988 in head 0, 0.958 in head 1" in text  # mean weight on the mirror


@pytest.mark.slow
def test_the_steps_table_is_greedy_generation_as_task_predict_writes_it(generation_app, reverser):
    steps = table_with(generation_app, "writes")
    assert steps["writes"].tolist() == ["r", "e", "d", "o", "c", "e", "d", "<eos>"]
    assert "".join(steps["writes"].tolist()[:-1]) == reverser.task.predict(reverser.model, ["decoder"])[0]
    lesson = reverse_word(reverser.model, reverser.task, "decoder")
    assert np.allclose(steps["probability"].to_numpy(), [step.probability for step in lesson.steps], atol=1e-9)
    assert steps["head 0 reads most"].tolist() == ["6: r", "5: e", "4: d", "3: o", "2: c", "1: e", "0: d", "0: d"]
    assert steps["decoder input"].tolist()[2] == "<bos> r e"
    distribution = head_grids(chart(generation_app, "dec_distribution_chart"))[0]
    assert distribution.shape == (8, 30)
    assert np.allclose(distribution.max(axis=1), steps["probability"].to_numpy(), atol=1e-6)


def test_the_family_table_counts_are_parameter_count_of_each_config():
    frame = table_with(open_tab(links.FAMILIES), "parameters (from the config)")
    configs = families.model_configs()
    assert frame["model"].tolist() == list(configs)
    expected = [parameter_count(config) for _, config in configs.values()]
    assert frame["parameters (from the config)"].tolist() == expected
    assert expected[0] == 109_482_240 and expected[-1] == 89_088  # BERT-base, the reverser


def test_another_word_from_the_link(reverser):
    app = open_page(PAGE, query={links.WORD: "hello"})
    assert_clean(app)
    assert app.text_input(key=links.WORD).value == "hello"
    cross = head_grids(chart(app, "dec_cross_chart"))
    assert [weights.shape for weights in cross] == [(6, 5), (6, 5)]
    lesson = reverse_word(reverser.model, reverser.task, "hello")
    assert np.allclose(cross[1], lesson.cross_attention[1].numpy(), atol=1e-6)
    show_tab(app, links.TAB, links.GENERATION)
    assert table_with(app, "writes")["writes"].tolist() == ["o", "l", "l", "e", "h", "<eos>"]
    assert any("olleh" in item.value for item in app.success)


@pytest.mark.slow
@pytest.mark.parametrize("linked", ["hello1", "hi", "x" * 100, "<b>bold</b>", "attention"])
def test_a_link_value_the_reverser_cannot_read_falls_back_to_the_default(linked):
    app = open_page(PAGE, query={links.WORD: linked})
    assert_clean(app)
    assert app.text_input(key=links.WORD).value == "decoder"
    assert any(
        "cannot be used here" in item.value and "the reverser reads words of 3 to 8 letters a–z" in item.value
        for item in app.warning
    )  # says the link's word was not used
    assert head_grids(chart(app, "dec_cross_chart"))[0].shape == (8, 7)
    assert "<b>" not in all_markdown(app)  # the link's value is not echoed


def test_a_typed_word_is_written_into_the_link_and_capitals_are_lowercased_with_a_note():
    app = open_tab(links.GENERATION)
    app.text_input(key=links.WORD).set_value("ReVerse").run()
    assert_clean(app)
    assert app.query_params[links.WORD] == "ReVerse" and app.text_input(key=links.WORD).value == "ReVerse"
    assert any("only small letters" in item.value and "reverse" in item.value for item in app.caption)
    assert table_with(app, "writes")["writes"].tolist()[:-1] == list("esrever")


BAD_ENTRIES = {
    **HOSTILE_TEXTS,
    "empty": "",
    "too_short": "ab",
    "too_long": "attention",
    "digits": "12345",
    "inner_space": "two words",
}


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(BAD_ENTRIES))
def test_a_bad_entry_gets_a_message_stays_in_its_box_and_is_never_rendered(name):
    entry = BAD_ENTRIES[name]
    app = open_page(PAGE)
    app.text_input(key=links.WORD).set_value(entry).run()
    assert_clean(app)
    assert app.text_input(key=links.WORD).value == entry
    assert len(app.warning) == 1
    assert chart_keys(app) == [] and any("a word it can read" in item.value for item in app.info)  # no word
    assert chart_keys(show_tab(app, links.TAB, links.FAMILIES)) == ["dec_family_masks_chart"]  # the rest still runs
    assert app.text_input(key=links.WORD).value == entry
    markdown = all_markdown(app)
    if name in HOSTILE_TEXTS and entry.strip():
        assert entry.strip() not in markdown
    if entry.strip():
        assert entry in literal_texts(app)  # shown literally, as typed
    for raw in ("<b>", "<script", "<img", "![", "](http", "$x"):
        assert raw not in markdown
