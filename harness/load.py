"""A lecture room on loopback: many students on one server at once, each with their own text and choices.

Starts `streamlit run app.py` in hosted mode on a free loopback port and drives N sessions for a bounded
time. Each session is one student: a text with its own marker word (penguin, kangaroo, ...), its own layer
and head, a round of lessons opened from links (each a new session, as a reload is), and a new text typed
into the sidebar every other lesson. After every view the student checks that it sees only its own
results: the sidebar holds its own text, the figures carry its own tokens (its marker and the colour word of
the current round) and no other student's marker. Exceptions and error messages count as errors.

Websocket students also give their marker to the models trained here: the sorter on the causal page (every
other student with the cheater beside it) and the reverser on the decoder page must each name that word and
the answer written for it, and no other student's word. Every fifth student (`--trainers`) is a trainer: every
other view it opens "Train it yourself" from a link with its own model, steps, learning rate and seed, and
presses Train. The server gives each run a few seconds (TRAINING_BUDGET_SECONDS), and runs take turns, so a
press ends finished, stopped by the budget, or, after waiting too long for its turn, with the page's polite
"try again" message: all three are fine. No outcome, an exception, or attention figures drawn on another
word than the trainer's own count as errors.

Two kinds of student:
  --client websocket  (default) Streamlit's own websocket protocol (benchmarks/streamlit_client.py): the
                      server does all its work, no browser draws; page time = request to script finished.
  --client browser    a browser context each, in one headless Chromium: page time = navigation to every
                      figure painted. On a 2-core machine Chromium, not the server, is then the bottleneck.

The server's memory (VmRSS) and CPU time are read from /proc, and the shared model's weights are hashed
inside the server before and after the run (the opt-in `?fingerprint=1` caption, enabled by
ANATOMY_DEBUG_FINGERPRINT) and compared with a fresh load of the checkpoint in this process; so are the
three models trained here (`?fingerprint=sorter`, ...), which the trainers must never touch.

benchmarks/load_test.py runs it from the command line; tests/app/test_load_smoke.py runs small versions of both
in CI.
"""

from __future__ import annotations

import asyncio
import collections
import os
import random
import re
import statistics
import threading
import time
from collections.abc import Coroutine
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import parse_qsl

from harness.room import (
    LESSON_ERRORS,
    TRAINING_BUDGET_SECONDS,
    TRAINING_OUTCOMES,
    VIEW_TIMEOUT_SECONDS,
    WAITING_NOTICE,
    Lesson,
    Tally,
    View,
    lessons_for,
    student_text,
    student_word,
    trainer_sessions,
    training_lesson,
    training_problems,
    view_problems,
    word_problems,
)
from harness.server import ARTIFACTS, StreamlitServer

ROOT = Path(__file__).resolve().parents[1]

TRAINED_MODELS = ("sorter", "sorter-cheater", "reverser")  # fingerprinted beside the embedded model


# ---------------------------------------------------------------------------------------------------------
# The server


class Server(StreamlitServer):
    """`streamlit run app.py` in hosted mode on loopback (tests/browser/served_app.py), its memory sampled
    twice a second."""

    def __init__(self, log_path: Path, extra_environment: dict | None = None):
        super().__init__(
            log_path, environment={"ANATOMY_HOSTED": "1", "ANATOMY_DEBUG_FINGERPRINT": "1", **(extra_environment or {})}
        )
        self.rss_samples: list[tuple[float, int]] = []  # (seconds since start, bytes)
        self._sampling = False

    def __enter__(self) -> Server:
        super().__enter__()
        self._sampling, self._started = True, time.monotonic()
        threading.Thread(target=self._sample, daemon=True).start()
        return self

    def __exit__(self, *exc) -> None:
        self._sampling = False
        super().__exit__(*exc)

    def rss(self) -> int:
        return rss_bytes(self.started_process.pid)

    def cpu_seconds(self) -> float:
        return cpu_seconds(self.started_process.pid)

    def seconds(self) -> float:
        """Seconds since the server answered its first health check (the clock of `rss_samples`)."""
        return time.monotonic() - self._started

    def _sample(self) -> None:
        while self._sampling and self.started_process.poll() is None:
            self.rss_samples.append((time.monotonic() - self._started, self.rss()))
            time.sleep(0.5)


def rss_bytes(pid: int) -> int:
    """The resident memory (VmRSS) of a process; 0 once it has gone."""
    try:
        lines = Path(f"/proc/{pid}/status").read_text().splitlines()
    except (FileNotFoundError, ProcessLookupError):
        return 0
    return next((int(line.split()[1]) * 1024 for line in lines if line.startswith("VmRSS:")), 0)


