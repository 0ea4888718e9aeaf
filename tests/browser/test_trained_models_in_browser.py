"""The models trained here, in a real browser: a word typed into a lesson redraws its figures, the cheater
appears beside the sorter, and a learner's own training run draws its loss curve live and then reports."""

from __future__ import annotations

import pytest

from harness.browser import SCREENS, AppPage
from harness.views import labels_of


def letters_of(figures: list[dict]) -> set[str]:
    """The tokens on the charts' axes, without the position each label starts with ("3: n" -> "n")."""
    return {label.split(" ", 1)[-1] for label in labels_of(figures)}


def encoder_chart(figures: list[dict]) -> dict:
    return next(figure for figure in figures if figure["title"].startswith("Encoder self-attention"))


def type_word(app: AppPage, label: str, word: str) -> list[dict]:
    """Type `word` into the page's own field named `label`, commit it, and wait for the figures to change."""
    app.page.evaluate(
        "() => { window.__before = JSON.stringify([...document.querySelectorAll('.js-plotly-plot')]"
        ".map(plot => plot.data.map(trace => trace.z || trace.y))); }"
    )
    box = app.page.get_by_role("textbox", name=label, exact=True)
    box.fill(word)
    box.press("Enter")
    app.page.wait_for_function(
        "() => JSON.stringify([...document.querySelectorAll('.js-plotly-plot')]"
        ".map(plot => plot.data.map(trace => trace.z || trace.y))) !== window.__before",
        polling=250,
    )
    app.wait_until_painted(min_plots=1)
    return app.figures()


def test_the_reverser_redraws_its_cross_attention_for_a_word_typed_into_the_page(app: AppPage):
    app.open("decoder", min_plots=3, dec_word="planet")
    assert app.exceptions() == []
    assert app.text_box().is_visible(), "the page ran without the entrypoint's navigation and sidebar"
    assert letters_of([encoder_chart(app.figures())]) == set("planet")
    app.screenshot("decoder-planet")

    after = type_word(app, "A word to reverse (3 to 8 letters a–z)", "monkey")

    assert app.exceptions() == []
    assert app.query()["dec_word"] == "monkey"
    assert letters_of([encoder_chart(after)]) == set("monkey")

    # The next tab runs only once it is clicked, on the same word, and the link names it.
    app.page.get_by_role("tab", name="Writing the answer").click()
    app.page.get_by_text("yeknom").first.wait_for()  # the answer it wrote
    app.wait_until_painted(min_plots=1)
    assert app.exceptions() == []
    assert [figure["title"] for figure in app.figures()] == ["Every step's next-token probabilities"]
    assert app.query()["dec_tab"] == "Writing the answer" and app.query()["dec_word"] == "monkey"
    assert app.requests_off_loopback() == []


# Each paragraph made only of code spans (the aligned lines), as its lines: the text, and the left edge of each
# character on the screen.
ALIGNED_LINES = """() => [...document.querySelectorAll('[data-testid="stMarkdownContainer"] p')]
  .filter(p => p.querySelector('code')
    && [...p.childNodes].every(node => ['CODE', 'BR'].includes(node.nodeName) || !node.textContent.trim()))
  .map(p => [...p.querySelectorAll('code')].map(code => {
    const text = code.firstChild, range = document.createRange(), lefts = [];
    for (let i = 0; i < text.length; i++) {
      range.setStart(text, i); range.setEnd(text, i + 1); lefts.push(range.getBoundingClientRect().left);
    }
    return {text: text.textContent.replaceAll('\\u00a0', ' '), lefts};
  }))"""


def test_the_sorter_and_the_cheater_paint_side_by_side_from_a_link(app: AppPage):
    app.open("causal", min_plots=3, cm_tab="A trained decoder", cm_word="zebra", cm_cheater="true")

    assert app.exceptions() == []
    assert app.page.get_by_text("aberz").first.is_visible()  # the sorter's answer, sorted
    # What the sorter reads, and below it what it writes, starting where the prompt ends: columns line up.
    reads, writes = app.page.evaluate(ALIGNED_LINES)[0]
    assert reads["text"] == "reads   <bos> z e b r a ="
    assert writes["text"] == "writes  " + " " * 17 + " a b e r z <eos>"
    assert abs(writes["lefts"][len(reads["text"]) - 1] - reads["lefts"][-1]) < 0.5
    assert writes["lefts"][len(reads["text"]) + 1] > reads["lefts"][-1]
    assert app.plot_count() > 3, "the cheater's charts are drawn beside the sorter's"
    assert app.query()["cm_word"] == "zebra" and app.query()["cm_cheater"] == "True"
    app.page.get_by_text("Run the cheater beside it").first.scroll_into_view_if_needed()
    app.screenshot("causal-cheater")


@pytest.mark.parametrize("steps", [60])
def test_a_live_training_run_draws_its_loss_curve_and_reports_the_held_out_score(app: AppPage, steps):
    app.open("training", tr_model="reverser", tr_steps=steps)
    assert app.plot_count() == 0

    app.page.get_by_role("button", name="Train").click()
    app.page.get_by_text(f"Finished all {steps} steps").wait_for()
    app.wait_until_painted(min_plots=1)

    assert app.exceptions() == []
    curve = next(figure for figure in app.figures() if figure["traces"])
    losses = curve["traces"][0]["y"]
    assert losses["count"] == steps  # one point per step
    assert app.page.get_by_text("Your model: words exactly right").first.is_visible()
    app.screenshot("training-finished")


def test_a_trained_sorters_attention_keeps_its_labels_apart_on_a_phone(app: AppPage):
    app.page.set_viewport_size(SCREENS["phone"])
    app.open("training", tr_model="sorter", tr_steps=30)
    app.page.get_by_role("button", name="Train").click()
    app.page.get_by_text("Finished all 30 steps").wait_for()
    app.wait_until_painted(min_plots=5)  # the loss curve, then one matrix per head on "banana" (14 tokens)

    assert app.exceptions() == []
    assert app.layout_problems() == []
    app.screenshot("training-sorter-phone")
