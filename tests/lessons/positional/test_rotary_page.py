"""The positional page's rotary tab, driven headlessly: the frequencies are SmolLM2's own, the scores drawn are
its forward's for the sidebar's text, moving both tokens together leaves the drawn score flat, and a server
without SmolLM2 or a text of one token gets a message, never a crash."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from anatomy.config import SMOLLM2_135M
from harness.apptest import all_markdown, assert_clean, numbers, open_page, plotly_figures
from lessons.common.labels import token_label
from lessons.common.llm import readable
from lessons.common.ui import loaders
from lessons.positional import links
from lessons.positional.rotary import rotary_frequencies

PAGE = "lesson_pages/positional.py"
TEXT = "The cat sat on the mat because the mat was warm."

pytestmark = pytest.mark.slow  # SmolLM2 is loaded (once per run, shared with lesson 9's tests)


def open_rotary(text: str = TEXT, **query: str):
    return open_page(PAGE, text=text, query={links.TAB: links.ROTARY, **query})


def title_of(figure: dict) -> str:
    """A chart's title and its subtitle as one line, as a learner reads them (line breaks read as spaces)."""
    title = figure["layout"]["title"]
    text = " ".join([title["text"], *([title["subtitle"]["text"]] if "subtitle" in title else [])])
    return text.replace("<br>", " ")


def figure_titled(app, words: str) -> dict:
    found = [figure for figure in plotly_figures(app) if words in title_of(figure)]
    assert len(found) == 1, [title_of(figure) for figure in plotly_figures(app)]
    return found[0]


def test_the_frequencies_drawn_are_smollm2s_own_and_the_loaded_model_has_the_same_theta():
    app = open_rotary()
    assert_clean(app)
    figure = figure_titled(app, "Radians each pair turns")
    drawn = numbers(figure["data"][0]["y"])
    expected = rotary_frequencies(SMOLLM2_135M.head_width, SMOLLM2_135M.rope_theta).numpy()
    assert np.allclose(drawn, expected, rtol=1e-6)
    assert loaders.get_chat_model().loaded.config.rope_theta == SMOLLM2_135M.rope_theta


def test_the_drawn_score_at_the_tokens_own_positions_is_the_forwards_and_stays_flat_when_both_move():
    layer, head, query_token, key_token = 5, 2, 8, 3
    app = open_rotary(
        **{links.ROPE_LAYER: str(layer), links.ROPE_HEAD: str(head)},
        **{links.ROPE_QUERY: str(query_token), links.ROPE_KEY: str(key_token)},
    )
    assert_clean(app)
    chat = loaders.get_chat_model()
    tokens = readable.text_tokens(chat, TEXT)
    model = chat.loaded.model
    with torch.inference_mode():
        traced = model(torch.tensor([tokens.ids], device=next(model.parameters()).device), trace=True)
    forward_score = float(traced.recorded_trace.layers[layer].attention.scaled_scores[0, head, query_token, key_token])
    figure = figure_titled(app, "One query with one key")
    same_distance, other_distance = (numbers(trace["y"]) for trace in figure["data"][:2])
    assert same_distance[0] == pytest.approx(forward_score, abs=1e-5)
    assert np.abs(same_distance - forward_score).max() < 1e-3
    assert np.abs(other_distance - forward_score).max() > 100 * np.abs(same_distance - forward_score).max()
    title = title_of(figure)
    query_name, key_name = (token_label(token, tokens.pieces[token]) for token in (query_token, key_token))
    assert f"query {query_name}, key {key_name}" in title and f"layer {layer}, head {head}" in title, title


def test_the_caption_shows_tokens_that_are_markdown_as_written():
    text = "**bold**"
    pieces = readable.text_tokens(loaders.get_chat_model(), text).pieces
    query_token, key_token = len(pieces) - 1, 0
    assert pieces[query_token] == pieces[key_token] == "**"
    app = open_rotary(text=text, **{links.ROPE_QUERY: str(query_token), links.ROPE_KEY: str(key_token)})
    assert_clean(app)
    (caption,) = [caption.value for caption in app.caption if "at their own positions" in caption.value]
    assert "**" not in caption, "bold markup would hide the tokens between the two"


def test_a_server_without_smollm2_shows_the_frequencies_and_says_why_there_is_no_more(monkeypatch):
    monkeypatch.setenv("ANATOMY_HOSTED", "1")
    monkeypatch.setenv("ANATOMY_LANGUAGE_MODEL", "0")
    app = open_rotary()
    assert_clean(app)
    assert figure_titled(app, "Radians each pair turns")
    assert any("switched off on this server" in info.value for info in app.info)
    assert len(plotly_figures(app)) == 1


@pytest.mark.parametrize("text", ["", "   \n ", "a", "<script>alert(1)</script> **bold** مرحبا 🙂"])
def test_an_empty_one_token_or_hostile_text_gets_a_message_or_its_tokens_literally(text):
    """Found so (2026-11-30, the hostile sweep): a text of no tokens reached the model as an empty float tensor."""
    app = open_rotary(text=text)
    assert_clean(app)
    studied = text if text.strip() else ""  # the sidebar's text of spaces alone is studied as no text
    if len(readable.text_tokens(loaders.get_chat_model(), studied)) < 2:
        assert any("at least two tokens" in info.value for info in app.info)
    else:
        assert "<script>" not in all_markdown(app)
        assert len(plotly_figures(app)) == 3
