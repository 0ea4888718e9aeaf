"""A class in the lecture hall (harness/hall.py), measured through nginx: students who behave like students.

Each student keeps one browser tab and is seeded (`random.Random`), so a run can be repeated. It opens the
lecturer's link on a lesson with a sentence of its own, then goes round, pausing a few seconds before every
step as a reader does (`pauses`): another lesson (by the sidebar's navigation, now and then by a fresh link,
as a reload or a new tab does), a new sentence typed into the sidebar, an exercise answered through the
check-yourself form, and, for the students who write, lesson 9's Writing tab with SmolLM2.

After every view it checks that it sees only its own text and results: the server's copy of its text (written
into the link) is its own sentence, figures labelled with tokens carry its own marker and no other student's,
what SmolLM2 wrote follows its own sentence, and the session's tally of exercises counts its own answers. It
records which replica served it (nginx's `X-Anatomy-Replica` on the websocket's handshake), which must never
change while that replica lives.

When its websocket closes under it (a replica killed), it notes what it saw and does what Streamlit's page
does: asks for the health endpoint with its cookies and opens its last address again, the page with the link's
query, which carries the view and the text. The link must give it back its text, on a live replica.

`run_class` runs one class against one address (a replica directly, or nginx) and reads each replica's CPU
time and memory from /proc; `compare` runs every configuration in one go (benchmarks/load_test.py --hall).
"""

from __future__ import annotations

import asyncio
import collections
import random
import threading
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from urllib.parse import parse_qsl

from websockets.exceptions import ConnectionClosed

from harness.client import PageRun, Tab
from harness.hall import visit
from harness.load import cpu_seconds, p50_p95, record_run, rss_bytes, websocket_fingerprint
from harness.room import VIEW_TIMEOUT_SECONDS, Lesson, Tally, lessons_for, student_text

PAUSES = (2.0, 6.0)  # seconds a student reads a view before its next step (uniform)
RELOAD_SHARE = 0.25  # of the steps to another lesson: a fresh link (a new session) instead of the navigation
LANGUAGE_MODEL = "SmolLM2-135M-Instruct"  # lessons.common.hosting.LANGUAGE_MODEL: ?fingerprint=... names it
# Exercises a student answers, in turn: (page, exercise), each asking about the student's own text.
EXERCISES = (("tokenization", "count"), ("positional", "value"), ("encoder", "block"), ("tokenization", "pieces"))
RIGHT, WRONG, NOTHING_TO_ASK = "Right:", "You answered", "This exercise has nothing to ask"


def seat_text(session: int, round_number: int, class_name: str) -> str:
    """A sentence no other student of any class writes: the room's sentence (its marker and round colour, which
    the figures' checks look for), the student's seat, and the class."""
    return f"{student_text(session, round_number)} from seat {session} of class {class_name}"


def writing_lesson(session: int) -> Lesson:
    """Lesson 9's Writing tab, sampled with the student's own seed."""
    return Lesson("language_model", {"lm_tab": "Writing", "lm_mode": "sampled", "lm_seed": session}, 1, False)


@dataclass
class Seen:
    """One thing a student saw: when (seconds since the class began), on which replica, what."""

    at: float
    replica: str
    what: str


