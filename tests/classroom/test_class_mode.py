"""Class mode as students and a lecturer meet it (lessons.common.ui.classroom): the student link's banner, an
answer recorded for the class and its reveal held for the lecturer's, the lecturer's page behind its key."""

from __future__ import annotations

import csv
import io
import time
from datetime import timedelta

import pytest
from streamlit.runtime.media_file_manager import MediaFileManager

from harness.apptest import (
    HOSTILE_TEXTS,
    all_markdown,
    answer_exercise,
    assert_clean,
    exercise_field,
    open_exercise,
    open_page,
)
from harness.hostile import problems_after
from lessons.common import classroom
from lessons.common.class_store import ClassStore
from lessons.common.safe_text import escape_markdown
from lessons.common.ui import classroom as class_ui

LESSON = "lesson_pages/tokenization.py"
CLASS_PAGE = "lesson_pages/class.py"


@pytest.fixture
def store(class_database_url, monkeypatch) -> ClassStore:
    """A class database of the test's own, the one the app's pages use too."""
    monkeypatch.setenv(classroom.DATABASE_URL_VARIABLE, class_database_url)
    forget_every_class_cache()
    yield class_ui.ready_store()
    forget_every_class_cache()


def forget_every_class_cache() -> None:
    for cached in (class_ui.store, class_ui._class_info, class_ui._revealed_of_late):
        cached.clear()


def answers_stored(store: ClassStore) -> int:
    with store.engine.connect() as connection:
        return connection.exec_driver_sql("SELECT count(*) FROM answers").scalar()


def a_class_with_one_answer(store: ClassStore):
    """A class, one student's right answer to the tokenization lesson's "count", and the lecturer's page."""
    started = store.start_class("Lecture 3", 90)
    answer_exercise(open_exercise(LESSON, "count", text="a cat", query={"class": started.code}), 4)
    return started, open_page(CLASS_PAGE, query={"class": started.code, "key": started.lecturer_key})


def banner(app) -> str:
    return "\n".join(item.value for item in app.info if "Class:" in item.value)


def test_the_class_page_starts_a_class_and_gives_a_student_link_and_a_lecturer_link(store):
    app = open_page(CLASS_PAGE)
    app.text_input(key="class_title").set_value("Lecture 3: attention")
    app.button(key="class_start").click().run()
    assert_clean(app)
    student, lecturer = (block.value for block in app.code)
    code = student.split("class=")[1]
    assert store.find_class(code).title == "Lecture 3: attention"
    key = lecturer.split("key=")[1]
    assert f"/class?class={code}&key=" in lecturer and store.lecturer_class(code, key)
    assert key not in student


def test_a_student_link_names_the_class_above_the_lesson_and_every_view_keeps_it(store):
    started = store.start_class("Lecture 3", 90)
    app = open_page(LESSON, text="a cat", query={"class": started.code})
    assert_clean(app)
    assert "Class: Lecture 3" in banner(app) and "anonymously" in banner(app)
    assert app.query_params["class"] == [started.code] or app.query_params["class"] == started.code
    app.switch_page("lesson_pages/attention.py").run()
    assert "Class: Lecture 3" in banner(app)
    assert started.code in str(app.query_params["class"])


def test_a_code_that_names_no_class_is_said_and_the_lesson_goes_on_outside_a_class(store):
    app = open_page(LESSON, text="a cat", query={"class": "A" * 22})
    assert_clean(app)
    assert any("names no class" in item.value for item in app.warning)
    assert not banner(app) and "class" not in app.query_params
    assert app.get("plotly_chart")


