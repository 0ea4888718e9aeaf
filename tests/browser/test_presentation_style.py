"""Presentation style in Chromium: a link opens a page larger and without the sidebar; the button at the top,
or the Escape key, brings the usual layout back; the browser remembers the last choice for lessons opened later."""

from __future__ import annotations

import pytest

from harness.browser import SCREENS, AppPage
from lessons.common.ui import presentation

TITLE_PX = """() => {
  const main = document.querySelector('[data-testid="stMainBlockContainer"]');
  return parseFloat(getComputedStyle(main.querySelector('h1')).fontSize);
}"""


# The height of each chart's toolbar (plotly lays it out whether it shows or not).
TOOLBAR_PX = """() => [...document.querySelectorAll('.js-plotly-plot .modebar')]
  .map(bar => Math.round(bar.getBoundingClientRect().height * 10) / 10)"""


def sidebar_shown(app) -> bool:
    return app.page.locator('[data-testid="stSidebar"]').is_visible()


def test_a_link_opens_the_page_with_larger_text_and_without_the_sidebar(app):
    app.open("multihead", min_plots=1)
    usual, usual_toolbar = app.page.evaluate(TITLE_PX), app.page.evaluate(TOOLBAR_PX)
    assert sidebar_shown(app)
    app.open("multihead", min_plots=1, present="True")
    assert not sidebar_shown(app)
    assert app.page.evaluate(TITLE_PX) == pytest.approx(usual * presentation.ZOOM, rel=0.02)
    # Found so (2026-11-30): the toolbar took the larger text's line height, 34.6 px tall instead of 25.6, down
    # onto the titles of two charts side by side on a tablet.
    toolbars = app.page.evaluate(TOOLBAR_PX)
    assert toolbars == usual_toolbar and set(toolbars) == {25.6}
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


# A student opening on a phone a link the lecturer copied while presenting: Chrome on an Android phone.
PHONE_USER_AGENT = (
    "Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) "
    "Chrome/131.0.0.0 Mobile Safari/537.36"
)
SIZES_DRAWN = """() => ({
  root: parseFloat(getComputedStyle(document.documentElement).fontSize),
  figures: [...document.querySelectorAll('.js-plotly-plot')].map(plot => plot._fullLayout.font.size),
})"""


@pytest.mark.browser_context_args(viewport=SCREENS["phone"], user_agent=PHONE_USER_AGENT)  # for `new_context`
@pytest.mark.parametrize("lesson", ["multihead", "attention", "causal"])
def test_on_a_phone_a_presentation_link_keeps_the_usual_sizes_and_the_sidebar_out_of_the_way(
    new_context, app_server, lesson
):
    """Found so (2026-11-30): drawn 1.35 times larger on a phone, 31 of the 39 views had titles cut off under
    the chart's toolbar, key labels on each other and formulas wider than their box; these three among them."""
    phone = new_context()
    usual = AppPage(phone.new_page(), app_server.url).open(lesson, min_plots=1)
    presented = AppPage(phone.new_page(), app_server.url).open(lesson, min_plots=1, present="True")
    drawn = presented.page.evaluate(SIZES_DRAWN)
    assert drawn == usual.page.evaluate(SIZES_DRAWN), "text and figures as in the usual style"
    assert drawn["root"] == 16 and len(drawn["figures"]) >= 1
    assert presented.page.get_by_role("button", name="Leave presentation style").is_visible()
    assert not sidebar_shown(presented)
    assert presented.page.locator('[data-testid="stExpandSidebarButton"]').is_hidden()
    assert presented.layout_problems() == []
    assert presented.exceptions() == []
    presented.screenshot(f"presentation-style-on-a-phone-{lesson}")
    assert presented.requests_off_loopback() == []
