"""Presentation style: one switch (and a link parameter) draws every page larger, without the sidebar, with a
way back at the top of the page; a phone keeps the usual sizes (tests/browser/test_presentation_style.py opens a
link so on a phone: these tests' pages have no browser, so no user agent)."""

from __future__ import annotations

import pytest

from harness.apptest import new_app, open_page
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
    assert presentation.NO_SIDEBAR in style_sheets(app) and presentation.LARGER_TEXT in style_sheets(app)
    assert app.button(key="leave_presentation").label == "Leave presentation style"
    assert app.query_params.get("present") == "True"  # a link copied now keeps it


def test_without_it_the_page_is_as_ever():
    app = open_page("lesson_pages/attention.py")
    assert not {presentation.NO_SIDEBAR, presentation.LARGER_TEXT} & set(style_sheets(app))
    assert not [button for button in app.button if button.key == "leave_presentation"]


def test_the_button_at_the_top_leaves_presentation_style_and_the_link_forgets_it():
    app = open_page("lesson_pages/multihead.py", query={"present": "True"})
    app.button(key="leave_presentation").click().run()
    assert not app.exception
    assert not {presentation.NO_SIDEBAR, presentation.LARGER_TEXT} & set(style_sheets(app))
    assert app.query_params.get("present") in (None, "False")


def test_the_style_sheets_enlarge_the_text_and_hide_the_sidebar_and_nothing_else():
    assert presentation.LARGER_TEXT == "<style>html { font-size: 21.6px; }</style>" and presentation.ZOOM >= 1.3
    assert '[data-testid="stSidebar"]' in presentation.NO_SIDEBAR and "font-size" not in presentation.NO_SIDEBAR
    for sheet in (presentation.NO_SIDEBAR, presentation.LARGER_TEXT):
        assert "<" not in sheet.removeprefix("<style>").removesuffix("</style>")


# What browsers send (2026): phones say "Mobile" (Firefox "Mobile;", Safari "Mobile/…"); an Android tablet's
# Chrome leaves it out, and an iPad's Safari presents itself as a Mac's.
PHONES = {
    "Chrome, Android phone": "Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) "
    "Chrome/131.0.0.0 Mobile Safari/537.36",
    "Safari, iPhone": "Mozilla/5.0 (iPhone; CPU iPhone OS 18_1 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like "
    "Gecko) Version/18.1 Mobile/15E148 Safari/604.1",
    "Firefox, Android phone": "Mozilla/5.0 (Android 14; Mobile; rv:132.0) Gecko/132.0 Firefox/132.0",
}
NOT_PHONES = {
    "Chrome, Android tablet": "Mozilla/5.0 (Linux; Android 14; SM-X710) AppleWebKit/537.36 (KHTML, like Gecko) "
    "Chrome/131.0.0.0 Safari/537.36",
    "Safari, iPad": "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 (KHTML, like Gecko) "
    "Version/18.1 Safari/605.1.15",
    "Chrome, Linux desktop": "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) "
    "Chrome/131.0.0.0 Safari/537.36",
    "none sent": "",
}


@pytest.mark.parametrize("user_agent", PHONES.values(), ids=PHONES)
def test_a_phone_is_known_by_its_user_agent(user_agent):
    assert presentation.is_a_phone(user_agent)


@pytest.mark.parametrize("user_agent", NOT_PHONES.values(), ids=NOT_PHONES)
def test_tablets_and_desktops_are_not_phones(user_agent):
    assert not presentation.is_a_phone(user_agent)


@pytest.mark.parametrize("raw", ["banana", "", "<b>1</b>", "1e9"])
def test_a_malformed_parameter_is_named_and_the_page_opens_as_usual(raw):
    app = new_app()  # opened on the lesson itself, as a browser opens the link (open_page's first run would
    app.query_params["present"] = raw  # show the note on the welcome page)
    app.switch_page("lesson_pages/attention.py")
    app.run()
    assert problems_after(app, raw) == []
    notes = [item.value.replace("\\", "") for item in app.warning]
    assert any(f"“present” value “{raw}” cannot be used here (True or False)" in note for note in notes), notes
    assert not {presentation.NO_SIDEBAR, presentation.LARGER_TEXT} & set(style_sheets(app))
    assert app.query_params.get("present") == "False"  # the address no longer carries the bad value


def test_figure_text_grows_with_the_page_in_presentation_style():
    import json

    usual, presented = (open_page("lesson_pages/causal.py", query=query) for query in ({}, {"present": "True"}))
    (usual_cells, presented_cells) = (
        json.loads(app.get("plotly_chart")[0].proto.spec)["data"][0]["textfont"]["size"] for app in (usual, presented)
    )
    assert presented_cells == round(usual_cells * presentation.ZOOM)
    font = json.loads(presented.get("plotly_chart")[0].proto.spec)["layout"]["font"]["size"]
    assert font == round(13 * presentation.ZOOM)