@dataclass
class Student:
    """One student's tab, own text and record."""

    url: str
    session: int
    class_name: str
    began: float
    tally: Tally
    writes: bool
    pauses: tuple[float, float]
    tab: Tab = field(init=False)
    rng: random.Random = field(init=False)
    journal: list[Seen] = field(default_factory=list)
    round_number: int = 0
    lesson: Lesson = field(init=False)  # the view it is on, and that view's run
    last_run: PageRun = field(default_factory=PageRun)
    address: str = ""  # the query of the last view the server finished: what the address bar shows
    last_view_clean: bool = False
    answered: int = 0  # exercises answered in the tab's current session
    replica: str | None = None  # where it has been served since it last (re)connected

    def __post_init__(self) -> None:
        self.tab = Tab(self.url)
        self.rng = random.Random(f"{self.class_name}/{self.session}")
        self.lessons = lessons_for(self.session % 6, (5 * self.session) % 12)
        self.lesson = self.lessons[self.session % len(self.lessons)]

    @property
    def text(self) -> str:
        return seat_text(self.session, self.round_number, self.class_name)

    def seconds(self) -> float:
        return time.monotonic() - self.began

    def note(self, what: str) -> None:
        self.journal.append(Seen(round(self.seconds(), 1), self.tab.replica or "direct", what))

    async def attend(self, deadline: float) -> None:
        """Open the link, then go round the steps until the deadline."""
        steps = [self.another_lesson, self.new_text, self.an_exercise] + ([self.write] if self.writes else [])
        await asyncio.sleep(self.rng.uniform(0, 2))  # the room opens the link within a few seconds
        step, turn = self.open_link(self.lesson), 0
        try:
            while True:
                try:
                    try:
                        await step
                    except ConnectionClosed as closed:
                        self.note(f"connection closed ({closed.rcvd.code if closed.rcvd else 'no close frame'})")
                        await self.reconnect()
                except Exception as error:
                    self.tally.errors.append(
                        f"session {self.session} {self.lesson.path}: {type(error).__name__}: {str(error)[:160]}"
                    )
                await asyncio.sleep(self.rng.uniform(*self.pauses))
                if time.monotonic() >= deadline:
                    return
                step, turn = steps[turn % len(steps)](), turn + 1
        finally:
            await self.tab.close()

    async def open_link(self, lesson: Lesson) -> None:
        """A link with the student's text, opened in the tab: a new session."""
        await self.view(
            lesson, "link", self.tab.open(lesson.path, {"text": self.text, **lesson.query}, VIEW_TIMEOUT_SECONDS)
        )
        self.answered = 0

    async def another_lesson(self) -> None:
        lesson = self.rng.choice(self.lessons)
        if self.rng.random() < RELOAD_SHARE:
            await self.open_link(lesson)
        else:
            await self.view(lesson, "navigated", self.tab.navigate(lesson.path, lesson.query, VIEW_TIMEOUT_SECONDS))

    async def new_text(self) -> None:
        """Type the next sentence into the sidebar, on the view the student is on."""
        widget = self.last_run.text_area("Text to study").id
        self.round_number += 1
        try:
            await self.view(self.lesson, "typed", self.tab.set_text(widget, self.text, VIEW_TIMEOUT_SECONDS))
        except BaseException:
            self.round_number -= 1  # the server never took it: the link still carries the sentence before
            raise

    async def an_exercise(self) -> None:
        """Open the next exercise, choose an answer, press Check; the reveal and the tally must be its own."""
        page, name = EXERCISES[self.rng.randrange(len(EXERCISES))]
        lesson = Lesson(page, {"exercise": name}, 0, False)
        run = await self.view(lesson, "exercise", self.tab.navigate(page, lesson.query, VIEW_TIMEOUT_SECONDS))
        form = run.form()
        if form is None:  # asked before on this text (the reveal shows), or nothing to ask about it
            return
        answer_field, check = form
        answer = (
            self.rng.choice(list(answer_field.options))
            if hasattr(answer_field, "options")
            else 1.0 * self.rng.randint(1, 40)
        )
        start = time.monotonic()
        run = await self.tab.submit(answer_field, answer, check, VIEW_TIMEOUT_SECONDS)
        self.answered += 1
        problems = answer_problems(run.messages(), self.answered)
        self.record(run, lesson, "answered", start, problems)

    async def write(self) -> None:
        lesson = writing_lesson(self.session)
        run = await self.view(lesson, "wrote", self.tab.navigate(lesson.path, lesson.query, VIEW_TIMEOUT_SECONDS))
        if not any(message.startswith(self.text) for message in run.messages()):
            self.tally.errors.append(f"session {self.session} language_model: no writing after its own text")

    async def reconnect(self) -> None:
        """What Streamlit's page does when its websocket closes: the health check, then its address again."""
        query, lost = dict(parse_qsl(self.address)), self.tab.replica or "direct"
        await asyncio.to_thread(visit, f"{self.url}/_stcore/health", self.tab.cookies, "identity", VIEW_TIMEOUT_SECONDS)
        self.replica = None  # a new connection: nginx may send it elsewhere now that its replica is gone
        await self.view(self.lesson, "reconnected", self.tab.open(self.lesson.path, query, VIEW_TIMEOUT_SECONDS))
        self.answered = 0
        restored = query.get("text") == self.text and self.last_view_clean
        self.note(f"reconnected (was on {lost}); text restored from the link: {'yes' if restored else 'NO'}")

    async def view(self, lesson: Lesson, how: str, asked: Awaitable[PageRun]) -> PageRun:
        """Wait for a view the tab asked for, then check and count it."""
        start = time.monotonic()
        run = await asked
        self.lesson, self.last_run, self.address = lesson, run, self.tab.query_string
        self.record(run, lesson, how, start)
        return run

    def record(self, run, lesson: Lesson, how: str, start: float, problems: list[str] | None = None) -> None:
        served_by = self.tab.replica or "direct"
        problems = list(problems or [])
        if self.replica is not None and served_by != self.replica and self.replica not in self.tally.killed:
            problems.append(f"moved from {self.replica} to {served_by} while {self.replica} lived")
        if self.replica is None:
            self.note(f"served by {served_by}")
        self.replica = served_by
        errors_before = len(self.tally.errors)  # (no other student runs until this function returns)
        record_run(
            self.tally,
            run,
            self.tab.query_string,
            self.session,
            lesson,
            self.round_number,
            how,
            start,
            self.began,
            problems,
            text=self.text,
        )
        self.last_view_clean = len(self.tally.errors) == errors_before


