"""The training lesson's exercises: the loss a model that knows nothing starts from, and how many parameters the
chosen model has. The page asks them before it trains or shows an outcome, and reveals them only after Check."""

from __future__ import annotations

import math

import pytest
import torch

from anatomy.training.recipes import RECIPES
from harness.apptest import HOSTILE_TEXTS, answer_exercise, assert_clean, open_exercise, open_page, payload
from lessons.common.safe_text import escape_markdown
from lessons.training import links
from lessons.training import live as live_training
from lessons.training.exercises import parameter_total, starting_loss

PAGE = "lesson_pages/training.py"
SORTER, REVERSER = RECIPES["sorter"], RECIPES["reverser"]
pytestmark = pytest.mark.usefixtures("one_thread")


def buttons(app) -> list[str]:
    return [button.key for button in app.button]


def test_a_model_that_knows_nothing_starts_from_ln_30_within_five_hundredths():
    exercise = starting_loss(SORTER, seed=0)
    assert exercise.answer == pytest.approx(math.log(30)) == pytest.approx(3.4012, abs=1e-4)
    assert exercise.is_right(3.40) and exercise.is_right(3.36) and exercise.is_right(3.45)
    assert not exercise.is_right(3.35) and not exercise.is_right(3.46) and not exercise.is_right(0.0)
    assert "30 tokens, 26 letters and 4 special ones" in exercise.question
    assert "within ±0.05" in exercise.question


@pytest.mark.parametrize(("recipe", "seed"), [(SORTER, 0), (REVERSER, 7)])
def test_the_fresh_models_first_loss_is_the_loss_its_first_training_step_reports(recipe, seed):
    bets = live_training.first_bets(recipe, seed)
    settings = live_training.live_settings(recipe, 1, 3e-3, seed)
    _, run = live_training.train_fresh(recipe, settings, seed, torch.device("cpu"))
    assert bets.loss == pytest.approx(run.losses[0], abs=1e-6)
    # Nearly an even bet: every token between half and twice 1/30, and the loss within 0.1 of ln 30.
    assert bets.probabilities.sum().item() == pytest.approx(1.0, abs=1e-5)
    assert ((bets.probabilities > 0.5 / 30) & (bets.probabilities < 2 / 30)).all()
    assert abs(bets.loss - math.log(30)) < 0.1
    assert bets.tokens[:4] == ("<pad>", "<bos>", "<eos>", "=") and len(bets.tokens) == 30


def test_the_reveal_sets_the_seeds_own_first_loss_beside_ln_30():
    first, other = starting_loss(SORTER, seed=0), starting_loss(SORTER, seed=7)
    measured = live_training.first_bets(SORTER, 7).loss
    assert f"measured **{measured:.3f}** on the 64 words" in other.explanation
    assert first.explanation != other.explanation and first.question != other.question
    assert first.answer == other.answer  # the seed changes the measurement, never ln 30
    figure = other.figure()
    assert list(figure.data[0].x[:4]) == ["&lt;pad&gt;", "&lt;bos&gt;", "&lt;eos&gt;", "="]  # shown, not read as HTML
    assert figure.layout.shapes[0].y0 == pytest.approx(1 / 30)
    assert f"loss {measured:.3f}, ln 30 = 3.401" in figure.layout.title.subtitle.text


@pytest.mark.parametrize(("recipe", "total", "tolerance"), [(SORTER, 103_232, 10_000), (REVERSER, 89_088, 9_000)])
def test_the_parameter_count_is_the_fresh_models_own_within_a_tenth(recipe, total, tolerance):
    exercise = parameter_total(recipe, seed=0)
    model = live_training.fresh_model(recipe, seed=0)
    assert exercise.answer == sum(parameter.numel() for parameter in model.parameters()) == total
    assert exercise.tolerance == tolerance and f"within ±{tolerance:,}" in exercise.question
    assert exercise.is_right(total + tolerance) and not exercise.is_right(total + tolerance + 1)


def test_the_rule_of_twelve_d_squared_per_block_is_close_enough_for_the_sorter():
    exercise = parameter_total(SORTER, seed=0)
    blocks = 2 * 12 * 64**2  # attention 4·D², feed-forward 2·D·4D
    tables = (30 + 19) * 64
    assert exercise.is_right(blocks + tables)  # 101,440: biases and norms are the rest
    assert "feed-forward (all layers) 66,176" in exercise.explanation
    assert "the blocks hold 97% of the model" in exercise.explanation
    assert "decoder of 2 blocks" in exercise.question and "F = 256" in exercise.question


def test_the_reversers_question_names_its_two_halves_and_its_reveal_counts_the_cross_attention():
    exercise = parameter_total(REVERSER, seed=0)
    assert "an encoder of 1 block" in exercise.question and "cross-attention" in exercise.question
    assert "decoder cross-attention (all layers) 16,768" in exercise.explanation
    (bars,) = exercise.figure().data
    assert bars.y[-1] == "decoder cross-attention (all layers)"  # the largest part, drawn at the top


def test_while_the_exercise_waits_the_page_neither_trains_nor_shows_the_answer():
    app = open_exercise(PAGE, "starting-loss")
    assert_clean(app)
    assert "tr_train" not in buttons(app), "a run's loss curve starts at the answer"
    assert "3.401" not in payload(app) and "whichever letter is right" not in payload(app)
    assert not app.get("plotly_chart")
    answer_exercise(app, 3.4)
    assert_clean(app)
    assert [item.value for item in app.success] == [f"Right: {escape_markdown('3.40 (answers within ±0.05 count)')}."]
    assert "whichever letter is right" in payload(app)
    assert app.get("plotly_chart"), "the reveal draws the fresh model's bets"
    assert "tr_train" in buttons(app), "answered, the learner may train again"


def test_a_wrong_parameter_count_is_told_the_right_one():
    app = answer_exercise(open_exercise(PAGE, "parameters", query={links.MODEL: "reverser"}), 50_000)
    assert_clean(app)
    answer = escape_markdown("89,088 (answers within ±9,000 count)")
    assert [item.value for item in app.error] == [f"You answered 50,000; the answer is {answer}."]
    assert "89,088" in payload(app)


@pytest.mark.slow
def test_a_finished_runs_outcome_is_held_back_while_an_exercise_waits():
    app = open_page(PAGE, query={links.STEPS: "20"})
    app.button(key="tr_train").click().run()
    assert app.metric and app.get("plotly_chart")
    app.session_state["exercise"] = "starting-loss"  # as picking the exercise does
    app.run()
    assert_clean(app)
    assert not app.metric and not app.get("plotly_chart") and "Loss at every step" not in payload(app)


@pytest.mark.parametrize("name", HOSTILE_TEXTS)
def test_hostile_text_and_a_hostile_example_word_leave_the_open_exercise_clean(name):
    app = open_exercise(PAGE, "parameters", text=HOSTILE_TEXTS[name], query={links.WORD: HOSTILE_TEXTS[name]})
    assert_clean(app)
    assert "How many parameters does training adjust?" in payload(app)
