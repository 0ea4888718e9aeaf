"""The class's database stops while a student answers, in a real browser: the page says the answer waits, and
once PostgreSQL is back the page sends it by itself (its own check every few seconds), without the student
doing anything, and the lecturer's page, which said the database was down, shows it without a reload."""

from __future__ import annotations

from playwright.sync_api import expect

from harness.browser import ARTIFACTS, AppPage
from harness.postgres import PostgresServer, postgres_binaries
from harness.server import StreamlitServer
from lessons.common.class_store import ClassStore
from lessons.common.classroom import DATABASE_URL_VARIABLE

RECOVERY_TIMEOUT_MS = 40_000  # a student's page looks every 5 s, the lecturer's every 2 s, on a busy machine


def test_an_answer_given_while_the_database_is_down_is_sent_by_the_page_once_it_is_back(new_context, tmp_path):
    with PostgresServer(tmp_path / "postgres", postgres_binaries(), durable=False) as database:
        store = ClassStore(database.url)
        store.upgrade()
        started = store.start_class("Lecture 5", 90)
        environment = {DATABASE_URL_VARIABLE: database.url}
        with StreamlitServer(log_path=ARTIFACTS / "streamlit-class-outage.log", environment=environment) as server:
            lecturer = AppPage(new_context().new_page(), server.url)
            lecturer.open("class", **{"class": started.code, "key": started.lecturer_key})
            expect(lecturer.page.get_by_text("No answers yet")).to_be_visible()
            student = AppPage(new_context().new_page(), server.url)
            student.open("tokenization", text="a cat", exercise="count", **{"class": started.code})
            expect(student.page.get_by_text("Class: Lecture 5")).to_be_visible()

            database.stop()
            student.page.get_by_label("Your answer").fill("4")
            student.page.get_by_role("button", name="Check", exact=True).click()
            expect(student.page.get_by_text("is not recorded yet")).to_be_visible()
            expect(lecturer.page.get_by_text("cannot be reached")).to_be_visible(timeout=RECOVERY_TIMEOUT_MS)
            student.screenshot("class-answer-waiting-for-the-database")

            database.start()
            expect(student.page.get_by_text("is recorded for the class")).to_be_visible(timeout=RECOVERY_TIMEOUT_MS)
            expect(lecturer.page.get_by_text("1 answered")).to_be_visible(timeout=RECOVERY_TIMEOUT_MS)
            assert store.spread(started.code, started.lecturer_key)[0].answered == 1
            assert student.exceptions() == [] and lecturer.exceptions() == []