def answer_problems(messages: list[str], answered: int) -> list[str]:
    """What is wrong with the page after Check: no verdict, or a tally that is not this session's own."""
    problems = [] if any(message.startswith((RIGHT, WRONG)) for message in messages) else ["Check showed no verdict"]
    tally = next((message for message in messages if message.startswith("This session:")), "")
    if f" of {answered} exercise" not in tally:
        problems.append(f"the tally says {tally!r} after {answered} answer(s) in this session")
    return problems


# ---------------------------------------------------------------------------------------------------------
# One class, measured


class ReplicaMeter:
    """Each replica's memory (VmRSS) and CPU time, read from /proc twice a second while a class runs. A replica
    started again is another process: its CPU time is counted from its own first reading."""

    def __init__(self, pids: Callable[[], dict[str, int]]):
        self.pids = pids
        self.readings: dict[str, dict[int, list[tuple[int, float]]]] = {}  # name -> pid -> [(rss, cpu)]
        self._running = threading.Event()
        self._thread = threading.Thread(target=self._read, daemon=True)

    def __enter__(self) -> ReplicaMeter:
        self._take_readings()
        self._running.set()
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._running.clear()
        self._thread.join()
        self._take_readings()

    def _read(self) -> None:
        while self._running.is_set():
            self._take_readings()
            time.sleep(0.5)

    def _take_readings(self) -> None:
        for name, pid in self.pids().items():
            try:
                reading = (rss_bytes(pid), cpu_seconds(pid))
            except (FileNotFoundError, ProcessLookupError, IndexError):
                continue  # killed between the listing and the reading
            self.readings.setdefault(name, {}).setdefault(pid, []).append(reading)

    def figures(self) -> dict[str, dict]:
        """Per replica: CPU seconds used during the class, and memory (MiB) at its start, at most, at its end."""
        figures = {}
        for name, by_pid in sorted(self.readings.items()):
            # a killed replica reads 0 until it is reaped: it held nothing then
            readings = [reading for pid_readings in by_pid.values() for reading in pid_readings if reading[0]]
            figures[name] = {
                "cpu_s": round(sum(each[-1][1] - each[0][1] for each in by_pid.values()), 1),
                "rss_mib_start_max_end": [
                    round(rss / 2**20) for rss in (readings[0][0], max(r for r, _ in readings), readings[-1][0])
                ],
                "processes": len(by_pid),
            }
        return figures


async def fingerprints(replica_urls: dict[str, str], models: tuple[str, ...]) -> dict[str, dict[str, str]]:
    """The shared weights' hashes inside each replica, asked of it directly (not through the proxy)."""
    return {
        name: {model: await websocket_fingerprint(url, model) for model in models} for name, url in replica_urls.items()
    }


