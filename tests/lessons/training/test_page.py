"""The "Train it yourself" page: a learner's own training run, its limits, and the shipped model left alone.

Runs here are 20 to 40 steps (a second or two); the hosted-mode test gives a 5000-step run a 0.3 s budget.
"""

from __future__ import annotations

import hashlib
import threading
import time
from dataclasses import replace

import numpy as np
import pytest
from streamlit.runtime.scriptrunner_utils.exceptions import StopException
from streamlit.runtime.scriptrunner_utils.script_run_context import get_script_run_ctx

from anatomy.devices import choose_device, describe_device
from anatomy.training.recipes import RECIPES
from harness.apptest import assert_clean, numbers, open_page, plotly_figures
from harness.hostile import REPRESENTATIVE, TEXTS, problems_after
from lessons.common import hosting, training_slots
from lessons.common.ui import loaders
from lessons.training import links
from lessons.training import live as live_training

PAGE = "lesson_pages/training.py"
pytestmark = pytest.mark.usefixtures("one_thread")


@pytest.fixture
def not_hosted(monkeypatch):
    for name in (hosting.HOSTED_VARIABLE, hosting.TRAINING_BUDGET_VARIABLE, "ANATOMY_DEVICE"):
        monkeypatch.delenv(name, raising=False)
    return monkeypatch


def train(query: dict[str, str]):
    app = open_page(PAGE, query=query)
    app.button(key="tr_train").click().run()
    assert_clean(app)
    return app


def loss_figure(app) -> dict:
    (figure,) = [
        item for item in plotly_figures(app) if (item["layout"].get("title") or {}).get("text") == "Loss at every step"
    ]
    return figure


