"""What a newcomer hit by clicking: a crash that stayed until reload, and pickers naming tokens of an old text.

Both come from the browser's own widgets, which AppTest does not imitate: a keyed selectbox keeps its identity
when its options change, goes on showing its old label, and sends that label back as its value. These tests
click through the very sequences that broke, in Chromium.
"""

from __future__ import annotations

from playwright.sync_api import TimeoutError as PlaywrightTimeoutError

from harness.browser import AppPage

ATTENTION = "attention"
TEXT_SOURCES = ("Your text, Q = K = V", "Your text, a model head")


def picker(app: AppPage, label: str):
    return app.page.locator('[data-testid="stSelectbox"]').filter(has=app.page.get_by_text(label, exact=True)).first


def shown(app: AppPage, label: str) -> str:
    """The value a picker shows as chosen."""
    return picker(app, label).locator('input[role="combobox"]').input_value()


def open_list(app: AppPage, label: str) -> None:
    """Open a picker's list of options. The picker is scrolled into view first and left to settle: a list
    opened while the page still scrolls is closed again at once (react-aria closes it on scroll)."""
    box = picker(app, label)
    box.scroll_into_view_if_needed()
    listed = app.page.locator('[role="listbox"] [role="option"]')
    for _ in range(3):
        app.page.wait_for_timeout(300)
        box.locator('button[aria-label="Open"]').click()
        try:
            listed.first.wait_for(timeout=5_000)
            return
        except PlaywrightTimeoutError:
            continue
    listed.first.wait_for()  # a last wait, with the default timeout, that reports the failure


def options(app: AppPage, label: str) -> list[str]:
    """A picker's options, read by opening it (then closed again)."""
    open_list(app, label)
    listed = app.page.locator('[role="listbox"] [role="option"]')
    texts = listed.all_inner_texts()
    app.page.keyboard.press("Escape")
    return [text.strip() for text in texts]


def choose(app: AppPage, label: str, option: str) -> None:
    open_list(app, label)
    app.page.locator('[role="listbox"] [role="option"]').filter(has_text=option).first.click()
    app.wait_until_painted()


def click_segment(app: AppPage, name: str) -> None:
    app.page.get_by_role("radio", name=name, exact=True).click()
    app.wait_until_painted()


def type_text(app: AppPage, text: str) -> None:
    app.type_text(text)
    app.page.wait_for_function("(text) => new URL(location.href).searchParams.get('text') === text", arg=text)
    app.wait_until_painted()


def test_from_the_apple_example_to_the_text_and_back_never_crashes(app: AppPage):
    app.open(ATTENTION)
    click_segment(app, "“I love Apple iPhones”")
    choose(app, "Follow the query of", "1: love")
    for source in (*TEXT_SOURCES, "“I love mathematics” (editable)"):
        click_segment(app, source)
        assert app.exceptions() == [], f"after choosing {source}"
        assert shown(app, "Follow the query of") in options(app, "Follow the query of")


def test_a_followed_token_that_a_shorter_text_lacks_neither_crashes_nor_lingers(app: AppPage):
    app.open(ATTENTION, att_source="model", text="time flies like an arrow")
    choose(app, "Follow the query of", "5: arrow")
    for text in ("hi there", "time flies like an arrow"):
        type_text(app, text)
        assert app.exceptions() == [], f"after typing {text!r}"
        assert shown(app, "Follow the query of") in options(app, "Follow the query of")
    assert shown(app, "Follow the query of") == "1: time"  # "hi there" has no token 5: back to the default


def test_after_a_new_text_the_pickers_name_its_own_tokens(app: AppPage):
    app.open(ATTENTION, att_source="model", text="time flies like an arrow")
    choose(app, "Follow the query of", "5: arrow")
    choose(app, "against the key of", "2: flies")
    type_text(app, "the bank raised rates")
    assert shown(app, "Follow the query of") == "5: [SEP]"  # [CLS] the bank raised rates [SEP]
    assert shown(app, "against the key of") == "2: bank"
    for label in ("Follow the query of", "against the key of"):
        assert options(app, label) == ["0: [CLS]", "1: the", "2: bank", "3: raised", "4: rates", "5: [SEP]"]


def test_the_apple_example_offers_only_its_own_words(app: AppPage):
    app.open(ATTENTION)
    assert shown(app, "against the key of") == "2: mathematics"  # the default key of the toy example
    click_segment(app, "“I love Apple iPhones”")
    assert options(app, "against the key of") == ["0: I", "1: love", "2: Apple", "3: iPhones"]
    assert shown(app, "against the key of") == "2: Apple"  # the same position, its own word


def test_the_recombined_token_is_a_token_of_the_current_text(app: AppPage):
    app.open("multihead", mh_tab="Split and recombine", text="hi there")
    choose(app, "Token", "1: hi")
    type_text(app, "time flies like an arrow")
    assert shown(app, "Token") == "1: time"
    assert "1: time" in options(app, "Token")
