"""The whole hostile corpus through every class field and link parameter: no exception, no markup, no row
that should not exist (the whole corpus, every run)."""

from __future__ import annotations

import pytest
import sqlalchemy as sa

from harness.apptest import open_page
from harness.hostile import CLASS_LINK_PARAMETERS, TEXTS, problems_after
from lessons.common import classroom
from lessons.common.class_store import ClassStore
from lessons.common.ui import classroom as class_ui

pytestmark = pytest.mark.slow
LESSON = "lesson_pages/tokenization.py"
CLASS_PAGE = "lesson_pages/class.py"


@pytest.fixture
def store(class_database_url, monkeypatch) -> ClassStore:
    monkeypatch.setenv(classroom.DATABASE_URL_VARIABLE, class_database_url)
    for cached in (class_ui.store, class_ui._class_info, class_ui._revealed_of_late):
        cached.clear()
    yield class_ui.ready_store()
    for cached in (class_ui.store, class_ui._class_info, class_ui._revealed_of_late):
        cached.clear()


def rows(store: ClassStore, table: str) -> int:
    with store.engine.connect() as connection:
        return connection.execute(sa.select(sa.func.count()).select_from(sa.table(table))).scalar_one()


def test_every_hostile_text_as_a_class_title_starts_one_class_shown_as_written(store, monkeypatch):
    monkeypatch.setattr(class_ui, "MAX_CLASSES_PER_SESSION", len(TEXTS))  # one tab starts them all here
    app = open_page(CLASS_PAGE)
    problems = []
    for name, text in TEXTS.items():
        app.text_input(key="class_title").set_value(text[: classroom.MAX_TITLE_CHARACTERS])
        app.button(key="class_start").click().run()
        problems += [f"{name}: {problem}" for problem in problems_after(app, text)]
    assert problems == []
    assert rows(store, "classes") == len(TEXTS)  # one each, never more
    assert rows(store, "answers") == rows(store, "questions") == 0


@pytest.mark.parametrize("parameter", CLASS_LINK_PARAMETERS)
def test_every_hostile_text_in_a_class_link_parameter_is_refused_plainly(store, parameter):
    started = store.start_class("Lecture", 90)
    question = classroom.Question("q", "tokenization", "Pieces", "How many?", ("3", "4"), 0, "4")
    store.record_answer(started.code, "student-one-0123456789", question, "4", True)
    other = {"class": started.code, "key": started.lecturer_key}
    assert open_page(CLASS_PAGE, query=other).get("plotly_chart")  # with the class's own code and key: the spread
    problems = []
    for name, text in TEXTS.items():
        for page in (LESSON, CLASS_PAGE):
            app = open_page(page, text="a cat", query={**other, parameter: text})
            problems += [f"{name} on {page}: {problem}" for problem in problems_after(app, text)]
            if page == CLASS_PAGE:  # the spread is never shown for a link whose code or key is not the class's
                problems += [f"{name}: the spread was shown" for _ in app.get("plotly_chart")]
    assert problems == []
    assert rows(store, "classes") == 1 and rows(store, "answers") == rows(store, "questions") == 1
