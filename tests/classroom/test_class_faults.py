"""A class whose database stops: students keep working and are told their answers wait; the lecturer is told
of the outage; once the database is back, the waiting answers are sent and recording goes on by itself.

A real PostgreSQL of the test's own is stopped and started again (harness/postgres.py): SQLite, a file in the
server's own process, cannot stop."""

from __future__ import annotations

import pytest

from harness.apptest import all_markdown, answer_exercise, assert_clean, open_exercise, open_page
from harness.postgres import PostgresServer, postgres_binaries
from lessons.common import classroom
from lessons.common.ui import classroom as class_ui

pytestmark = pytest.mark.slow
LESSON = "lesson_pages/tokenization.py"
CLASS_PAGE = "lesson_pages/class.py"


@pytest.fixture
def database(tmp_path, monkeypatch):
    """A PostgreSQL of this test's own (it is stopped mid-test), the one the app's pages use."""
    with PostgresServer(tmp_path / "postgres", postgres_binaries(), durable=False) as server:
        monkeypatch.setenv(classroom.DATABASE_URL_VARIABLE, server.url)
        forget_every_class_cache()
        yield server
        forget_every_class_cache()


def forget_every_class_cache() -> None:
    for cached in (class_ui.store, class_ui._class_info, class_ui._revealed_of_late):
        cached.clear()


def test_the_database_stopped_mid_class_then_restarted_loses_no_answer_and_recording_resumes(database):
    store = class_ui.ready_store()
    started = store.start_class("Lecture 3", 90)
    student = open_exercise(LESSON, "count", text="a cat", query={"class": started.code})
    lecturer = open_page(CLASS_PAGE, query={"class": started.code, "key": started.lecturer_key})
    assert "Class: Lecture 3" in all_markdown(student)

    database.stop()
    answer_exercise(student, 4)
    assert_clean(student)
    assert any("cannot be reached" in item.value and "sent by itself" in item.value for item in student.warning)
    assert any("is not recorded yet" in item.value for item in student.warning)
    assert not student.get("plotly_chart")  # still waiting for the reveal: the figures stay back
    lecturer.run()
    assert_clean(lecturer)
    assert any("cannot be reached" in item.value for item in lecturer.error)
    newcomer = open_page(LESSON, text="a dog", query={"class": started.code})
    assert_clean(newcomer)
    assert "Class: Lecture 3" in all_markdown(newcomer)  # as this replica looked it up seconds ago
    assert newcomer.get("plotly_chart")  # the lesson itself goes on
    stranger = open_page(LESSON, text="a dog", query={"class": "Z" * 22})  # a class not looked up before
    assert_clean(stranger)
    assert any("cannot be looked up just now" in item.value for item in stranger.warning)
    assert stranger.get("plotly_chart")

    database.start()
    student.run()  # what the page's own check every few seconds does
    assert any("is recorded for the class" in item.value for item in student.success)
    assert not [item for item in student.warning if "cannot be reached" in item.value]
    (spread,) = store.spread(started.code, started.lecturer_key)
    assert spread.answered == 1 and spread.right == 1
    lecturer.run()
    assert_clean(lecturer)
    assert "1 answered" in all_markdown(lecturer)

    second = answer_exercise(open_exercise(LESSON, "count", text="a cat", query={"class": started.code}), 5)
    assert any("is recorded for the class" in item.value for item in second.success)
    assert store.spread(started.code, started.lecturer_key)[0].answered == 2


def test_a_link_opened_while_the_database_is_down_keeps_the_class_in_the_address(database):
    started = class_ui.ready_store().start_class("Lecture 3", 90)
    database.stop()
    student = open_page(LESSON, text="a cat", query={"class": "Y" * 22})
    lecturer = open_page(CLASS_PAGE, query={"class": started.code, "key": started.lecturer_key})
    assert student.query_params["class"] == ["Y" * 22] or student.query_params["class"] == "Y" * 22
    assert started.lecturer_key in str(lecturer.query_params["key"]) and started.code in str(
        lecturer.query_params["class"]
    )
