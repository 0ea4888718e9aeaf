"""A class answering one exercise together, through the lecture hall, and the lecturer watching the spread.

Each student is a websocket tab (harness.client.Tab) that opens the student link on the tokenization lesson's
"count" exercise about the lecturer's sentence, at a moment drawn within the first `within` seconds, gives a
number and presses Check. An answer counts as acknowledged when the page that comes back says it is recorded
for the class. Meanwhile a lecturer tab on the Class page runs again every `LECTURER_POLL_SECONDS`, as the
browser's timer reruns the live spread, and notes how many answers it shows. Afterwards the database's spread
is compared with the acknowledged answers: each counted exactly once, no answer that was not acknowledged.
"""

from __future__ import annotations

import asyncio
import random
import re
import statistics
import time
from collections import Counter
from dataclasses import dataclass, field

from harness.client import Tab
from lessons.common.class_store import ClassStore
from lessons.common.classroom import NewClass, Spread
from lessons.common.ui.classroom import LECTURER_POLL_SECONDS

TEXT = "the cat sat on the mat"  # the lecturer's sentence, in the student link: everyone gets one question
RECORDED = "is recorded for the class"
TIMEOUT_SECONDS = 120.0
ANSWERED = re.compile(r"^(\d+) answered")


@dataclass
class Answer:
    """One student's answer and what became of it."""

    student: int
    value: float
    replica: str = ""
    round_trip_s: float | None = None  # from Check pressed to the page saying it is recorded
    acknowledged_at: float | None = None  # seconds since the class began
    problem: str = ""


@dataclass
class LecturerView:
    """What the lecturer's page showed, refresh by refresh: (seconds since the class began, answers shown)."""

    shown: list[tuple[float, int]] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)


async def one_student(url: str, code: str, number: int, start_at: float, began: float, rng: random.Random) -> Answer:
    answer = Answer(number, float(rng.randint(4, 9)))
    await asyncio.sleep(max(0.0, began + start_at - time.monotonic()))
    tab = Tab(url)
    try:
        run = await tab.open("tokenization", {"class": code, "exercise": "count", "text": TEXT}, TIMEOUT_SECONDS)
        answer.replica = tab.replica
        form = run.form()
        if form is None:
            answer.problem = f"no answer field; the page said {run.messages()[:3]}"
            return answer
        pressed = time.monotonic()
        run = await tab.submit(form[0], answer.value, form[1], TIMEOUT_SECONDS)
        if any(RECORDED in message for message in run.messages()):
            answer.round_trip_s = time.monotonic() - pressed
            answer.acknowledged_at = time.monotonic() - began
        else:
            answer.problem = f"not acknowledged; the page said {run.messages()[:4]}"
    except Exception as error:  # a lost connection, a timeout: this student's problem, reported, not the run's end
        answer.problem = f"{type(error).__name__}: {error}"
    finally:
        await tab.close()
    return answer


async def lecturer(url: str, code: str, key: str, began: float, done: asyncio.Event, view: LecturerView) -> None:
    tab = Tab(url)
    try:
        run = await tab.open("class", {"class": code, "key": key}, TIMEOUT_SECONDS)
        while True:
            view.shown.append((time.monotonic() - began, _answers_shown(run.messages())))
            if done.is_set():
                return
            await asyncio.sleep(LECTURER_POLL_SECONDS)
            run = await tab.rerun(TIMEOUT_SECONDS)
    except Exception as error:
        view.problems.append(f"{type(error).__name__}: {error}")
    finally:
        await tab.close()


def _answers_shown(messages: list[str]) -> int:
    return sum(int(found.group(1)) for message in messages if (found := ANSWERED.match(message)))


async def answer_together(
    url: str,
    store: ClassStore,
    students: int,
    within: float,
    settle: float = 2 * LECTURER_POLL_SECONDS + 2,
    seed: int = 0,
    started: NewClass | None = None,
) -> dict:
    """`students` answer one exercise within `within` seconds through `url`, in the class `started` or in one
    started here in `store` (the database the replicas use). Returns the figures (see the module's docstring)."""
    started = started or store.start_class(f"{students} students answering together", 60)
    rng = random.Random(seed)
    began = time.monotonic()
    view, done = LecturerView(), asyncio.Event()
    watching = asyncio.create_task(lecturer(url, started.code, started.lecturer_key, began, done, view))
    answers = await asyncio.gather(
        *(
            one_student(url, started.code, number, rng.uniform(0, within), began, random.Random(f"{seed}/{number}"))
            for number in range(students)
        )
    )
    await asyncio.sleep(settle)  # the lecturer's page refreshes at least once more after the last answer
    done.set()
    await watching
    spreads = store.spread(started.code, started.lecturer_key)  # one question, or none if nobody got to answer
    return figures(answers, view, spreads[0] if spreads else None, time.monotonic() - began)


def figures(answers: list[Answer], view: LecturerView, spread: Spread | None, seconds: float) -> dict:
    acknowledged = [answer for answer in answers if answer.acknowledged_at is not None]
    expected = Counter(f"{answer.value:.0f}" for answer in acknowledged)
    counted = Counter({value: count for value, count, _ in spread.counts if count}) if spread else Counter()
    round_trips = sorted(answer.round_trip_s for answer in acknowledged if answer.round_trip_s is not None)
    lags = _lecturer_lags(sorted(answer.acknowledged_at for answer in acknowledged if answer.acknowledged_at), view)
    return {
        "students": len(answers),
        "seconds": round(seconds, 1),
        "acknowledged": len(acknowledged),
        "counted": sum(counted.values()),
        "each_acknowledged_answer_counted_once": counted == expected,
        "missing_from_the_count": dict(expected - counted),
        "counted_but_not_acknowledged": dict(counted - expected),
        "round_trip_s": _quantiles(round_trips),
        "lecturer_lag_s": _quantiles(lags),
        "lecturer_refreshes": len(view.shown),
        "lecturer_last_shown": view.shown[-1][1] if view.shown else 0,
        "lecturer_problems": view.problems,
        "students_per_replica": dict(Counter(answer.replica or "?" for answer in answers)),
        "problems": [f"student {answer.student}: {answer.problem}" for answer in answers if answer.problem][:10],
        "problem_count": sum(bool(answer.problem) for answer in answers),
    }


def _lecturer_lags(acknowledged_at: list[float], view: LecturerView) -> list[float]:
    """For the k-th acknowledged answer, how long until the lecturer's page first showed k answers or more
    (the last answers, if the page never caught up, count up to its last refresh: reported, not hidden)."""
    lags = []
    for k, moment in enumerate(acknowledged_at, 1):
        caught_up = next((at for at, shown in view.shown if shown >= k and at >= moment), None)
        last = view.shown[-1][0] if view.shown else moment
        lags.append((caught_up if caught_up is not None else last) - moment)
    return lags


def _quantiles(values: list[float]) -> dict:
    if not values:
        return {}
    ordered = sorted(values)
    return {
        "p50": round(statistics.median(ordered), 2),
        "p95": round(ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))], 2),
        "max": round(ordered[-1], 2),
    }
