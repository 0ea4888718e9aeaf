"""Text typed into the sidebar is data, never markup: HTML, a markdown image and a script tag are shown as
the characters typed, and none of them makes the browser fetch anything. The image and the script point at
a loopback recorder, so a single rendered tag would show up as a hit."""

from __future__ import annotations

import pytest

from harness.browser import AppPage
from harness.views import LESSONS

# After the page has painted, an <img> that had been rendered would already have asked for its picture; the
# grace period covers a request still in flight when the page reached "painted".
GRACE_MS = 1000

RENDERED_FROM_TEXT = """(recorder) => ({
  images: [...document.querySelectorAll('img')].filter(img => img.src.startsWith(recorder)).length,
  links: [...document.querySelectorAll('a')].filter(a => a.href.startsWith(recorder)).length,
  scripts: [...document.scripts].filter(script => script.text.includes(recorder)).length,
  bold: [...document.querySelectorAll('b, strong')].filter(element => element.textContent === 'typed bold').length,
})"""


def hostile_text(recorder_url: str) -> str:
    return (
        f"<b>typed bold</b> <img src={recorder_url}/img.png onerror=fetch('{recorder_url}/onerror')> "
        f"![pic]({recorder_url}/markdown.png) [link]({recorder_url}/link) "
        f"<script>fetch('{recorder_url}/script')</script> $x^2$"
    )


@pytest.mark.parametrize("name", LESSONS)
def test_hostile_text_is_shown_literally_and_fetches_nothing(app: AppPage, loopback_recorder, name):
    lesson = LESSONS[name]
    text = hostile_text(loopback_recorder.url)
    app.open(lesson.path, min_plots=lesson.charts, **lesson.query)

    app.type_text(text)
    app.page.wait_for_function("(text) => new URL(location.href).searchParams.get('text') === text", arg=text)
    app.wait_until_painted()
    app.page.wait_for_timeout(GRACE_MS)

    assert app.exceptions() == []
    assert loopback_recorder.hits == []
    assert app.page.evaluate(RENDERED_FROM_TEXT, loopback_recorder.url) == {
        "images": 0,
        "links": 0,
        "scripts": 0,
        "bold": 0,
    }
    assert app.text_box().input_value() == text
    app.screenshot(f"{name}-hostile")


def test_tokenization_draws_every_typed_character_of_hostile_text(app: AppPage, loopback_recorder):
    text = hostile_text(loopback_recorder.url)
    app.open("tokenization", min_plots=1, text=text)

    glyphs = app.heatmap_cell_text(0)

    assert glyphs == text.replace(" ", "·")  # one cell per character; spaces get a visible dot
    assert loopback_recorder.hits == []
