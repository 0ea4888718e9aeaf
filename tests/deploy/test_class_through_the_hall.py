"""A class answering together through the lecture hall for real: two replicas behind nginx and the class
database they share (PostgreSQL where it is installed; CI requires it). Every acknowledged answer is counted
exactly once whichever replica took it, the lecturer's page catches up with all of them, a replica killed
afterwards loses none, and nginx's log holds no class code or key."""

from __future__ import annotations

import os
import signal
import time

import pytest

from harness.answering import answer_together
from harness.hall import Hall, visit
from harness.load import run_coroutine
from lessons.common.class_store import ClassStore

pytestmark = [pytest.mark.slow, pytest.mark.solo]
STUDENTS, WITHIN_SECONDS = 20, 8


@pytest.fixture(scope="module")
def hall(tmp_path_factory):
    with Hall(tmp_path_factory.mktemp("class-hall"), replicas=2) as running:
        yield running


@pytest.fixture(scope="module")
def store(hall) -> ClassStore:
    return ClassStore(hall.database_url)


def test_every_acknowledged_answer_through_the_hall_is_counted_once_and_reaches_the_lecturer(hall, store):
    figures = run_coroutine(answer_together(hall.url, store, STUDENTS, WITHIN_SECONDS))
    assert figures["problems"] == [] and figures["lecturer_problems"] == [], figures
    assert figures["acknowledged"] == figures["counted"] == STUDENTS, figures
    assert figures["each_acknowledged_answer_counted_once"], figures
    assert set(figures["students_per_replica"]) == set(hall.names), figures  # both replicas took answers
    assert figures["lecturer_last_shown"] == STUDENTS, figures  # the lecturer's page caught up with every answer


def test_a_replica_killed_loses_no_acknowledged_answer_and_the_class_goes_on(hall, store):
    started = store.start_class("Kill one", 30)
    # Within half a second: their connections overlap, so nginx (least_conn) gives each replica some of them.
    figures = run_coroutine(answer_together(hall.url, store, 6, 0.5, seed=1, started=started))
    assert figures["acknowledged"] == figures["counted"] == 6, figures
    assert "replica-0" in figures["students_per_replica"], figures  # some of them answered through the one killed
    hall.restarting.clear()  # the killed replica stays dead for this test
    try:
        os.kill(hall.pid("replica-0"), signal.SIGKILL)
        time.sleep(1)
        assert store.spread(started.code, started.lecturer_key)[0].answered == 6  # all still counted
        after = run_coroutine(answer_together(hall.url, store, 4, 2, seed=2))  # the survivor takes them all
        assert after["acknowledged"] == after["counted"] == 4 and set(after["students_per_replica"]) == {"replica-1"}
    finally:
        hall.restarting.set()


def test_nginx_logs_a_class_link_without_its_code_or_key(hall, store):
    started = store.start_class("Logged", 30)
    assert visit(f"{hall.url}/class?class={started.code}&key={started.lecturer_key}", {}).status == 200
    # nginx writes a request's log line after it has sent the response: the client can read first.
    access_log, deadline = hall.prefix / "logs" / "access.log", time.monotonic() + 10
    while "GET /class" not in (log := access_log.read_text(encoding="utf-8")) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert "GET /class" in log and started.code not in log and started.lecturer_key not in log