def test_an_answer_is_recorded_for_the_class_and_its_reveal_waits_for_the_lecturer(store):
    started = store.start_class("Lecture 3", 90)
    app = answer_exercise(open_exercise(LESSON, "count", text="a cat", query={"class": started.code}), 4)
    assert_clean(app)
    assert any("is recorded for the class" in item.value for item in app.success)
    assert not app.get("plotly_chart")  # figures held back until the reveal: they would give it away
    assert exercise_field(app) is not None  # the answer may still be changed
    (spread,) = store.spread(started.code, started.lecturer_key)
    assert (spread.answered, spread.right, spread.question.page) == (1, 1, "tokenization")

    answer_exercise(app, 5)  # changed: the class counts the latest, once
    (spread,) = store.spread(started.code, started.lecturer_key)
    assert spread.answered == 1 and spread.right == 0

    store.reveal(started.code, started.lecturer_key, spread.question.asked)
    time.sleep(class_ui.REVEAL_CACHE_SECONDS)  # a replica asks the database about a reveal this often at most
    app.run()
    assert any("the answer is 4" in item.value for item in app.error)
    assert any("How the class answered" in item.value for item in app.markdown)
    assert app.get("plotly_chart")


def tally(app) -> str:
    return "\n".join(item.value for item in app.caption if item.value.startswith("This session"))


def test_before_the_reveal_the_tally_does_not_say_whether_an_answer_was_right(store):
    started = store.start_class("Lecture 3", 90)
    app = answer_exercise(open_exercise(LESSON, "count", text="a cat", query={"class": started.code}), 4)
    said_for_a_right_answer = tally(app)
    assert said_for_a_right_answer == "This session: 1 answer waiting for your lecturer's reveal."
    assert "come back with the answer, when your lecturer reveals it" in "\n".join(item.value for item in app.caption)
    assert tally(answer_exercise(app, 5)) == said_for_a_right_answer  # a wrong one reads the same

    (spread,) = store.spread(started.code, started.lecturer_key)
    store.reveal(started.code, started.lecturer_key, spread.question.asked)
    time.sleep(class_ui.REVEAL_CACHE_SECONDS)
    app.run()
    assert tally(app) == "This session: 0 of 1 exercise answered right."


def test_outside_a_class_an_answer_is_revealed_at_once_and_nothing_is_stored(store):
    app = answer_exercise(open_exercise(LESSON, "count", text="a cat"), 4)
    assert any(item.value.startswith("Right") for item in app.success)
    assert answers_stored(store) == 0


def test_the_lecturer_link_shows_the_spread_and_a_wrong_key_shows_nothing_of_it(store):
    started, lecturer = a_class_with_one_answer(store)
    assert_clean(lecturer)
    assert "1 answered" in all_markdown(lecturer)
    assert lecturer.button(key=f"reveal_{store.spread(started.code, started.lecturer_key)[0].question.asked}")
    for key in ("B" * 32, started.code, ""):
        intruder = open_page(CLASS_PAGE, query={"class": started.code, "key": key})
        assert_clean(intruder)
        assert any("lecturer link" in item.value for item in intruder.error)
        assert "answered" not in all_markdown(intruder) and not intruder.get("plotly_chart")


def test_the_lecturer_reveals_from_the_page_and_downloads_the_spread(store, monkeypatch):
    written_when_pressed = {}  # what each download button's file id serves, as the server would on a click
    register = MediaFileManager.add_deferred

    def remember(manager, data_callable, *args, **kwargs):
        file_id = register(manager, data_callable, *args, **kwargs)
        written_when_pressed[file_id] = data_callable
        return file_id

    monkeypatch.setattr(MediaFileManager, "add_deferred", remember)
    started, lecturer = a_class_with_one_answer(store)
    (spread,) = store.spread(started.code, started.lecturer_key)
    lecturer.button(key=f"reveal_{spread.question.asked}").click().run()
    assert store.revealed(started.code, spread.question.asked) is not None
    assert any("the answer is 4" in item.value for item in lecturer.success)
    downloads = {
        button.key: written_when_pressed[button.proto.deferred_file_id]() for button in lecturer.get("download_button")
    }
    code, key = started.code, started.lecturer_key
    assert downloads == {
        "class_spread_csv": store.spread_csv(code, key),
        "class_answers_csv": store.answers_csv(code, key),
    }
    spread_rows = list(csv.DictReader(io.StringIO(downloads["class_spread_csv"])))
    assert [(row["answer"], row["count"], row["answered"]) for row in spread_rows] == [("4", "1", "1")]
    assert spread.question.question in downloads["class_spread_csv"]
    assert len(list(csv.DictReader(io.StringIO(downloads["class_answers_csv"])))) == 1  # the one student's answer


