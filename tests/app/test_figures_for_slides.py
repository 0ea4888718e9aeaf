"""Every figure can go on a slide: its toolbar downloads a PNG 1,920 pixels wide, and an SVG, under a file name
that says what it shows (lesson, figure, text) and that every file system accepts."""

from __future__ import annotations

import json
import re

import pytest

from harness.apptest import HOSTILE_TEXTS, open_page
from harness.views import VIEWS
from lessons.common.ui import charts

SAFE_NAME = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")
VIEWS_WITH_CHARTS = {name: view for name, view in VIEWS.items() if view.charts > 0}


def export_options(app) -> list[dict]:
    return [json.loads(chart.proto.config)["toImageButtonOptions"] for chart in app.get("plotly_chart")]


@pytest.mark.parametrize("name", VIEWS_WITH_CHARTS)
def test_every_chart_of_every_view_downloads_a_slide_png_named_after_what_it_shows(name):
    view = VIEWS_WITH_CHARTS[name]
    app = open_page(f"lesson_pages/{view.path}.py", query=view.query)
    assert not app.exception
    options = export_options(app)
    assert len(options) >= view.charts
    names = [option["filename"] for option in options]
    for option in options:
        assert option["format"] == "png"
        assert option["width"] * option["scale"] >= 1920
        assert SAFE_NAME.match(option["filename"]), option["filename"]
        assert option["filename"].startswith(view.path.replace("_", "-") + "-")
        if view.follows_text:
            assert option["filename"].endswith("-time-flies-like-an-arrow")
    assert len(set(names)) == len(names), f"two figures of one view share a file name: {names}"


@pytest.mark.parametrize(
    ("name", "ending"),
    [
        ("decoder", "-decoder"),  # the word the reverser reads, typed on the page ("decoder" by default)
        ("causal/A trained decoder", "-banana"),  # the sorter's word
        ("causal/A worked example", "-toy-steps"),  # a fixed example: no text in the name
        ("positional/The whole table", "-sinusoidal"),  # the tables do not depend on any text
    ],
)
def test_a_figure_not_computed_from_the_sidebars_text_is_not_named_after_it(name, ending):
    view = VIEWS[name]
    names = [
        option["filename"] for option in export_options(open_page(f"lesson_pages/{view.path}.py", query=view.query))
    ]
    assert names[0].endswith(ending), names
    assert not any("time-flies" in name for name in names)


def test_a_figure_is_named_by_lesson_title_and_text_with_layer_and_head_as_the_title_says():
    name = charts.file_name(
        "multihead", "Layer 3, head 2: <b>weights</b><br>rows are queries", "Time flies, like an arrow!"
    )
    assert name == "multihead-layer-3-head-2-weights-rows-are-queries-time-flies-like-an-arrow"


@pytest.mark.parametrize("kind", HOSTILE_TEXTS)
def test_any_text_gives_a_file_name_every_file_system_accepts(kind):
    name = charts.file_name("attention", "Attention weights", HOSTILE_TEXTS[kind] * 50)
    assert SAFE_NAME.match(name) and len(name) <= 120
    assert name.startswith("attention-attention-weights")


def test_accents_keep_their_letter_and_what_has_no_ascii_form_is_left_out():
    assert charts.slug("Café Ñandú 😍 注意 الانتباه", 10) == "cafe-nandu"
    assert charts.file_name("", "", "") == "figure"


def test_the_svg_button_is_added_by_one_script_that_reads_each_charts_own_name():
    app = open_page("lesson_pages/multihead.py")
    elements = [element.proto.body for element in app.get("html") if "anatomySvgExport" in element.proto.body]
    assert len(elements) == 1 and elements[0].count("anatomySvgExport") == charts.SVG_BUTTON_SCRIPT.count(
        "anatomySvgExport"
    )
    script = charts.SVG_BUTTON_SCRIPT
    assert script.strip() in elements[0]
    assert charts.SVG_BUTTON_TITLE in script and "toImageButtonOptions.filename" not in script
    assert "options.filename" in script and 'format: "svg"' in script
    # Streamlit's sanitiser (DOMPurify) drops a script whose text holds anything like markup.
    code = script.strip().removeprefix("<script>").removesuffix("</script>")
    assert not re.search(r"<[/\w!]", code)


@pytest.mark.parametrize("lesson", ["tokenization", "positional", "attention", "multihead", "encoder"])
def test_every_chart_of_a_lesson_has_a_text_alternative_with_its_numbers(lesson):
    app = open_page(f"lesson_pages/{lesson}.py")
    charts_drawn = app.get("plotly_chart")
    assert charts_drawn
    for chart in charts_drawn:
        assert chart.proto.alt and any(char.isdigit() for char in chart.proto.alt), chart.proto.alt
