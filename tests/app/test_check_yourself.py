"""Predict, then check: what every lesson's exercises share (lessons.common.exercises and the section that
asks them, lessons.common.ui.check_yourself). Each lesson's own exercises are tested beside the lesson."""

from __future__ import annotations

import importlib
import math
import pkgutil
import re

import pytest

from harness.apptest import HOSTILE_TEXTS, answer_exercise, assert_clean, exercise_field, open_exercise, open_page
from harness.hostile import problems_after
from lessons.common.exercises import Exercise, options_around
from lessons.common.ui import check_yourself

PAGE = "lesson_pages/tokenization.py"


def test_a_number_is_right_within_the_stated_tolerance_and_not_beyond():
    exercise = Exercise(
        "Softmax of [0, ln 3]: the second weight?", answer=0.75, explanation="", tolerance=0.01, decimals=2
    )
    assert exercise.is_right(0.75) and exercise.is_right(0.74) and exercise.is_right(0.76)
    assert not exercise.is_right(0.7599 + 0.002) and not exercise.is_right(0.73)
    assert not exercise.is_right(None) and not exercise.is_right(math.nan) and not exercise.is_right(math.inf)
    assert exercise.shown_answer() == "0.75 (answers within ±0.01 count)"


def test_a_choice_is_right_only_for_its_answer_and_the_answer_must_be_offered():
    exercise = Exercise("Which?", answer="b", explanation="", options=("a", "b", "c"))
    assert exercise.is_right("b") and not exercise.is_right("a") and not exercise.is_right("B")
    with pytest.raises(ValueError, match="not one of the options"):
        Exercise("Which?", answer="d", explanation="", options=("a", "b"))
    with pytest.raises(ValueError, match="needs a number"):
        Exercise("How many?", answer="four", explanation="")


def test_an_exercise_is_named_by_its_question_and_options_never_by_its_answer():
    asked = [Exercise("Which?", answer=option, explanation="", options=("a", "b", "c")) for option in "abc"]
    assert len({exercise.identity for exercise in asked}) == 1  # nothing in the browser tells them apart
    assert Exercise("Which one?", answer="a", explanation="", options=("a", "b")).identity != asked[0].identity


def test_the_options_around_an_answer_are_its_nearest_neighbours_in_order():
    assert options_around(6, [1, 2, 5, 6, 7, 9, 20]) == (5, 6, 7, 9)
    assert options_around(1, [1, 2]) == (1, 2)


def test_a_lesson_opens_with_no_exercise_and_its_figures_in_place():
    app = open_page(PAGE, text="a cat sat")
    assert_clean(app)
    assert app.session_state[check_yourself.KEY] == check_yourself.NOT_NOW
    assert not [widget for widget in [*app.radio, *app.number_input] if (widget.key or "").startswith("exercise_")]
    assert app.get("plotly_chart")


def test_a_link_opens_its_exercise_and_a_name_the_lesson_lacks_is_reported():
    app = open_exercise(PAGE, "count", text="a cat sat")
    assert exercise_field(app) is not None
    assert app.query_params[check_yourself.KEY] == "count"
    unknown = open_exercise(PAGE, "nosuchexercise", text="a cat sat")
    assert_clean(unknown)
    assert any("nosuchexercise" in item.value for item in unknown.warning)
    assert unknown.session_state[check_yourself.KEY] == check_yourself.NOT_NOW


def test_check_without_an_answer_asks_for_one_and_reveals_nothing():
    app = open_exercise(PAGE, "count", text="a cat sat")
    app.button(key=f"{exercise_field(app).key}_check").click().run()
    assert [item.value for item in app.warning] == ["Choose or type an answer first, then press Check."]
    assert not app.success and not app.error
    assert not app.get("plotly_chart")


def test_the_tally_counts_the_first_answer_to_each_exercise_of_the_session():
    app = answer_exercise(open_exercise(PAGE, "count", text="a cat"), 4)  # right: [CLS] a cat [SEP]
    assert "This session: 1 of 1 exercise answered right." in [item.value for item in app.caption]
    app.session_state["text"] = "a dog"  # another text: another question
    app.run()
    assert exercise_field(app) is not None
    answer_exercise(app, 9)  # wrong
    assert "This session: 1 of 2 exercises answered right." in [item.value for item in app.caption]


@pytest.mark.parametrize("name", list(HOSTILE_TEXTS))
def test_a_hostile_text_is_asked_about_literally(name):
    text = HOSTILE_TEXTS[name]
    app = open_exercise(PAGE, "pieces", text=text)
    assert problems_after(app, text) == []
    if app.radio or app.number_input:
        question = next(item.value for item in app.markdown if item.value.startswith("Into how many tokens"))
        asked = re.search("“(.+)”", question)[1]
        assert asked.replace("\\", "") in text  # the word as typed, only escaped for markdown
        answer_exercise(app, 1)
        assert problems_after(app, text) == []


LESSONS = [info.name for info in pkgutil.iter_modules(["lessons"]) if info.ispkg and info.name != "common"]
EVERY_EXERCISE = [
    (lesson, name) for lesson in LESSONS for name in importlib.import_module(f"lessons.{lesson}.exercises").OFFERS
]


# What the default page lacks for an exercise, as the message it shows instead says it (each is asked in its
# lesson's tests on a page that has it).
NEEDS_MORE_THAN_THE_DEFAULT = {
    ("encoder", "fill-mask"): "saved without its masked-language-model head",  # the embedded MiniLM
}


@pytest.mark.parametrize(("lesson", "name"), EVERY_EXERCISE)
def test_every_exercise_opens_from_a_link_on_the_default_text_and_asks_before_it_reveals(lesson, name):
    app = open_exercise(f"lesson_pages/{lesson}.py", name)
    assert_clean(app)
    if (lesson, name) in NEEDS_MORE_THAN_THE_DEFAULT:
        assert [
            widget for widget in [*app.radio, *app.number_input] if (widget.key or "").startswith("exercise_")
        ] == []
        assert NEEDS_MORE_THAN_THE_DEFAULT[lesson, name] in " ".join(str(box.value) for box in app.info)
        return
    assert exercise_field(app) is not None, "the default text gives every exercise something to ask"
    assert not app.success and not app.error
    assert any(check_yourself.HELD_BACK == item.value for item in app.caption)


def test_every_lesson_offers_at_least_two_exercises():
    for lesson in LESSONS:
        assert len(importlib.import_module(f"lessons.{lesson}.exercises").OFFERS) >= 2, lesson
