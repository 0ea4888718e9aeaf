"""The address bar describes exactly the view on screen, and the Back button steps through the views a learner
chose (issue 28): a model that is cleared or fails leaves the link, a page's address carries only its own
lesson's keys and the shared ones, and a choice made on a page adds one history entry, not one per key.
"""

from __future__ import annotations

import importlib
from urllib.parse import parse_qsl, urlsplit

from harness.browser import AppPage

SHARED_KEYS = {"text", "model", "present", "tour", "stop", "exercise"}  # the sidebar's, the tour's, check-yourself's
TEXT = "time flies like an arrow"
SMOLLM2 = "SmolLM2-135M-Instruct"


def model_in_use(app: AppPage) -> str:
    """The sidebar's line naming the model that runs ("all-MiniLM-L6-v2 · 6 layers · 12 heads · width 384")."""
    return sidebar_captions(app, " layers · ").inner_text()


def sidebar_captions(app: AppPage, containing: str):
    return app.page.locator('[data-testid="stSidebar"] [data-testid="stCaptionContainer"]', has_text=containing)


def type_model(app: AppPage, model: str, then_in_use: str) -> None:
    """Type `model` into the sidebar's Model field, press Enter, and wait until `then_in_use` runs."""
    field = app.page.get_by_role("textbox", name="Model", exact=True)
    field.fill(model)
    field.press("Enter")
    sidebar_captions(app, then_in_use).wait_for()
    app.wait_until_painted()


def test_clearing_the_model_field_or_a_model_that_fails_takes_the_model_out_of_the_link(app, open_app):
    app.open("causal", text=TEXT, cm_tab="One head on your text")
    type_model(app, SMOLLM2, then_in_use=SMOLLM2)
    assert app.query()["model"] == SMOLLM2
    type_model(app, "", then_in_use="all-MiniLM-L6-v2")
    assert "model" not in app.query(), "MiniLM is on screen: the link must not name SmolLM2"
    type_model(app, SMOLLM2, then_in_use=SMOLLM2)
    type_model(app, "/no/such/folder", then_in_use="all-MiniLM-L6-v2")  # it fails: the embedded model stands in
    assert "model" not in app.query(), "MiniLM is on screen: the link must not name SmolLM2"
    someone_else = open_app()
    someone_else.page.goto(app.page.url, wait_until="domcontentloaded")
    someone_else.wait_until_painted()
    assert model_in_use(someone_else) == model_in_use(app)
    assert someone_else.title() == app.title()


def lesson_keys(path: str) -> set[str]:
    """The link keys of the lesson at `path` ("/multihead"); none for the welcome page."""
    name = path.strip("/")
    if not name:
        return set()
    links = importlib.import_module(f"lessons.{name}.links")
    return {value for key, value in vars(links).items() if key.isupper() and isinstance(value, str)}


def foreign_keys(address: str) -> set[str]:
    """The keys of `address` that belong neither to its own lesson nor to every page."""
    parts = urlsplit(address)
    return {key for key, _ in parse_qsl(parts.query, keep_blank_values=True)} - SHARED_KEYS - lesson_keys(parts.path)


def test_back_returns_through_the_views_chosen_with_one_entry_per_choice_and_no_other_lessons_keys(app):
    page = app.page
    entries = lambda: page.evaluate("history.length")  # noqa: E731
    app.open("", text=TEXT)
    welcome = page.url
    grown = []
    navigation = page.locator('[data-testid="stSidebarNav"]')

    def then(action) -> None:
        before = entries()
        action()
        page.wait_for_timeout(200)
        app.wait_until_painted()
        grown.append(entries() - before)
        assert foreign_keys(page.url) == set(), page.url

    then(lambda: navigation.get_by_role("link", name="Tokenization").click())
    then(lambda: page.get_by_role("tab", name="Tokens → vectors").click())
    then(lambda: navigation.get_by_role("link", name="Scaled dot-product attention").click())
    main = page.get_by_test_id("stMainBlockContainer")
    then(lambda: main.get_by_role("link", name="Multi-head comparison").click())  # the lesson's Next link
    assert grown == [1, 1, 1, 1], f"entries each view added: {grown}"
    presses = 0
    while page.url != welcome and presses < 40:
        page.go_back()
        presses += 1
        page.wait_for_timeout(200)
        app.wait_until_painted()
        assert foreign_keys(page.url) == set(), page.url
    assert page.url == welcome
    assert presses == sum(grown), "every entry on the way back is one that a view left"
    assert presses == 4, f"{presses} presses of Back to return through four views"


def test_a_choice_made_on_a_link_that_already_names_every_key_is_an_entry_of_its_own(app, open_app):
    # The page's first run leaves such a link as it is: no new address comes, and the entry the tab opened with
    # must still not be taken over by the learner's first choice.
    app.open("multihead", text=TEXT)
    complete = app.page.url
    learner = open_app()
    learner.page.goto(complete, wait_until="domcontentloaded")
    learner.wait_until_painted()
    page = learner.page
    assert page.url == complete
    opened_with = page.evaluate("history.length")
    page.get_by_role("tab", name="Head view").click()
    learner.wait_until_painted()
    assert page.url != complete and page.evaluate("history.length") == opened_with + 1
    page.go_back()
    learner.wait_until_painted()
    assert page.url == complete
    assert page.get_by_role("tab", selected=True).inner_text() == "All heads"


def test_each_stop_of_a_tour_is_one_entry_and_back_returns_through_the_stops(app):
    page = app.page
    app.open("", text=TEXT, tour="default", stop=1)
    titles = [app.title()]
    grown = []
    for number in (2, 3, 4):
        before = page.evaluate("history.length")
        page.get_by_role("button", name="Next").click()
        page.wait_for_function("(n) => new URLSearchParams(location.search).get('stop') === String(n)", arg=number)
        page.wait_for_timeout(200)
        app.wait_until_painted()
        grown.append(page.evaluate("history.length") - before)
        titles.append(app.title())
    assert grown == [1, 1, 1], f"entries each stop added: {grown}"
    for number in (3, 2, 1):
        page.go_back()
        page.wait_for_function("(n) => new URLSearchParams(location.search).get('stop') === String(n)", arg=number)
        app.wait_until_painted()
        assert app.title() == titles[number - 1], f"stop {number}"
