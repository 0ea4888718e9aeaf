"""The positional lesson's exercises: asked at the last position the learner's text uses, answered by the
sinusoidal table `anatomy.positional` builds, held to the closed forms written out here with numpy, and revealed
only once the learner has committed."""

from __future__ import annotations

import math

import numpy as np
import pytest

from harness.apptest import HOSTILE_TEXTS, answer_exercise, assert_clean, exercise_field, open_exercise, payload
from harness.hostile import problems_after
from lessons.positional import links
from lessons.positional.exercises import (
    OFFERED_DISTANCES,
    encoding_value,
    nearest_position,
    offered_positions,
    rotary_period,
)

PAGE = "lesson_pages/positional.py"
TEXT = "time flies like an arrow"  # [CLS] time flies like an arrow [SEP]: positions 0 to 6
SHOWN = 64


def sinusoidal_cosine(distance: int, width: int, base: float = 10_000.0) -> float:
    """The cosine of two positions `distance` apart, in closed form: each of the d/2 sine/cosine pairs adds
    cos(ω_k · distance) to their dot product, and every row has squared length d/2."""
    frequencies = base ** (-np.arange(0, width, 2) / width)
    return float(np.cos(frequencies * distance).sum() / (width / 2))


# ----- the most alike position -------------------------------------------------------------------------------


def test_the_most_alike_position_at_the_models_width_is_the_neighbour():
    exercise = nearest_position(7, 384, 10_000.0, SHOWN)
    assert exercise.options == ("3", "7", "12", "16")  # 3 before position 6; 1, 6 and 10 after it
    cosines = {int(option): sinusoidal_cosine(abs(int(option) - 6), 384) for option in exercise.options}
    assert exercise.answer == str(max(cosines, key=cosines.__getitem__)) == "7"
    assert f"7 (1 away): {cosines[7]:.4f}" in exercise.explanation
    assert "falls as the distance grows" in exercise.explanation


def test_in_a_narrow_table_a_farther_position_can_be_the_most_alike():
    exercise = nearest_position(7, 8, 10_000.0, SHOWN)
    cosines = {int(option): sinusoidal_cosine(abs(int(option) - 6), 8) for option in exercise.options}
    assert cosines[12] > cosines[7]  # 6 apart: cos 6 ≈ 0.96 in the fastest pair, against cos 1 ≈ 0.54
    assert exercise.answer == "12"
    assert "The nearest offered position is not the most alike" in exercise.explanation


def test_the_question_follows_the_text():
    short, longer = nearest_position(7, 384, 10_000.0, SHOWN), nearest_position(12, 384, 10_000.0, SHOWN)
    assert longer.options == ("1", "8", "12", "17") and longer.answer == "12"  # around position 11
    assert short.question != longer.question and short.answer != longer.answer


@pytest.mark.parametrize("position", [0, 1, 2, 5, 9, 10, 11, 300])
def test_no_two_offered_positions_are_the_same_distance_away(position):
    offered = offered_positions(position)
    assert sorted(abs(other - position) for other in offered) == sorted(OFFERED_DISTANCES)
    assert all(other >= 0 for other in offered) and list(offered) == sorted(offered)


def test_a_page_without_a_text_has_no_position_to_ask_about():
    assert nearest_position(0, 384, 10_000.0, SHOWN) is None
    assert encoding_value(0, 384, 10_000.0, SHOWN) is None
    assert encoding_value(1, 384, 10_000.0, SHOWN) is None  # position 0 alone: every sine is 0


# ----- one value of the table ----------------------------------------------------------------------------------


def test_the_value_asked_is_the_sine_near_d_over_8_at_the_texts_last_position():
    exercise = encoding_value(7, 384, 10_000.0, SHOWN)
    assert "component i = 48" in exercise.question and "position t = 6" in exercise.question
    assert exercise.answer == pytest.approx(math.sin(6 * 10_000 ** (-48 / 384)), abs=1e-6)
    assert exercise.answer == pytest.approx(0.9471, abs=1e-4)
    assert "±0.01" in exercise.question and exercise.tolerance == 0.01 and exercise.decimals == 2
    assert exercise.is_right(0.94) and exercise.is_right(0.955) and not exercise.is_right(0.96)


