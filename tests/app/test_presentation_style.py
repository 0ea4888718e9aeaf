"""Presentation style: one switch (and a link parameter) draws every page larger, without the sidebar, with a
way back at the top of the page."""

from __future__ import annotations

import pytest

from harness.apptest import open_page
from harness.hostile import problems_after
from lessons.common.ui import presentation


def style_sheets(app) -> list[str]:
    return [element.proto.body for element in app.get("html") if element.proto.body.startswith("<style>")]


@pytest.mark.parametrize(
    "page", ["lesson_pages/attention.py", "lesson_pages/multihead.py", "lesson_pages/language_model.py"]
)
def test_the_link_parameter_turns_presentation_style_on(page):
    app = open_page(page, query={"present": "True"})
    assert not app.exception
    assert presentation.STYLE in style_sheets(app)
    assert app.button(key="leave_presentation").label == "Leave presentation style"
    assert app.query_params.get("present") == "True"  # a link copied now keeps it


def test_without_it_the_page_is_as_ever():
    app = open_page("lesson_pages/attention.py")
    assert presentation.STYLE not in style_sheets(app)
    assert not [button for button in app.button if button.key == "leave_presentation"]


def test_the_button_at_the_top_leaves_presentation_style_and_the_link_forgets_it():
    app = open_page("lesson_pages/multihead.py", query={"present": "True"})
    app.button(key="leave_presentation").click().run()
    assert not app.exception
    assert presentation.STYLE not in style_sheets(app)
    assert app.query_params.get("present") in (None, "False")


def test_the_style_sheet_enlarges_the_text_and_hides_the_sidebar_and_nothing_else():
    assert "html { font-size: 21.6px; }" in presentation.STYLE and presentation.ZOOM >= 1.3
    assert '[data-testid="stSidebar"]' in presentation.STYLE
    assert "<" not in presentation.STYLE.removeprefix("<style>").removesuffix("</style>")


@pytest.mark.parametrize("raw", ["banana", "", "<b>1</b>", "1e9"])
def test_a_malformed_parameter_is_named_and_the_page_opens_as_usual(raw):
    app = open_page("lesson_pages/attention.py", query={"present": raw})
    assert problems_after(app, raw) == []
    assert presentation.STYLE not in style_sheets(app)


def test_figure_text_grows_with_the_page_in_presentation_style():
    import json

    usual, presented = (open_page("lesson_pages/causal.py", query=query) for query in ({}, {"present": "True"}))
    (usual_cells, presented_cells) = (
        json.loads(app.get("plotly_chart")[0].proto.spec)["data"][0]["textfont"]["size"] for app in (usual, presented)
    )
    assert presented_cells == round(usual_cells * presentation.ZOOM)
    font = json.loads(presented.get("plotly_chart")[0].proto.spec)["layout"]["font"]["size"]
    assert font == round(13 * presentation.ZOOM)