async def hold_class(
    url: str,
    sessions: int,
    duration: float,
    writers: set[int],
    class_name: str,
    pauses: tuple[float, float] = PAUSES,
    kill: Callable[[], tuple[str, int]] | None = None,
    kill_at: float | None = None,
) -> dict:
    """`sessions` students at `url` for `duration` seconds (views in flight finish, within VIEW_TIMEOUT_SECONDS);
    `kill`, called `kill_at` seconds in, kills a replica and says which (its name and PID)."""
    tally, began = Tally(), time.monotonic()
    students = [Student(url, index, class_name, began, tally, index in writers, pauses) for index in range(sessions)]
    attending = [asyncio.create_task(student.attend(began + duration)) for student in students]
    killed: dict = {}

    async def killer(kill: Callable[[], tuple[str, int]]) -> None:
        await asyncio.sleep(kill_at or 0)
        name, pid = kill()
        tally.killed.add(name)  # before any student can see it gone
        killed.update(replica=name, pid=pid, at_s=round(time.monotonic() - began, 1))

    killing = asyncio.create_task(killer(kill)) if kill is not None else None
    _, late = await asyncio.wait(attending, timeout=duration + VIEW_TIMEOUT_SECONDS + 30)
    for task in late:
        task.cancel()
    tally.errors += ["a student was still waiting for a view when the class's time ran out"] * len(late)
    if killing is not None:
        await killing
    elapsed = time.monotonic() - began
    return {"tally": tally, "students": students, "duration": duration, "elapsed": elapsed, "killed": killed}


def summarise_class(outcome: dict) -> dict:
    """Throughput, page times, errors, where each student was served, and, after a kill, what each saw."""
    tally: Tally = outcome["tally"]
    students: list[Student] = outcome["students"]
    times = [view.seconds for view in tally.views]
    in_time = sum(view.started + view.seconds <= outcome["duration"] for view in tally.views)
    hows = sorted({view.how for view in tally.views})
    first_replicas = collections.Counter(
        next((seen.replica for seen in student.journal if seen.what.startswith("served")), "none")
        for student in students
    )
    return {
        "sessions": len(students),
        "writers": sum(student.writes for student in students),
        "elapsed_s": round(outcome["elapsed"], 1),
        "views": len(times),
        # views finished within the class's time, over that time: a slow view in flight at the end (SmolLM2
        # writing, on a busy machine) would otherwise stretch the divisor
        "views_per_s": round(in_time / outcome["duration"], 2),
        "views_per_student_per_minute": round(60 * in_time / outcome["duration"] / len(students), 2),
        "page_time_p50_p95_s": p50_p95(times),
        "page_time_p50_p95_s_by_step": {how: p50_p95([v.seconds for v in tally.views if v.how == how]) for how in hows},
        "views_by_step": {how: sum(view.how == how for view in tally.views) for how in hows},
        "views_per_student_min_max": [min(counts), max(counts)]
        if (counts := [sum(v.session == s.session for v in tally.views) for s in students])
        else None,
        "errors": len(tally.errors),
        "error_samples": tally.errors[:12],
        "students_by_replica": dict(sorted(first_replicas.items())),
        "students_moved_while_their_replica_lived": sum(
            "while" in error and "lived" in error for error in tally.errors
        ),
        **({"kill": what_each_student_saw(students, outcome["killed"])} if outcome["killed"] else {}),
    }


def what_each_student_saw(students: list[Student], killed: dict) -> dict:
    """After a replica was killed: the journal of every student it served, and whether anyone else noticed."""
    on_killed = [s for s in students if any(seen.replica == killed["replica"] for seen in s.journal)]
    others = [s for s in students if s not in on_killed]
    return {
        **killed,
        "its_students": len(on_killed),
        "its_students_who_saw_the_connection_close": sum(
            any("closed" in seen.what for seen in s.journal) for s in on_killed
        ),
        "its_students_back_with_their_text": sum(
            any("restored from the link: yes" in seen.what for seen in s.journal) for s in on_killed
        ),
        "landed_on": dict(collections.Counter(s.journal[-1].replica for s in on_killed)),
        "other_students": len(others),
        "other_students_who_saw_anything_but_their_views": sum(len(s.journal) > 1 for s in others),
        "journals": {s.session: [f"{seen.at} s {seen.replica}: {seen.what}" for seen in s.journal] for s in on_killed},
    }
