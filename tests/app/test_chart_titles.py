"""Every chart title of every view reads as a whole heading on a phone: a title too long for a phone's chart is
broken between phrases, its first line the title and the rest its details in the grey subtitle, never in the
middle of a phrase ("Decoder masked self-attention (T × T," over "causal)")."""

from __future__ import annotations

import re

import pytest

from harness.apptest import open_page, plotly_figures
from harness.views import VIEWS
from lessons.common import plots

VIEWS_WITH_CHARTS = {name: view for name, view in VIEWS.items() if view.charts > 0}
# Words a phrase does not end on: a line ending on one was cut in the middle of its phrase.
WORDS_THAT_CONTINUE = {"a", "an", "the", "of", "on", "in", "to", "by", "for", "at", "with", "and", "or", "each", "its"}


def shown(text: str) -> str:
    """Plotly's markup (<b>, entities) as the text a reader sees."""
    return re.sub(r"<[^>]+>", "", text).replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")


def cut_mid_phrase(line: str) -> bool:
    words = line.split()
    return (
        line.count("(") != line.count(")")
        or line.rstrip().endswith((",", ":", ";", "—", "("))
        or (bool(words) and words[-1].lower() in WORDS_THAT_CONTINUE)
    )


def title_and_subtitle_lines(figure: dict) -> tuple[str, list[str]]:
    title = figure["layout"].get("title") or {}
    subtitle = (title.get("subtitle") or {}).get("text") or ""
    return shown(title.get("text") or ""), [shown(line) for line in subtitle.split("<br>") if line]


@pytest.mark.slow
@pytest.mark.parametrize("name", VIEWS_WITH_CHARTS)
def test_every_chart_title_fits_a_phone_and_is_broken_only_between_phrases(name):
    view = VIEWS_WITH_CHARTS[name]
    app = open_page(f"lesson_pages/{view.path}.py", query=view.query)
    assert not app.exception
    for figure in plotly_figures(app):
        title, subtitle_lines = title_and_subtitle_lines(figure)
        assert plots.fits_title(title), title
        assert not cut_mid_phrase(title), (title, subtitle_lines)
        for line in subtitle_lines:
            assert plots.fits_subtitle(line), (title, subtitle_lines)
            assert not cut_mid_phrase(line), (title, subtitle_lines)


def test_a_line_that_ends_inside_brackets_or_on_a_comma_or_a_little_word_is_cut_mid_phrase():
    assert cut_mid_phrase("Decoder masked self-attention (T × T,")
    assert cut_mid_phrase("Token vectors: row id of the token table,")
    assert cut_mid_phrase("Teacher forcing: each model's loss on the")
    assert not cut_mid_phrase("Decoder masked self-attention")
    assert not cut_mid_phrase("(T × T, causal)")