@pytest.mark.parametrize("name", sorted(HOSTILE_TEXTS))
def test_hostile_text_through_the_class_title_and_links_is_shown_as_written(store, name):
    hostile = HOSTILE_TEXTS[name]
    app = open_page(CLASS_PAGE)
    app.text_input(key="class_title").set_value(hostile[:120])
    app.button(key="class_start").click().run()
    assert problems_after(app, hostile[:120]) == []
    (started,) = [item.value for item in app.success if "started; open until" in item.value]
    assert started.startswith(f"Class **{escape_markdown(hostile[:120].strip())}** started") or not hostile.strip()
    for query in ({"class": hostile}, {"class": hostile, "key": hostile}, {"key": hostile}):
        for page in (LESSON, CLASS_PAGE):
            visited = open_page(page, text="a cat", query=query)
            assert problems_after(visited, hostile) == []
            assert "<b>" not in all_markdown(visited) and "<script>" not in all_markdown(visited)
    assert answers_stored(store) == 0


def test_the_lecturer_deletes_the_class_after_a_confirmation_and_its_link_then_opens_nothing(store):
    started, lecturer = a_class_with_one_answer(store)
    assert [button.key for button in lecturer.get("download_button")] == ["class_spread_csv", "class_answers_csv"]
    lecturer.button(key="class_delete").click().run()
    assert any("cannot be undone" in item.value for item in lecturer.warning)
    assert store.find_class(started.code)  # not yet
    lecturer.button(key="class_delete_now").click().run()
    assert_clean(lecturer)
    assert any("are deleted" in item.value for item in lecturer.success)
    assert "class" not in lecturer.query_params and "key" not in lecturer.query_params
    with pytest.raises(classroom.UnknownClass):
        store.find_class(started.code)
    assert answers_stored(store) == 0


def test_in_a_closed_class_an_answer_is_not_recorded_and_is_revealed_at_once(store, monkeypatch):
    started = store.start_class("Lecture 3", 5)
    app = open_exercise(LESSON, "count", text="a cat", query={"class": started.code})
    assert "Class: Lecture 3" in banner(app)
    later = started.info.closes_at + timedelta(seconds=1)
    monkeypatch.setattr(classroom, "current_time", lambda: later)  # the clock passes the closing time
    app = answer_exercise(app, 4)
    assert_clean(app)
    assert any("has closed" in item.value for item in app.warning)
    assert any(item.value.startswith("Right") for item in app.success)  # shown at once: nobody will reveal it
    assert app.get("plotly_chart")
    assert store.spread(started.code, started.lecturer_key) == []


def test_the_lecturer_sees_the_newest_question_first_and_the_student_link_without_the_key(store):
    started = store.start_class("Lecture 3", 90)
    answer_exercise(open_exercise(LESSON, "count", text="a cat", query={"class": started.code}), 4)
    answer_exercise(open_exercise(LESSON, "pieces", text="a cat", query={"class": started.code}), 1)
    lecturer = open_page(CLASS_PAGE, query={"class": started.code, "key": started.lecturer_key})
    headings = [item.value for item in lecturer.markdown if item.value.startswith("**") and ". " in item.value[:6]]
    assert [heading[:5] for heading in headings] == ["**2. ", "**1. "]
    (student_link,) = [block.value for block in lecturer.code]
    assert student_link.endswith(f"/?class={started.code}") and started.lecturer_key not in student_link


def test_one_tab_can_start_only_a_few_classes(store):
    app = open_page(CLASS_PAGE)
    for _ in range(class_ui.MAX_CLASSES_PER_SESSION + 1):
        app.text_input(key="class_title").set_value("Lecture")
        app.button(key="class_start").click().run()
    assert_clean(app)
    assert any("started 5 classes already" in item.value for item in app.error)
    with store.engine.connect() as connection:
        assert connection.exec_driver_sql("SELECT count(*) FROM classes").scalar() == class_ui.MAX_CLASSES_PER_SESSION
