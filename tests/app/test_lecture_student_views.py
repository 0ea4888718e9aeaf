"""How the load test's students judge a view that holds its figures back for an exercise.

An exercise a student opened on a lesson stays open when the student comes back to that lesson (the session
remembers the choice), and a new text asks it anew: until it is answered, the page shows the question and
the answer field instead of its figures (lessons.common.ui.check_yourself). The class through the lecture
hall met it about once in 400 views, as "session 36 encoder (typed): its figures lack its own tokens
'kangaroo'/'green'" (the second typed text, the first after an exercise): a view with no figures at all,
which the checker took for figures of someone else's text.
"""

from __future__ import annotations

import json
import time

import pytest
from streamlit.proto.Element_pb2 import Element

from harness.client import PageRun, Tab
from harness.lecture import seat_text
from harness.load import record_run, run_coroutine
from harness.room import VIEW_TIMEOUT_SECONDS, Lesson, Tally, lessons_for, student_text
from harness.server import StreamlitServer
from lessons.common.ui.check_yourself import HELD_BACK

SESSION = 36  # the seat of the first report: marker 'kangaroo'
ENCODER = Lesson("encoder", {"enc_tab": "Hidden states"}, 1, True)


def waiting_exercise(*charts_labels: list[str]) -> PageRun:
    """A run that shows an exercise's answer field and Check, its caption, and charts with these x labels."""
    answer, check, caption = Element(), Element(), Element()
    answer.number_input.id, answer.number_input.form_id = "exercise_block_field", "exercise_block_form"
    check.button.id, check.button.is_form_submitter = "exercise_block_check", True
    caption.markdown.body = HELD_BACK
    run = PageRun(elements=[(0, answer), (0, check), (0, caption)])
    for labels in charts_labels:
        chart = Element()
        chart.plotly_chart.spec = json.dumps({"data": [{"x": labels}]})
        run.elements.append((0, chart))
    return run


def record(run: PageRun, round_number: int) -> Tally:
    tally, text = Tally(), student_text(SESSION, round_number)
    query = f"text={text.replace(' ', '+')}&exercise=block"
    record_run(tally, run, query, SESSION, ENCODER, round_number, "typed", time.monotonic(), 0.0)
    return tally


def test_a_view_that_holds_its_figures_back_for_an_exercise_is_counted_not_reported_as_missing_tokens():
    tally = record(waiting_exercise(), 2)
    assert tally.errors == []
    assert [(view.session, view.lesson, view.how) for view in tally.views] == [(SESSION, "encoder", "typed")]


def test_a_view_that_holds_its_figures_back_still_may_not_show_another_students_or_rounds_tokens():
    tally = record(waiting_exercise(["the", "blue", "zebra"]), 2)
    assert any("other students' tokens ['zebra']" in error for error in tally.errors)
    assert any("earlier round ['blue']" in error for error in tally.errors)


def test_a_view_without_an_exercise_waiting_must_still_show_its_own_tokens():
    tally = record(PageRun(), 2)
    assert tally.errors == [f"session {SESSION} encoder (typed): its figures lack its own tokens 'kangaroo'/'green'"]


@pytest.mark.slow
def test_a_student_back_on_the_encoder_exercise_it_answered_types_a_new_text_and_sees_a_clean_view():
    """The steps of the report, against one real server: a typed text, the encoder's exercise answered,
    the encoder's hidden states by the navigation (the exercise still open, its answer shown), a new text."""
    tally = Tally()

    async def student(url: str) -> tuple[PageRun, str]:
        tab = Tab(url)
        lesson = next(each for each in lessons_for(SESSION % 6, 5 * SESSION % 12) if each.path == "encoder")
        try:
            run = await tab.open("tokenization", {"text": seat_text(SESSION, 0, "a")}, VIEW_TIMEOUT_SECONDS)
            text_field = run.text_area("Text to study").id
            await tab.set_text(text_field, seat_text(SESSION, 1, "a"), VIEW_TIMEOUT_SECONDS)
            run = await tab.navigate("encoder", {"exercise": "block"}, VIEW_TIMEOUT_SECONDS)
            answer_field, check = run.form()
            await tab.submit(answer_field, 1000.0, check, VIEW_TIMEOUT_SECONDS)
            run = await tab.navigate(lesson.path, lesson.query, VIEW_TIMEOUT_SECONDS)
            record_run(
                tally, run, tab.query_string, SESSION, lesson, 1, "navigated", 0.0, 0.0, text=seat_text(SESSION, 1, "a")
            )
            run = await tab.set_text(text_field, seat_text(SESSION, 2, "a"), VIEW_TIMEOUT_SECONDS)
            record_run(
                tally, run, tab.query_string, SESSION, lesson, 2, "typed", 0.0, 0.0, text=seat_text(SESSION, 2, "a")
            )
            return run, tab.query_string
        finally:
            await tab.close()

    with StreamlitServer() as server:
        typed, address = run_coroutine(student(server.url))  # beside a loop the browser tests left running
    # What the app does, on purpose: the remembered exercise asks again about the new text, figures held back.
    assert "exercise=block" in address
    assert typed.form() is not None and HELD_BACK in typed.messages()
    assert typed.figure_labels() == []
    assert tally.errors == []
    assert [view.how for view in tally.views] == ["navigated", "typed"]