def file_hash(path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.mark.slow
def test_twenty_steps_draw_twenty_finite_losses_and_score_the_model_kept_in_this_session(not_hosted):
    folder = RECIPES["sorter"].folder
    shared_before = loaders.weights_fingerprint(loaders.get_model(str(folder)).model)
    file_before = file_hash(folder / "model.safetensors")

    app = train({links.MODEL: "sorter", links.STEPS: "20"})

    result = app.session_state["tr_result"]
    losses = numbers(loss_figure(app)["data"][0]["y"])
    assert len(losses) == 20 == result.run.steps and np.isfinite(losses).all()
    assert losses.tolist() == pytest.approx(list(result.run.losses), rel=1e-6)  # float32 on the wire
    (fresh, shipped, final) = [metric.value for metric in app.metric]
    assert fresh == f"{live_training.held_out_accuracy(result.model, RECIPES['sorter'].task):.1%}"
    assert shipped == "100.0%" and final == f"{result.run.final_loss:.4g}"
    device = describe_device(choose_device())
    (done,) = [item.value for item in app.success]
    assert done.startswith("Finished all 20 steps in") and f"on {device}" in done
    assert len(plotly_figures(app)) == 1 + 2 * 2  # loss + 2 layers × 2 heads
    # The fresh model never replaced the shipped one: not on disk, not in the model every session shares.
    assert file_hash(folder / "model.safetensors") == file_before
    assert loaders.weights_fingerprint(loaders.get_model(str(folder)).model) == shared_before
    assert result.model is not loaders.get_model(str(folder)).model
    assert training_slots.slot_is_free()


@pytest.mark.slow
def test_a_link_sets_model_steps_rate_and_seed_and_the_reverser_shows_its_cross_attention(not_hosted):
    app = train(
        {links.MODEL: "reverser", links.STEPS: "40", links.LEARNING_RATE: "0.01", links.SEED: "7", links.WORD: "planet"}
    )
    result = app.session_state["tr_result"]
    assert result.recipe_name == "reverser" and result.init_seed == 7
    assert (result.settings.steps, result.settings.learning_rate, result.settings.seed) == (40, 0.01, 8)
    assert len(numbers(loss_figure(app)["data"][0]["y"])) == 40
    titles = [figure["layout"]["title"]["text"] for figure in plotly_figures(app)]
    assert titles[1:] == ["cross-attention, layer 0, head 0", "cross-attention, layer 0, head 1"]
    assert app.query_params[links.STEPS] == "40" and app.query_params[links.LEARNING_RATE] == "0.01"


def test_in_hosted_mode_a_run_stops_at_the_time_budget_and_says_at_which_step(not_hosted):
    not_hosted.setenv(hosting.HOSTED_VARIABLE, "1")
    not_hosted.setenv(hosting.TRAINING_BUDGET_VARIABLE, "0.3")
    app = open_page(PAGE, query={links.MODEL: "reverser", links.STEPS: "5000"})
    assert any("gives each run 0.3 seconds" in item.value for item in app.info)
    app.button(key="tr_train").click().run()
    assert_clean(app)
    result = app.session_state["tr_result"]
    assert result.stopped_early and 1 <= result.run.steps < 5000
    (stopped,) = [item.value for item in app.warning]
    assert stopped.startswith(f"Stopped after 0.3 s at step {result.run.steps:,} of 5,000")
    assert len(numbers(loss_figure(app)["data"][0]["y"])) == result.run.steps


@pytest.mark.parametrize(
    "query",
    [
        {links.STEPS: "lots", links.SEED: "1e3", links.LEARNING_RATE: "fast", links.MODEL: "<script>alert(1)</script>"},
        {links.STEPS: "999999", links.SEED: "-3", links.LEARNING_RATE: "3", links.MODEL: "gpt-5", links.WORD: "x" * 40},
        {links.STEPS: "9", links.SEED: "10000", links.LEARNING_RATE: "", links.MODEL: "", links.WORD: "<b>"},
    ],
)
def test_malformed_or_out_of_range_link_values_fall_back_to_the_defaults(not_hosted, query):
    app = open_page(PAGE, query=query)
    assert_clean(app)
    assert app.number_input(key=links.STEPS).value == 1000 and app.number_input(key=links.SEED).value == 0
    assert app.segmented_control(key=links.LEARNING_RATE).value == "0.003"
    assert app.segmented_control(key=links.MODEL).value == "sorter"


def test_the_five_learning_rates_stand_on_a_line_of_their_own_not_in_a_third_of_a_row(not_hosted):
    app = open_page(PAGE)
    assert_clean(app)
    assert app.segmented_control(key=links.LEARNING_RATE).options == ["0.0003", "0.001", "0.003", "0.01", "0.03"]
    # In a third of the row, 0.03 was cut off by its edge on a desktop zoomed to 150 % and on a phone.
    assert not any(column.segmented_control for column in app.columns)
    assert [item.label for column in app.columns for item in column.number_input] == ["Training steps", "Seed"]


@pytest.mark.slow
def test_a_wrong_answer_to_the_example_word_is_marked_wrong_with_the_right_answer_beside_it(not_hosted):
    app = train({links.STEPS: "20", links.WORD: "banana"})
    answer = RECIPES["sorter"].task.predict(app.session_state["tr_result"].model, ["banana"])[0]
    assert answer != "aaabnn"  # 20 steps teach it little
    assert not app.error  # the model's mistake, not the app's
    marked = f"Your model wrote **{answer}** for *banana*: :red[**wrong** ✗]. The right answer is **aaabnn**."
    assert marked in [item.value for item in app.markdown]


@pytest.mark.slow
def test_a_right_answer_to_the_example_word_is_marked_right(not_hosted):
    app = train({links.STEPS: "20", links.WORD: "planet"})
    shipped = loaders.get_model(str(RECIPES["sorter"].folder)).model  # 100 % right on held-out words; only read
    app.session_state["tr_result"] = replace(app.session_state["tr_result"], model=shipped)
    app.run()
    assert_clean(app)
    assert not app.error
    assert "Your model wrote **aelnpt** for *planet*: :green[**right** ✓]" in [item.value for item in app.markdown]


@pytest.mark.slow
def test_a_linked_word_too_long_for_the_field_is_reported_once_the_field_appears_after_a_run(not_hosted):
    # Before a run the page has no word field; the link keeps the word till then, still to be judged.
    app = train({links.STEPS: "20", links.WORD: "extraordinary"})
    warnings = [item.value for item in app.warning]
    assert any("value “extraordinary” cannot be used here" in warning for warning in warnings), warnings
    assert app.text_input(key=links.WORD).value == "banana"


def test_a_word_the_model_cannot_read_gets_a_reason_shown_literally_and_no_crash(not_hosted):
    app = train({links.STEPS: "20", links.WORD: "<b>x"})
    (problem,) = [item.value for item in app.warning]
    assert "only the letters" in problem and "<b>" not in problem and "\\<" in problem
    assert len(plotly_figures(app)) == 1  # the loss curve only


@pytest.mark.slow
def test_after_a_run_every_representative_hostile_word_gets_a_message_and_nothing_is_rendered(not_hosted):
    app = train({links.STEPS: "20"})
    task = RECIPES["sorter"].task
    refused = 0
    for name in REPRESENTATIVE:
        app.text_input(key=links.WORD).set_value(TEXTS[name]).run()
        assert problems_after(app, TEXTS[name]) == [], name
        held = app.text_input(key=links.WORD).value  # the field holds at most 8 characters
        try:
            task.check(held.strip().lower())
        except ValueError:
            refused += 1
            assert app.warning, f"{name}: the example word was refused without a word of why"
            assert len(plotly_figures(app)) == 1, name  # the loss curve stays; no attention drawn
        else:  # e.g. 100 000 characters cut to "transfor" by the field: a word the model can read
            assert not app.warning and len(plotly_figures(app)) > 1, name  # its attention, head by head
    assert refused >= len(REPRESENTATIVE) - 2  # all but the texts cut into plain words


@pytest.mark.slow
def test_while_another_training_holds_the_slot_the_page_waits_then_refuses_politely(not_hosted):
    not_hosted.setattr(training_slots, "WAIT_LIMIT_S", 0.6)
    app = open_page(PAGE, query={links.STEPS: "20"})
    assert training_slots._SLOTS.acquire(blocking=False)
    try:
        app.button(key="tr_train").click().run()
    finally:
        training_slots._SLOTS.release()
    assert_clean(app)
    assert any("did not start" in item.value for item in app.warning)
    assert "tr_result" not in app.session_state


def test_a_run_stopped_by_streamlit_mid_training_gives_its_slot_back_and_keeps_no_model(not_hosted):
    def stop(*args, **kwargs):  # what Streamlit does inside an st call when the student starts a rerun
        raise StopException()

    not_hosted.setattr("lessons.training.figures.loss_curve", stop)
    app = train({links.STEPS: "20"})
    assert "tr_result" not in app.session_state and not app.success
    assert training_slots.slot_is_free()


@pytest.mark.slow
def test_a_run_left_mid_training_is_named_on_return_with_the_step_it_reached_and_its_loss_curve_so_far(not_hosted):
    from lessons.training import figures

    real_curve, real_clock = figures.loss_curve, live_training.RedrawClock
    left: list[int] = []

    class RedrawAtStepFive(real_clock):  # the first live redraw comes after 5 steps, whatever the machine's speed
        def due(self, step: int, total_steps: int) -> bool:
            return step + 1 == 5 or step + 1 >= total_steps

    def leave_at_first_redraw(losses, *args, **kwargs):
        if not left:  # the learner opens another page; with fast reruns Streamlit stops this script run for good:
            left.append(len(losses))  # its next st call raises StopException, and so does any use of st.session_state
            get_script_run_ctx().script_requests.request_stop()
        return real_curve(losses, *args, **kwargs)

    not_hosted.setattr(live_training, "RedrawClock", RedrawAtStepFive)
    not_hosted.setattr(figures, "loss_curve", leave_at_first_redraw)
    app = train({links.STEPS: "20"})
    assert left == [5] and training_slots.slot_is_free()
    app.switch_page("lesson_pages/home.py").run()
    app.switch_page(PAGE).run()  # back on the training page
    assert_clean(app)
    (said,) = [item.value for item in app.warning]
    assert said.startswith("Your last run stopped at step 5 of 20 when you left this page")
    assert "Press **Train** to start again" in said and not app.info  # not the first visit's "Press Train"
    (curve,) = plotly_figures(app)
    assert len(numbers(curve["data"][0]["y"])) == 5
    app.button(key="tr_train").click().run()  # a new run replaces the notice with its outcome
    assert not app.warning and "tr_unfinished" not in app.session_state
    assert len(numbers(loss_figure(app)["data"][0]["y"])) == 20


@pytest.mark.slow
def test_the_live_curve_is_redrawn_a_few_times_a_second_not_after_every_step(not_hosted):
    from lessons.training import figures

    drawn: list[int] = []
    real = figures.loss_curve

    def counting(losses, *args, **kwargs):
        drawn.append(len(losses))
        return real(losses, *args, **kwargs)

    not_hosted.setattr(figures, "loss_curve", counting)
    app = train({links.MODEL: "reverser", links.STEPS: "200"})
    seconds = app.session_state["tr_result"].run.seconds
    live = drawn[:-1]  # the last one is the finished curve
    assert live[-1] == 200 and drawn[-1] == 200  # the last step is always drawn
    assert len(live) <= seconds / 0.4 + 2 < 200


class Notice:
    """Stands in for an st.empty() placeholder; `stop_after` info messages it raises StopException."""

    def __init__(self, stop_after: int | None = None):
        self.messages: list[str] = []
        self.stop_after = stop_after

    def info(self, message: str, icon: str = "") -> None:
        self.messages.append(message)
        if self.stop_after is not None and len(self.messages) >= self.stop_after:
            raise StopException()

    def empty(self) -> None:
        pass


def test_a_waiting_session_says_so_and_starts_as_soon_as_the_other_run_ends():
    assert training_slots._SLOTS.acquire(blocking=False)
    threading.Timer(0.7, training_slots._SLOTS.release).start()  # the other run ends after 0.7 s
    notice, started = Notice(), time.monotonic()
    with training_slots.training_slot(notice, wait_limit_s=10) as acquired:
        waited = time.monotonic() - started
        assert acquired and not training_slots.slot_is_free()
    assert 0.6 < waited < 2.0
    assert notice.messages[0].startswith("Another training is running on this server; yours starts when it ends")
    assert training_slots.slot_is_free()


def test_the_slot_is_given_back_when_the_script_is_stopped_inside_the_block_or_while_waiting():
    with pytest.raises(StopException):
        with training_slots.training_slot(Notice()):
            raise StopException()
    assert training_slots.slot_is_free()
    assert training_slots._SLOTS.acquire(blocking=False)
    try:
        with pytest.raises(StopException):  # stopped while waiting: holds nothing
            with training_slots.training_slot(Notice(stop_after=2), wait_limit_s=10):
                pass
    finally:
        training_slots._SLOTS.release()
    assert training_slots.slot_is_free()


@pytest.mark.slow
def test_the_cheaters_result_explains_its_low_loss_and_its_future_reading_attention(not_hosted):
    app = train({links.MODEL: "sorter-cheater", links.STEPS: "20"})
    text = "\n".join(item.value for item in app.markdown)
    assert "read each answer letter one position ahead" in text
    assert "weight above the diagonal is a position reading tokens that come after it" in text
    assert app.session_state["tr_result"].model.config.causal is False