def cpu_seconds(pid: int) -> float:
    """User plus system CPU time a process has used so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


# ---------------------------------------------------------------------------------------------------------
# Students over the websocket


async def websocket_student(
    base_url: str, session: int, deadline: float, began: float, tally: Tally, trains: bool = False
) -> None:
    """One student (see load_room), speaking Streamlit's websocket protocol: no browser draws anything.
    A trainer opens the training page and presses Train every other view."""
    from harness.client import Tab

    tab = Tab(base_url)
    layer, head = session % 6, (5 * session) % 12
    lessons = lessons_for(layer, head, student_word(session))
    step, round_number = session % len(lessons), 0
    await asyncio.sleep(random.Random(session).uniform(0, 2))
    try:
        while time.monotonic() < deadline:
            if trains:
                lesson = training_lesson(session, step // 2) if step % 2 == 0 else lessons[step // 2 % len(lessons)]
            else:
                lesson = lessons[step % len(lessons)]
            try:
                start = time.monotonic()
                run = await tab.open(
                    lesson.path, {"text": student_text(session, round_number), **lesson.query}, VIEW_TIMEOUT_SECONDS
                )
                record_run(tally, run, tab.query_string, session, lesson, round_number, "link", start, began)
                if lesson.path == "training" and time.monotonic() < deadline:
                    start = time.monotonic()
                    run = await tab.press(run.button("tr_train").id, VIEW_TIMEOUT_SECONDS)
                    record_training(tally, run, tab.query_string, session, lesson, round_number, start, began)
                elif step % 2 == 1 and time.monotonic() < deadline:
                    round_number += 1
                    widget = run.text_area("Text to study").id
                    start = time.monotonic()
                    run = await tab.set_text(widget, student_text(session, round_number), VIEW_TIMEOUT_SECONDS)
                    record_run(tally, run, tab.query_string, session, lesson, round_number, "typed", start, began)
            except Exception as error:
                tally.errors.append(f"session {session} {lesson.path}: {type(error).__name__}: {str(error)[:160]}")
            step += 1
    finally:
        await tab.close()


def record_run(
    tally: Tally,
    run,
    tab_query: str,
    session: int,
    lesson: Lesson,
    round_number: int,
    how: str,
    start: float,
    began: float,
    more_problems: list[str] | None = None,
    text: str | None = None,
) -> None:
    """Count the view, or its problems as errors. `text`: the student's own text, when not `student_text`'s."""
    seconds = time.monotonic() - start
    # What the server holds as this session's text: it writes it into the address on every change.
    holds = dict(parse_qsl(tab_query)).get("text", "")
    words = None
    if lesson.shows_tokens:
        words = {word for label in run.figure_labels() for word in re.findall(r"[a-z]+", label)}
    problems = [f"exception: {message[:160]}" for message in run.exceptions]
    problems += [f"error message: {message[:160]}" for message in run.errors if not message.startswith(LESSON_ERRORS)]
    own_text = student_text(session, round_number) if text is None else text
    # An exercise left open on a lesson stays open when the learner comes back to it, and a new text asks it
    # anew: the page then shows the question, not the figures, until the student answers (its `form`).
    problems += view_problems(session, round_number, own_text, holds, words, figures_held_back=run.form() is not None)
    if lesson.answer is not None:
        problems += word_problems(session, lesson.answer, words_of(run.messages()))
    problems += more_problems or []
    tally.errors += [f"session {session} {lesson.path} ({how}): {problem}" for problem in problems]
    if not problems:
        tally.views.append(View(session, lesson.path, how, seconds, start - began, run.received_bytes, run.replica))


def record_training(
    tally: Tally, run, tab_query: str, session: int, lesson: Lesson, round_number: int, start: float, began: float
) -> None:
    """The page after Train: how the run ended, whether it waited for its turn, and whose word it shows."""
    messages = run.messages()
    outcome = next(
        (name for message in messages for prefix, name in TRAINING_OUTCOMES.items() if message.startswith(prefix)), None
    )
    waited = any(message.startswith(WAITING_NOTICE) for message in messages)
    letters = {word for word in words_of(run.figure_labels()) if len(word) == 1}
    problems = training_problems(student_word(session), outcome, letters)
    if outcome is not None:
        tally.trainings.append((session, outcome, waited))
    record_run(tally, run, tab_query, session, lesson, round_number, "trained", start, began, problems)


def words_of(texts: list[str]) -> set[str]:
    return {word for text in texts for word in re.findall(r"[a-z]+", text)}


# ---------------------------------------------------------------------------------------------------------
# The run


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(share * len(ordered) + 0.5) - 1))] if ordered else float("nan")


def reference_fingerprint() -> str:
    """The checkpoint's weights as loaded fresh in this process (no session has touched them)."""
    from anatomy.checkpoints.pretrained import load_pretrained
    from lessons.common.ui.loaders import weights_fingerprint

    return weights_fingerprint(load_pretrained(device="cpu").model)


