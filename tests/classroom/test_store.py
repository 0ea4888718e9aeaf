"""The class's answers in a database (lessons.common.classroom): one answer per student and question, the
lecturer's secrets checked, limits kept, nothing stored that names anyone."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta

import pytest
import sqlalchemy as sa

from lessons.common import classroom
from lessons.common.class_store import ClassStore
from lessons.common.classroom import (
    ClassClosed,
    ClassError,
    LimitReached,
    Question,
    UnknownClass,
    looks_like_a_code,
)

CHOICE = Question("q-pieces", "tokenization", "Pieces", "How many **pieces**?", ("3", "4", "5"), 0, "4")
NUMBER = Question("q-weight", "attention", "A weight", "The weight of *cat*?", (), 2, "0.25")


@pytest.fixture
def store(class_database_url) -> ClassStore:
    opened = ClassStore(class_database_url)
    opened.upgrade()
    return opened


def test_a_class_gets_a_code_and_a_key_long_enough_that_guessing_is_hopeless(store):
    started = store.start_class("Lecture 3", 90)
    assert len(started.code) >= 22 and len(started.lecturer_key) >= 32  # 128 and 192 random bits
    assert looks_like_a_code(started.code) and looks_like_a_code(started.lecturer_key)
    assert started.code != store.start_class("Lecture 3", 90).code
    assert store.find_class(started.code).title == "Lecture 3"
    assert store.lecturer_class(started.code, started.lecturer_key).closes_at == started.info.closes_at


def test_the_secrets_are_stored_only_as_digests(store):
    started = store.start_class("Lecture 3", 90)
    store.record_answer(started.code, "student-one-0123456789", CHOICE, "4", True)
    with store.engine.connect() as connection:
        dumped = "\n".join(
            str(row)
            for table in ("classes", "answers")
            for row in connection.execute(sa.text(f"SELECT * FROM {table}"))
        )
    assert started.code not in dumped and started.lecturer_key not in dumped and "student-one" not in dumped
    assert classroom.digest(started.code) in dumped


def test_a_changed_answer_replaces_the_earlier_one_and_each_student_counts_once(store):
    started = store.start_class("Lecture 3", 90)
    store.record_answer(started.code, "student-one-0123456789", CHOICE, "3", False)
    store.record_answer(started.code, "student-one-0123456789", CHOICE, "4", True)
    store.record_answer(started.code, "student-two-0123456789", CHOICE, "5", False)
    (spread,) = store.spread(started.code, started.lecturer_key)
    assert spread.counts == (("3", 0, False), ("4", 1, True), ("5", 1, False))
    assert (spread.answered, spread.right, spread.revealed) == (2, 1, False)


def test_a_number_question_counts_each_value_given_smallest_first(store):
    started = store.start_class("Lecture 3", 90)
    for student, value, right in [
        ("a", "0.30", False),
        ("b", "0.25", True),
        ("c", "0.25", True),
        ("d", "-1.00", False),
    ]:
        store.record_answer(started.code, f"student-{student}-0123456789", NUMBER, value, right)
    (spread,) = store.spread(started.code, started.lecturer_key)
    assert spread.counts == (("-1.00", 1, False), ("0.25", 2, True), ("0.30", 1, False))


def test_a_wrong_or_missing_key_sees_no_spread_and_the_message_says_which_link_to_open(store):
    started = store.start_class("Lecture 3", 90)
    for key in ("", "x" * 32, started.code, _one_character_off(started.lecturer_key), "<script>alert(1)</script>"):
        with pytest.raises(UnknownClass, match="lecturer link"):
            store.spread(started.code, key)
    with pytest.raises(UnknownClass, match="lecturer link"):
        store.spread("y" * 22, started.lecturer_key)  # another class's code: the same message


def test_the_answer_and_spread_reach_students_only_once_revealed(store):
    started = store.start_class("Lecture 3", 90)
    store.record_answer(started.code, "student-one-0123456789", CHOICE, "4", True)
    assert store.revealed(started.code, CHOICE.asked) is None
    store.reveal(started.code, started.lecturer_key, CHOICE.asked)
    shown = store.revealed(started.code, CHOICE.asked)
    assert shown is not None and shown.revealed and shown.counts[1] == ("4", 1, True)
    store.reveal(started.code, started.lecturer_key, CHOICE.asked, revealed=False)
    assert store.revealed(started.code, CHOICE.asked) is None


def test_a_closed_class_takes_no_answers_but_its_answers_can_be_downloaded_then_deleted(store):
    started = store.start_class("Lecture 3", 5)
    store.record_answer(started.code, "student-one-0123456789", CHOICE, "4", True)
    later = started.info.closes_at + timedelta(seconds=1)
    with pytest.raises(ClassClosed, match="has closed"):
        store.record_answer(started.code, "student-two-0123456789", CHOICE, "3", False, now=later)
    assert "tokenization,Pieces" in store.answers_csv(started.code, started.lecturer_key)
    store.delete_class(started.code, started.lecturer_key)
    with pytest.raises(UnknownClass):
        store.find_class(started.code)
    with store.engine.connect() as connection:
        assert connection.scalar(sa.text("SELECT count(*) FROM answers")) == 0
        assert connection.scalar(sa.text("SELECT count(*) FROM questions")) == 0


def test_csv_cells_a_spreadsheet_would_run_as_formulas_are_written_as_text(store):
    started = store.start_class("Lecture 3", 90)
    hostile = Question("q-hostile", "attention", '=HYPERLINK("http://x")', "@SUM(1)", ("+1", "-0.5", "=1+1"), 0, "+1")
    store.record_answer(started.code, "student-one-0123456789", hostile, "=1+1", False)
    written = store.spread_csv(started.code, started.lecturer_key) + store.answers_csv(
        started.code, started.lecturer_key
    )
    assert "'=HYPERLINK" in written and "'@SUM(1)" in written and "'=1+1" in written
    assert ",-0.5," in written and ",+1," in written  # a plain number stays a number


def test_one_student_cannot_flood_the_class(store, monkeypatch):
    monkeypatch.setattr(classroom, "MAX_QUESTIONS_PER_STUDENT", 3)
    started = store.start_class("Lecture 3", 90)
    for number in range(3):
        store.record_answer(started.code, "student-one-0123456789", _question(number), "4", True)
    store.record_answer(started.code, "student-one-0123456789", _question(0), "3", False)  # a change still counts
    with pytest.raises(LimitReached, match="answered 3 questions"):
        store.record_answer(started.code, "student-one-0123456789", _question(3), "4", True)
    store.record_answer(started.code, "student-two-0123456789", _question(3), "4", True)  # others go on


def test_a_class_cannot_grow_past_its_bounds(store, monkeypatch):
    monkeypatch.setattr(classroom, "MAX_ANSWERS_PER_CLASS", 2)
    monkeypatch.setattr(classroom, "MAX_QUESTIONS_PER_CLASS", 2)
    started = store.start_class("Lecture 3", 90)
    store.record_answer(started.code, "student-one-0123456789", _question(0), "4", True)
    store.record_answer(started.code, "student-two-0123456789", _question(0), "4", True)
    with pytest.raises(LimitReached, match="2 answers"):
        store.record_answer(started.code, "student-six-0123456789", _question(0), "4", True)
    store.record_answer(started.code, "student-one-0123456789", _question(0), "3", False)  # a change: not a row
    monkeypatch.setattr(classroom, "MAX_ANSWERS_PER_CLASS", 100)
    store.record_answer(started.code, "student-one-0123456789", _question(1), "4", True)
    with pytest.raises(LimitReached, match="2 questions"):
        store.record_answer(started.code, "student-one-0123456789", _question(2), "4", True)


def test_a_server_holds_a_bounded_number_of_open_classes(store, monkeypatch):
    monkeypatch.setattr(classroom, "MAX_OPEN_CLASSES", 2)
    store.start_class("one", 90)
    store.start_class("two", 90)
    with pytest.raises(LimitReached, match="2 classes are open"):
        store.start_class("three", 90)


@pytest.mark.parametrize("minutes", [0, 4, 8 * 60 + 1, -5])
def test_a_class_stays_open_for_a_sensible_time(store, minutes):
    with pytest.raises(ClassError, match="between 5 and 480 minutes"):
        store.start_class("Lecture", minutes)


@pytest.mark.parametrize(
    "code",
    ["", "short", "x" * 65, "<script>alert(1)</script>xxxxxx", "' OR 1=1 --xxxxxxxxxxxxx", "ⅰ" * 22, "a b" * 8],
)
def test_a_value_that_cannot_be_a_code_is_refused_before_the_database(store, code):
    assert not looks_like_a_code(code)
    with pytest.raises(UnknownClass):
        store.find_class(code)


def test_hostile_text_is_stored_as_written_and_a_title_is_kept_to_one_line(store):
    started = store.start_class("  <b>Lecture</b>\n'; DROP TABLE classes; --  ", 90)
    assert store.find_class(started.code).title == "<b>Lecture</b> '; DROP TABLE classes; --"
    hostile = Question(
        "q-h", "attention", "Robert'); DROP TABLE answers;--", "$x$ <img src=x>", ("😍", "الانتباه"), 0, "😍"
    )
    store.record_answer(started.code, "student-one-0123456789", hostile, "الانتباه", False)
    (spread,) = store.spread(started.code, started.lecturer_key)
    assert spread.question == hostile and spread.counts == (("😍", 0, True), ("الانتباه", 1, False))


def _question(number: int) -> Question:
    return Question(f"q-{number}", "tokenization", f"Question {number}", "How many?", ("3", "4"), 0, "4")


def test_sessions_arriving_together_on_a_new_database_all_find_its_tables(tmp_path):
    fresh = ClassStore(f"sqlite:///{tmp_path / 'fresh.sqlite'}")
    with ThreadPoolExecutor(8) as pool:
        reachable = list(pool.map(lambda _: fresh.is_reachable(), range(8)))
    assert reachable == [True] * 8
    assert fresh.start_class("Lecture", 90).info.title == "Lecture"


def test_a_database_that_does_not_answer_is_named_as_such_not_as_a_crash(tmp_path):
    nowhere = ClassStore("postgresql+psycopg://nobody:nothing@127.0.0.1:9/none")
    assert not nowhere.is_reachable()
    with pytest.raises(classroom.ClassStoreUnavailable, match="cannot be reached"):
        nowhere.find_class("A" * 22)


def _one_character_off(key: str) -> str:
    return key[:-1] + ("A" if key[-1] != "A" else "B")


@pytest.mark.parametrize(
    ("address", "base"),
    [
        ("http://127.0.0.1:8501/class", "http://127.0.0.1:8501"),
        ("http://127.0.0.1:8501/class/", "http://127.0.0.1:8501"),
        ("http://127.0.0.1:8501", "http://127.0.0.1:8501"),
        ("https://uni.example/anatomy/attention?text=x", "https://uni.example/anatomy"),
        ("", ""),
    ],
)
def test_the_links_lead_to_the_app_from_whatever_page_the_lecturer_started_on(address, base):
    student, lecturer = classroom.class_links(address, ("home", "attention", "class"), "C" * 22, "K" * 32)
    assert student == f"{base}/?class={'C' * 22}"
    assert lecturer == f"{base}/class?class={'C' * 22}&key={'K' * 32}"


def test_every_value_from_a_link_or_a_form_reaches_the_database_as_a_bound_parameter(store):
    statements: list[str] = []
    parameters: list[str] = []

    @sa.event.listens_for(store.engine, "before_cursor_execute")
    def record(_connection, _cursor, statement, bound, _context, _many) -> None:
        statements.append(statement)
        parameters.append(repr(bound))

    marker = "Robert'); DROP TABLE answers;-- 😍"
    started = store.start_class(marker, 90)
    hostile = Question(f"q-{marker}", marker, marker, marker, (marker, "b"), 0, marker)
    store.record_answer(started.code, f"student-{marker}", hostile, marker, True)
    store.spread(started.code, started.lecturer_key)
    store.reveal(started.code, started.lecturer_key, hostile.asked)
    store.revealed(started.code, hostile.asked)
    for value in (marker, started.code, started.lecturer_key, classroom.digest(started.code)):
        assert not [statement for statement in statements if value in statement]
    assert any(marker in bound for bound in parameters) and any(
        classroom.digest(started.code) in bound for bound in parameters
    )


def test_text_no_database_keeps_as_it_is_is_stored_with_replacement_characters(store):
    started = store.start_class("Lecture\x00 3", 90)
    assert store.find_class(started.code).title == "Lecture\ufffd 3"
    weird = Question("q-nul", "tokenization", "A\x00B", "Which\x00?", ("\x00", "\ud800"), 0, "\x00")
    store.record_answer(started.code, "student-one-0123456789", weird, "\ud800", False)
    (spread,) = store.spread(started.code, started.lecturer_key)
    assert spread.question.options == ("\ufffd", "?") and spread.counts[1] == ("?", 1, False)
