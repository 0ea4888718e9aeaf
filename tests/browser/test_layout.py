"""Labels never sit on labels, and nothing is cut off, on any view, on a desktop, zoomed to 150 %, on a tablet,
on a phone, or in presentation style.

`harness.browser.LAYOUT_PROBLEMS` measures every label a chart draws (titles and subtitles, axis titles, tick
labels, annotations, legends, colour bars) as the shape its glyphs fill on screen, and reports labels that
overlap, labels drawn over a plot area, labels cut off by a chart's edge, a chart's toolbar over its labels (on a
phone it sat on the titles), numbers or letters written in heatmap cells that stand on their neighbours', Streamlit
labels shortened with an ellipsis, and a page that scrolls sideways.
Every view a link can open (harness/views.py) is checked at every size; on a phone, also the views that only a
click opens: each exercise's answer with its figure, and each step of the attention lesson's example.
"""

from __future__ import annotations

import importlib
import importlib.util

import pytest

from harness.browser import AppPage
from harness.views import VIEWS
from lessons.common.ui.frame import LESSONS

SIZES = {
    "desktop": (1280, 800),
    "zoom150": (853, 533),
    "tablet": (768, 1024),
    "phone": (390, 844),
    "present": (1280, 800),  # presentation style: every text 1.35 times larger
}
STYLES = {"present": {"present": "True"}}


@pytest.mark.slow
@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("name", VIEWS)
def test_no_label_is_drawn_over_another_or_cut_off(page, app_server, name, size):
    width, height = SIZES[size]
    page.set_viewport_size({"width": width, "height": height})
    app = AppPage(page, app_server.url)
    view = VIEWS[name]
    app.open(view.path, min_plots=view.charts, **view.query, **STYLES.get(size, {}))
    assert app.exceptions() == []
    problems = app.layout_problems()
    if problems:
        app.screenshot(f"layout-{size}-{name.replace('/', '--').replace(' ', '_')}")
    assert problems == []
    assert app.requests_off_loopback() == []


PHONE = SIZES["phone"]


def exercises_of(lesson: str) -> list[str]:
    """The names of a lesson's exercises (the welcome page, with no folder under lessons/, has none)."""
    if importlib.util.find_spec(f"lessons.{lesson}") is None or not importlib.util.find_spec(
        f"lessons.{lesson}.exercises"
    ):
        return []
    return list(importlib.import_module(f"lessons.{lesson}.exercises").OFFERS)


EXERCISES = [(lesson.name, name) for lesson in LESSONS for name in exercises_of(lesson.name)]
# The attention lesson's worked example (3 tokens, 4 features), one step at a time and all at once: the steps a
# lecture walks through with Next.
EXAMPLE_STEPS = {f"step {step}": {"att_step": step} for step in range(1, 6)} | {"all steps": {"att_all": "true"}}


def answer_the_exercise(app: AppPage) -> bool:
    """Give any answer and press Check (any answer reveals the answer and its figure); False where the exercise
    has nothing to ask on this text and model (the embedded MiniLM has no masked-language-model head)."""
    page = app.page
    number = page.get_by_role("spinbutton", name="Your answer")
    choices = page.get_by_role("radiogroup", name="Your answer")
    if number.count():
        number.fill("1")
    elif choices.count():
        choices.locator("label").first.click()
    else:
        return False
    page.get_by_role("button", name="Check", exact=True).click()
    page.locator('[data-testid="stAlertContentSuccess"], [data-testid="stAlertContentError"]').first.wait_for()
    app.wait_until_painted(min_plots=1)
    return True


@pytest.mark.slow
@pytest.mark.parametrize("lesson, exercise", EXERCISES)
def test_an_exercise_answered_on_a_phone_draws_no_label_over_another(page, app_server, lesson, exercise):
    """Found so (2026-11-29): the strongest key's one-row matrix two pixels high under its title, a bar chart's
    long axis title reaching into its subtitle, a subtitle on the axis title above a matrix."""
    page.set_viewport_size({"width": PHONE[0], "height": PHONE[1]})
    app = AppPage(page, app_server.url)
    app.open(lesson, exercise=exercise)
    if not answer_the_exercise(app):
        assert page.locator('[data-testid="stAlertContentInfo"]').count() == 1, "neither a question nor why not"
    assert app.exceptions() == []
    problems = app.layout_problems()
    if problems:
        app.screenshot(f"layout-phone-exercise-{lesson}-{exercise}")
    assert problems == []


@pytest.mark.slow
@pytest.mark.parametrize("step", EXAMPLE_STEPS)
def test_each_step_of_the_worked_example_on_a_phone_draws_no_label_over_another(page, app_server, step):
    """Found so (2026-11-29): beside the example's three rows, the colour bar's −40 to 40 stood on each other."""
    page.set_viewport_size({"width": PHONE[0], "height": PHONE[1]})
    app = AppPage(page, app_server.url)
    app.open("attention", min_plots=2, att_source="toy", **EXAMPLE_STEPS[step])
    assert app.exceptions() == []
    problems = app.layout_problems()
    if problems:
        app.screenshot(f"layout-phone-example-{step.replace(' ', '_')}")
    assert problems == []


# The tokenization lesson's strip draws the text one character a cell: a text of several lines, measured by the
# layout check (what heatmap cells write must not stand on each other).
STRIP_LETTERS = """() => [...document.querySelectorAll('.js-plotly-plot')]
  .find(plot => (plot.layout.title.text || '').replace(/<[^>]+>/g, '').startsWith('Where each token comes from'))
  .querySelectorAll('.heatmaplayer text').length"""
STRIP_TEXT = "The quick brown fox jumps over the lazy dog: WWWWW mmmmm 0123456789 (again)."


@pytest.mark.slow
@pytest.mark.parametrize("size", ["phone", "zoom150"])
def test_the_letters_of_the_token_strip_never_stand_on_each_other(page, app_server, size):
    """Found so (2026-11-30): at 64 characters a line, a phone's cells were 5 px wide for 9 px letters."""
    width, height = SIZES[size]
    page.set_viewport_size({"width": width, "height": height})
    app = AppPage(page, app_server.url)
    app.open("tokenization", min_plots=1, text=STRIP_TEXT)
    assert page.evaluate(STRIP_LETTERS) == len(STRIP_TEXT)  # every character drawn, a space as a middle dot
    problems = app.layout_problems()
    if problems:
        app.screenshot(f"layout-{size}-token-strip")
    assert problems == []