def reference_fingerprints() -> dict[str, str]:
    """The models trained here as loaded fresh from their shipped files."""
    from anatomy.checkpoints.pretrained import load_pretrained
    from anatomy.training.recipes import RECIPES
    from lessons.common.ui.loaders import weights_fingerprint

    return {
        name: weights_fingerprint(load_pretrained(str(RECIPES[name].folder), device="cpu").model)
        for name in TRAINED_MODELS
    }


async def websocket_fingerprint(base_url: str, model: str = "1") -> str:
    """The weights' hash the server shows for the embedded model ("1") or a model trained here ("sorter")."""
    from harness.client import Tab

    tab = Tab(base_url)
    run = await tab.open("", {"fingerprint": model}, VIEW_TIMEOUT_SECONDS)
    await tab.close()
    shown = " ".join(markdown.body for markdown in run.of_kind("markdown"))
    found = re.search(r"weights sha256 ([0-9a-f]{64})", shown)
    if found is None:
        raise RuntimeError(f"the page shows no weights fingerprint: {shown[:200]!r}")
    return found.group(1)


async def websocket_trained_fingerprints(base_url: str) -> dict[str, str]:
    return {name: await websocket_fingerprint(base_url, name) for name in TRAINED_MODELS}


async def websocket_warm_up(base_url: str) -> float:
    """Every lesson once, the word lessons and the training page (without training) included."""
    from harness.client import Tab

    tab, start = Tab(base_url), time.monotonic()
    for lesson in [*lessons_for(0, 0, "warming"), training_lesson(0, 0)]:
        await tab.open(lesson.path, {"text": "warming up", **lesson.query}, VIEW_TIMEOUT_SECONDS)
    await tab.close()
    return time.monotonic() - start


async def drive(server: Server, client: str, sessions: int, duration: float, trainers: int = 0) -> dict:
    """Warm up, hash the weights, let the students loose for `duration` seconds, hash again."""

    async def load(start_student, fingerprint) -> dict:
        before = await fingerprint()
        rss_at_start, cpu_at_start = server.rss(), server.cpu_seconds()
        tally, began, load_starts_at = Tally(), time.monotonic(), server.seconds()
        await asyncio.gather(*(start_student(index, began + duration, began, tally) for index in range(sessions)))
        elapsed = time.monotonic() - began
        cpu = server.cpu_seconds() - cpu_at_start
        return {
            "tally": tally,
            "elapsed": elapsed,
            "before": before,
            "after": await fingerprint(),
            "rss_at_start": rss_at_start,
            "load_starts_at": load_starts_at,
            "server_cpu_seconds": cpu,
        }

    if client == "websocket":
        warm_seconds = await websocket_warm_up(server.url)
        trained_before = await websocket_trained_fingerprints(server.url)
        training = trainer_sessions(sessions, trainers)
        outcome = await load(
            lambda index, deadline, began, tally: websocket_student(
                server.url, index, deadline, began, tally, trains=index in training
            ),
            lambda: websocket_fingerprint(server.url),
        )
        return {
            **outcome,
            "warm_seconds": warm_seconds,
            "trained_before": trained_before,
            "trained_after": await websocket_trained_fingerprints(server.url),
        }

    from playwright.async_api import async_playwright

    from harness.room_browser import CHROMIUM, CHROMIUM_ARGS, browser_fingerprint, browser_student, browser_warm_up

    async with async_playwright() as playwright:
        browser = await playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        warm_seconds = await browser_warm_up(browser, server.url)
        outcome = await load(
            lambda *args: browser_student(browser, server.url, *args), lambda: browser_fingerprint(browser, server.url)
        )
        await browser.close()
    return {**outcome, "warm_seconds": warm_seconds}


T = TypeVar("T")


