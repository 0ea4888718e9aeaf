"""A class in real browsers: a student answers, the lecturer's page shows it without a reload, the lecturer
reveals, and the student's page shows the answer and the class's spread without a reload either."""

from __future__ import annotations

from playwright.sync_api import expect

from harness.browser import ARTIFACTS, SCREENS, AppPage
from harness.server import StreamlitServer
from lessons.common.class_store import ClassStore
from lessons.common.classroom import DATABASE_URL_VARIABLE

LIVE_TIMEOUT_MS = 30_000  # a few refreshes of the live views (every 4 s), on a busy 2-core machine


def test_the_spread_reaches_the_lecturer_and_the_reveal_reaches_the_student_without_a_reload(new_context, tmp_path):
    url = f"sqlite:///{tmp_path / 'classes.sqlite'}"
    store = ClassStore(url)
    store.upgrade()
    started = store.start_class("Lecture 3: tokens", 90)
    environment = {DATABASE_URL_VARIABLE: url}
    with StreamlitServer(log_path=ARTIFACTS / "streamlit-class.log", environment=environment) as server:
        lecturer = AppPage(new_context().new_page(), server.url)
        lecturer.open("class", **{"class": started.code, "key": started.lecturer_key, "present": 1})
        expect(lecturer.page.get_by_text("No answers yet")).to_be_visible()

        student = AppPage(new_context().new_page(), server.url)
        student.page.set_viewport_size(SCREENS["phone"])
        student.open("tokenization", text="a cat", exercise="count", **{"class": started.code})
        expect(student.page.get_by_text("Class: Lecture 3: tokens")).to_be_visible()
        student.screenshot("class-student-banner-phone")
        assert student.layout_problems() == []
        student.page.get_by_label("Your answer").fill("4")  # [CLS] a cat [SEP]
        student.page.get_by_role("button", name="Check", exact=True).click()
        expect(student.page.get_by_text("is recorded for the class")).to_be_visible()
        expect(student.page.get_by_text("1 answer waiting for your lecturer's reveal")).to_be_visible()  # not "right"
        assert student.plot_count() == 0  # the lesson's figures wait for the reveal

        expect(lecturer.page.get_by_text("1 answered")).to_be_visible(timeout=LIVE_TIMEOUT_MS)
        lecturer.wait_until_painted(min_plots=1)
        lecturer.screenshot("class-lecturer-live-spread-presentation")
        assert lecturer.layout_problems() == []
        lecturer.page.get_by_role("button", name="Reveal to the class").click()
        expect(lecturer.page.get_by_text("Revealed: the answer is 4")).to_be_visible()

        expect(student.page.get_by_text("Right: 4")).to_be_visible(timeout=LIVE_TIMEOUT_MS)
        expect(student.page.get_by_text("How the class answered")).to_be_visible()
        student.wait_until_painted(min_plots=1)
        student.screenshot("class-student-after-reveal-phone")
        assert student.layout_problems() == []
        expect(student.page.get_by_text("This session: 1 of 1 exercise answered right.")).to_be_visible()
        assert lecturer.exceptions() == [] and student.exceptions() == []
        assert lecturer.requests_off_loopback() == [] and student.requests_off_loopback() == []
        log = (ARTIFACTS / "streamlit-class.log").read_text(encoding="utf-8")
        assert "Traceback" not in log and started.lecturer_key not in log and started.code not in log


def test_the_links_a_started_class_shows_open_the_class_for_students_and_the_lecturer(new_context, tmp_path):
    environment = {DATABASE_URL_VARIABLE: f"sqlite:///{tmp_path / 'classes.sqlite'}"}
    with StreamlitServer(log_path=ARTIFACTS / "streamlit-class-links.log", environment=environment) as server:
        lecturer = AppPage(new_context().new_page(), server.url).open("class")
        lecturer.page.get_by_label("Class title").fill("Lecture 4")
        lecturer.page.get_by_role("button", name="Start a class").click()
        lecturer.page.locator("pre").nth(1).wait_for()
        student_link, lecturer_link = lecturer.page.locator("pre").all_inner_texts()
        assert student_link.startswith(f"{server.url}/?class=") and lecturer_link.startswith(f"{server.url}/class?")

        student = AppPage(new_context().new_page(), server.url)
        student.page.goto(student_link)
        expect(student.page.get_by_text("Class: Lecture 4")).to_be_visible(timeout=LIVE_TIMEOUT_MS)
        lecturer.page.goto(lecturer_link)
        expect(lecturer.page.get_by_text("No answers yet")).to_be_visible(timeout=LIVE_TIMEOUT_MS)
        expect(lecturer.page.get_by_text("Lecture 4 · open until")).to_be_visible()
        assert student.exceptions() == [] and lecturer.exceptions() == []
