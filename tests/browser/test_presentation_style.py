"""Presentation style in Chromium: a link opens a page larger and without the sidebar; the button at the top,
or the Escape key, brings the usual layout back."""

from __future__ import annotations

import pytest

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