def run_coroutine(coroutine: Coroutine[Any, Any, T]) -> T:
    """`asyncio.run`, wherever it is called from. Where this thread already runs an event loop (pytest-playwright's
    sync API keeps one running in the main thread once a browser test has run in the session), `asyncio.run`
    refuses, so the coroutine runs in a fresh loop on a thread of its own and this thread waits for its result."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coroutine)
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="run-coroutine") as executor:
        return executor.submit(asyncio.run, coroutine).result()


def run_load_test(
    sessions: int = 40,
    duration: float = 90.0,
    client: str = "websocket",
    log_path: Path | None = None,
    trainers: int | None = None,
) -> dict:
    """Run the load and return its figures (see `summarise`). Trainers (websocket students only): every
    fifth student unless `trainers` says how many."""
    log_path = log_path or ARTIFACTS / "load_test_server.log"
    trainers = (sessions // 5 if trainers is None else trainers) if client == "websocket" else 0
    budget = {"ANATOMY_TRAINING_BUDGET_SECONDS": str(TRAINING_BUDGET_SECONDS)}
    with Server(log_path, budget) as server:
        outcome = run_coroutine(drive(server, client, sessions, duration, trainers))
        samples = list(server.rss_samples)
    outcome["reference"] = reference_fingerprint()
    if "trained_before" in outcome:
        outcome["trained_reference"] = reference_fingerprints()
    return {"client": client, "trainers": trainers, **summarise(outcome, samples, sessions)}


def p50_p95(times: list[float]) -> list[float] | None:
    return [round(statistics.median(times), 2), round(percentile(times, 0.95), 2)] if times else None


def summarise(outcome: dict, samples: list[tuple[float, int]], sessions: int) -> dict:
    tally: Tally = outcome["tally"]
    times = [view.seconds for view in tally.views]
    by_how = {how: [view.seconds for view in tally.views if view.how == how] for how in ("link", "typed", "trained")}
    start, elapsed = outcome["load_starts_at"], outcome["elapsed"]
    during = [(at - start, value) for at, value in samples if start <= at <= start + elapsed]
    rss = [value for _, value in during]
    thirds = [[value for at, value in during if k * elapsed / 3 <= at < (k + 1) * elapsed / 3] for k in range(3)]
    per_session = [sum(1 for view in tally.views if view.session == index) for index in range(sessions)]
    return {
        "sessions": sessions,
        "duration_s": round(outcome["elapsed"], 1),
        "views": len(times),
        "throughput_views_per_s": round(len(times) / outcome["elapsed"], 2),
        "views_per_session_min_max": [min(per_session), max(per_session)],
        "page_time_p50_s": round(statistics.median(times), 2) if times else None,
        "page_time_p95_s": round(percentile(times, 0.95), 2) if times else None,
        "page_time_max_s": round(max(times), 2) if times else None,
        "page_time_p50_p95_s_without_training": p50_p95(by_how["link"] + by_how["typed"]),
        "link_view_p50_p95_s": p50_p95(by_how["link"]),
        "typed_view_p50_p95_s": p50_p95(by_how["typed"]),
        "trained_view_p50_p95_s": p50_p95(by_how["trained"]),
        "views_by_lesson": dict(sorted(collections.Counter(view.lesson for view in tally.views).items())),
        "training_presses_by_outcome": dict(collections.Counter(outcome for _, outcome, _ in tally.trainings)),
        "training_presses_that_waited_their_turn": sum(waited for _, _, waited in tally.trainings),
        "errors": len(tally.errors),
        "error_samples": tally.errors[:20],
        "requests_off_loopback": len(tally.off_loopback),
        "off_loopback_samples": sorted(set(tally.off_loopback))[:10],
        "rss_mb_during_load_min_max_end": [round(min(rss) / 2**20), round(max(rss) / 2**20), round(rss[-1] / 2**20)]
        if rss
        else None,
        "rss_mb_max_by_third_of_load": [round(max(part) / 2**20) if part else None for part in thirds],
        "rss_mb_at_load_start": round(outcome["rss_at_start"] / 2**20),
        "server_cpu_s_per_view": round(outcome["server_cpu_seconds"] / len(times), 3) if times else None,
        "kb_sent_per_view_median": round(statistics.median(view.received_bytes for view in tally.views) / 1024)
        if tally.views and tally.views[0].received_bytes
        else None,
        "warm_up_s": round(outcome["warm_seconds"], 1),
        "weights_sha256_before": outcome["before"],
        "weights_sha256_after": outcome["after"],
        "weights_sha256_fresh_checkpoint": outcome["reference"],
        "weights_unchanged": outcome["before"] == outcome["after"] == outcome["reference"],
        **trained_weights(outcome),
    }


def trained_weights(outcome: dict) -> dict:
    """The models trained here, hashed in the server before and after the load and fresh from their files."""
    if "trained_before" not in outcome:
        return {}
    before, after, fresh = outcome["trained_before"], outcome["trained_after"], outcome["trained_reference"]
    return {
        "trained_models_sha256_before_after_fresh": {
            name: [before[name][:16], after[name][:16], fresh[name][:16]] for name in TRAINED_MODELS
        },
        "trained_models_unchanged": before == after == fresh,
    }