def test_the_value_follows_the_text_the_width_and_the_base():
    longer = encoding_value(12, 384, 10_000.0, SHOWN)
    assert longer.answer == pytest.approx(math.sin(11 * 10_000 ** (-48 / 384)), abs=1e-6)  # ≈ −0.33
    narrow = encoding_value(7, 8, 10_000.0, SHOWN)  # i = 0: the fastest sine, sin(6)
    assert narrow.answer == pytest.approx(math.sin(6), abs=1e-6)
    other_base = encoding_value(7, 384, 100.0, SHOWN)
    assert other_base.answer == pytest.approx(math.sin(6 * 100 ** (-48 / 384)), abs=1e-6)


# ----- a rotary pair's turn ---------------------------------------------------------------------------------


def test_the_rotary_period_is_two_pi_over_theta_to_the_minus_2k_over_d_for_smollm2s_middle_pair():
    exercise = rotary_period(7, 384, 10_000.0, SHOWN)
    # SmolLM2: θ = 100000, heads of 576 / 9 = 64 coordinates; pair k = 64 / 8 = 8
    assert exercise.answer == pytest.approx(2 * math.pi / 100_000.0 ** (-2 * 8 / 64), rel=1e-6)
    assert round(exercise.answer) == 112
    assert "pair k = 8" in exercise.question and "θ = 100000" in exercise.question
    assert "= 111.7$ positions" in exercise.explanation


def test_a_rotary_period_within_one_position_is_right_and_two_away_is_not():
    app = open_exercise(PAGE, "rotary", text=TEXT)
    assert_clean(app)
    assert "111.7" not in payload(app)
    right = answer_exercise(app, 112)
    assert right.success and not right.error
    assert "111.7" in payload(right)
    wrong = answer_exercise(open_exercise(PAGE, "rotary", text=TEXT), 114)
    assert wrong.error and not wrong.success


# ----- on the page --------------------------------------------------------------------------------------------


def test_the_page_holds_back_its_tabs_until_check_then_shows_the_cosines_and_rings_the_answer():
    app = open_exercise(PAGE, "nearest", text=TEXT)
    assert_clean(app)
    assert not app.get("plotly_chart"), "the curves and similarity charts would give the answer away"
    assert "1 away" not in payload(app) and "0.9727" not in payload(app)
    answer_exercise(app, "7")
    assert_clean(app)
    assert [item.value for item in app.success] == ["Right: 7."]
    assert "7 (1 away): 0.9727" in payload(app)
    assert "cosine(6, 7) = 0.9727" in payload(app), "the reveal's figure rings the answer"


def test_a_wrong_position_is_told_the_right_one():
    app = answer_exercise(open_exercise(PAGE, "nearest", text=TEXT, query={links.WIDTH: "8"}), "7")
    assert [item.value for item in app.error] == ["You answered 7; the answer is 12."]


def test_a_value_within_the_tolerance_is_right_and_one_beyond_it_is_not():
    app = open_exercise(PAGE, "value", text=TEXT)
    assert exercise_field(app).type == "number_input"
    assert "0.9471" not in payload(app)
    right = answer_exercise(app, 0.95)
    assert right.success and not right.error
    assert "0.9471" in payload(right) and "p_48(6) = 0.9471" in payload(right)
    wrong = answer_exercise(open_exercise(PAGE, "value", text=TEXT), 0.93)
    assert wrong.error and not wrong.success


ASKS_ABOUT_THE_TEXTS_TOKENS = ("nearest", "value")  # the rotary exercise asks about the model, whatever the text


@pytest.mark.slow
@pytest.mark.parametrize("name", HOSTILE_TEXTS)
@pytest.mark.parametrize("exercise", ["nearest", "value", "rotary"])
def test_hostile_texts_give_a_clean_page_with_the_exercise_open(name, exercise):
    text = HOSTILE_TEXTS[name]
    app = open_exercise(PAGE, exercise, text=text)
    assert problems_after(app, text) == []
    asked = [widget for widget in (*app.radio, *app.number_input) if str(widget.key).startswith("exercise_")]
    explained = any("This exercise has nothing to ask about" in item.value for item in app.info)
    if exercise in ASKS_ABOUT_THE_TEXTS_TOKENS and not text.strip():  # no token: nothing of the text to ask about
        assert not asked and explained
    else:
        assert len(asked) == 1 and not explained
