"""Presentation style in Chromium: a link opens a page larger and without the sidebar; the button at the top,
or the Escape key, brings the usual layout back; the browser remembers the last choice for lessons opened later."""

from __future__ import annotations

import pytest

from harness.browser import AppPage
from lessons.common.ui import presentation

TITLE_PX = """() => {
  const main = document.querySelector('[data-testid="stMainBlockContainer"]');
  return parseFloat(getComputedStyle(main.querySelector('h1')).fontSize);
}"""


def sidebar_shown(app) -> bool:
    return app.page.locator('[data-testid="stSidebar"]').is_visible()


def test_a_link_opens_the_page_with_larger_text_and_without_the_sidebar(app):
    app.open("multihead", min_plots=1)
    usual = app.page.evaluate(TITLE_PX)
    assert sidebar_shown(app)
    app.open("multihead", min_plots=1, present="True")
    assert not sidebar_shown(app)
    assert app.page.evaluate(TITLE_PX) == pytest.approx(usual * presentation.ZOOM, rel=0.02)
    assert app.layout_problems() == []
    app.screenshot("presentation-style-multihead")


@pytest.mark.parametrize("how", ["button", "escape"])
def test_the_button_or_the_escape_key_leaves_presentation_style(app, how):
    app.open("attention", min_plots=1, present="True")
    assert not sidebar_shown(app)
    if how == "button":
        app.page.get_by_role("button", name="Leave presentation style").click()
    else:
        app.page.locator("h1").first.click()  # focus outside any field
        app.page.keyboard.press("Escape")
    app.page.locator('[data-testid="stSidebar"]').wait_for(state="visible")
    app.wait_until_painted(1)
    assert app.query().get("present") in (None, "False")


def test_a_lesson_opened_in_a_new_tab_keeps_the_style_last_chosen_and_a_link_that_names_one_wins(app):
    app.open("multihead", min_plots=1, present="True")
    assert not sidebar_shown(app)
    new_tab = AppPage(app.page.context.new_page(), app.base_url).open("encoder", min_plots=1)
    assert not sidebar_shown(new_tab), "a bare link opened in a new tab"
    assert new_tab.query().get("present") == "True"  # and a link copied there carries it
    named = AppPage(app.page.context.new_page(), app.base_url).open("attention", min_plots=1, present="False")
    assert sidebar_shown(named), "a link that says present=False"
    new_tab.page.get_by_role("button", name="Leave presentation style").click()
    new_tab.page.locator('[data-testid="stSidebar"]').wait_for(state="visible")
    new_tab.wait_until_painted(1)
    after_leaving = AppPage(app.page.context.new_page(), app.base_url).open("causal", min_plots=1)
    assert sidebar_shown(after_leaving), "leaving is remembered too"
