"""The theme a learner chooses in the ⋮ menu stays on every page: after a reload, on another lesson, and in a
tab they open themselves. Streamlit 1.67 keeps the choice under a key named after the page's address, so
without `lessons.common.ui.theme` a choice made on /multihead was forgotten on /attention."""

from __future__ import annotations

import pytest

from harness.browser import AppPage

DARK = """() => {
  const [red, green, blue] = getComputedStyle(document.querySelector('[data-testid="stApp"]')).backgroundColor
    .match(/[\\d.]+/g).map(Number);
  return 0.2126 * red + 0.7152 * green + 0.0722 * blue < 128;
}"""


def choose_theme(app: AppPage, theme: str) -> None:
    app.page.get_by_test_id("stMainMenu").click()
    app.page.get_by_test_id(f"stMainMenuItem-theme-{theme}").click()
    app.page.wait_for_function(DARK if theme == "Dark" else f"() => !({DARK})()")


@pytest.mark.parametrize(("system", "chosen"), [("light", "Dark"), ("dark", "Light")])
def test_a_theme_chosen_on_one_page_stays_after_a_reload_on_other_pages_and_in_a_new_tab(app, system, chosen):
    app.page.emulate_media(color_scheme=system)
    app.open("multihead", min_plots=1)
    assert app.page.evaluate(DARK) == (system == "dark")
    choose_theme(app, chosen)
    app.page.reload()
    app.wait_until_painted(1)
    assert app.page.evaluate(DARK) == (chosen == "Dark"), "the reloaded page"
    app.open("attention", min_plots=1)
    assert app.page.evaluate(DARK) == (chosen == "Dark"), "another lesson"
    new_tab = AppPage(app.page.context.new_page(), app.base_url)
    new_tab.page.emulate_media(color_scheme=system)
    new_tab.open("encoder", min_plots=1)
    assert new_tab.page.evaluate(DARK) == (chosen == "Dark"), "a link opened in a new tab"
    assert new_tab.requests_off_loopback() == []
