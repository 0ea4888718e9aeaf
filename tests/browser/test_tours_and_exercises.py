"""A guided tour and an exercise in Chromium: clicked and keyed through as a lecturer and a student would."""

from __future__ import annotations

from pathlib import Path

from lessons.common import tours
from lessons.common.ui import tour as tour_ui

STOPS = len(tours.shipped_tours(tour_ui.pages())["default"].stops)


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
    assert "tour" not in app.query()


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
