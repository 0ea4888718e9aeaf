"""A guided tour and an exercise in Chromium: clicked and keyed through as a lecturer and a student would."""

from __future__ import annotations

import re
from pathlib import Path

from playwright.sync_api import expect

from lessons.common import tours
from lessons.common.ui import tour as tour_ui

STOPS = len(tours.shipped_tours(tour_ui.pages())["default"].stops)
LINK_WITHOUT_TOUR = re.compile(r"^(?!.*[?&](tour|stop)=)")  # an address whose query names no tour and no stop


def progress_text(app) -> str:
    return app.page.locator('[data-testid="stProgress"]').first.inner_text()


def wait_for_stop(app, number: int) -> None:
    app.page.wait_for_function(
        "(number) => new URLSearchParams(location.search).get('stop') === String(number)", arg=number, timeout=30_000
    )
    app.wait_until_painted()


def test_the_default_tour_is_clicked_and_keyed_through_end_to_end(app):
    app.open("", tour="default", stop=1)
    assert f"stop 1 of {STOPS}" in progress_text(app)
    app.screenshot("tour-stop-1")
    assert app.layout_problems() == []
    app.page.get_by_role("button", name="Next").click()
    wait_for_stop(app, 2)
    assert app.title() == "Tokenization" and f"stop 2 of {STOPS}" in progress_text(app)
    for number in range(3, STOPS + 1):  # the rest by the keyboard, as a lecturer at a projector would
        app.page.locator("h1").first.click()  # focus on the page, outside any field
        app.page.keyboard.press("ArrowRight")
        wait_for_stop(app, number)
        assert not app.exceptions(), f"stop {number}"
    assert app.page.get_by_role("button", name="Next").is_disabled()
    app.page.locator("h1").first.click()
    app.page.keyboard.press("ArrowLeft")
    wait_for_stop(app, STOPS - 1)
    app.page.get_by_role("button", name="End the tour").click()
    app.page.locator('[data-testid="stProgress"]').wait_for(state="detached")
    # The bar goes as soon as the page's run draws something in its place; the address is written once, when
    # that run ends (linked.write_address), so the test waits for it rather than reading it at once.
    expect(app.page).to_have_url(LINK_WITHOUT_TOUR, timeout=30_000)


def test_a_teacher_uploads_a_tour_file_and_starts_it(app, tmp_path: Path):
    path = tmp_path / "my-class.toml"
    path.write_text(
        'title = "My class"\n[[stop]]\nlink = "causal"\ntext = "one two three"\nnotes = "**not bold**"\n'
        '[[stop]]\nlink = "encoder"\n',
        encoding="utf-8",
    )
    app.open("")
    app.page.get_by_text("Guided tour").click()
    app.page.locator('[data-testid="stFileUploaderDropzoneInput"]').set_input_files(str(path))
    app.page.get_by_role("button", name="Start your tour").click()
    wait_for_stop(app, 1)
    assert app.title() == "Causal masking" and "stop 1 of 2" in progress_text(app)
    assert app.page.get_by_text("**not bold**").is_visible(), "a file's markup is shown as written"
    assert app.page.get_by_text("This stop uses its own sentence, now in the sidebar: “one two three”").is_visible()
    app.screenshot("tour-uploaded")


def test_an_exercise_is_answered_and_revealed_with_its_figure(app):
    app.open("tokenization", text="Tokenizers meet antidisestablishmentarianism.", exercise="pieces")
    assert app.plot_count() == 0, "the lesson's figures wait for the answer"
    app.screenshot("exercise-asked")
    field = app.page.get_by_label("Your answer")
    field.fill("8")
    app.page.get_by_role("button", name="Check", exact=True).click()
    app.page.get_by_text("Right: 8.").wait_for()
    app.wait_until_painted(min_plots=2)
    app.screenshot("exercise-revealed")
    assert not app.exceptions() and app.layout_problems() == []


def test_an_exercise_is_answered_with_the_keyboard_alone(app):
    """Tab to the choices, arrow keys to choose, Tab to Check, Enter: no mouse."""
    app.open("multihead", text="time flies like an arrow", exercise="previous")
    app.page.get_by_text("Which of the 12 heads").click()  # a place on the page, before the answer field
    for _ in range(10):  # Tab until a choice has the keyboard
        app.page.keyboard.press("Tab")
        if app.page.evaluate("() => document.activeElement.type === 'radio'"):
            break
    assert app.page.evaluate("() => document.activeElement.type === 'radio'"), "Tab never reached the choices"
    for _ in range(2):  # head 0 → head 2: the previous-token head of layer 0 on this text
        app.page.keyboard.press("ArrowRight")
    app.page.keyboard.press("Tab")
    assert app.page.evaluate("() => document.activeElement.innerText.trim().endsWith('Check')")
    app.page.keyboard.press("Enter")
    app.page.get_by_text("Right: head 2.").wait_for()
    app.wait_until_painted(min_plots=1)


def go_to_lesson(app, title: str, path: str) -> None:
    """Another lesson, by the sidebar's navigation: the same browser session, so the tour being built stays."""
    app.page.locator('[data-testid="stSidebarNav"]').get_by_role("link", name=title).click()
    app.page.wait_for_url(f"**/{path}*")
    app.wait_until_painted()


def add_this_view(app, number: int) -> None:
    app.page.get_by_role("button", name="Add this view as a stop").click()
    app.page.locator(f".st-key-tour_build_{number - 1}_box").wait_for()
    app.wait_until_painted()


def test_a_lecturer_builds_a_tour_from_three_views_downloads_it_and_plays_it(app, tmp_path: Path):
    app.open("attention", att_source="toy", att_step=2)
    app.page.get_by_text("Build a tour").click()
    title = app.page.get_by_role("textbox", name="Tour title")
    title.fill("Attention, day 1")
    title.press("Enter")  # each field is sent with the next click, which waits for the stop it adds
    add_this_view(app, 1)
    go_to_lesson(app, "Multi-head comparison", "multihead")
    add_this_view(app, 2)
    notes = app.page.locator(".st-key-tour_build_1_notes textarea")
    notes.fill('Find the head that looks one token back: "previous".')
    notes.press("Control+Enter")
    go_to_lesson(app, "Causal masking", "causal")
    app.page.get_by_text("the sidebar's, now").click()  # this stop keeps the sentence in the sidebar
    add_this_view(app, 3)
    assert not app.exceptions()
    app.screenshot("tour-builder")
    assert app.layout_problems() == []
    with app.page.expect_download() as started:
        app.page.get_by_role("button", name="Download as TOML").click()
    assert started.value.suggested_filename == "attention-day-1.toml"
    path = tmp_path / started.value.suggested_filename
    started.value.save_as(path)
    built = tours.read_tour_file(path, tour_ui.pages())
    assert built.title == "Attention, day 1"
    assert [stop.page for stop in built.stops] == ["attention", "multihead", "causal"]
    assert dict(built.stops[0].query).items() >= {"att_source": "toy", "att_step": "2"}.items()
    assert built.stops[1].notes == 'Find the head that looks one token back: "previous".'
    assert (built.stops[0].text, built.stops[2].text) == ("", "time flies like an arrow")
    app.page.get_by_role("button", name="Play this tour").click()
    wait_for_stop(app, 1)
    assert app.title() == "Scaled dot-product attention, step by step"
    assert "Tour: Attention, day 1 · stop 1 of 3" in progress_text(app)
    assert app.query()["att_step"] == "2" and app.query()["tour"] == tour_ui.BUILT
    app.screenshot("tour-built-playing")
    assert not app.exceptions()
