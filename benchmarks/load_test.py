"""A lecture room on loopback: many students on one server at once, each with their own text and choices.

Starts `streamlit run app.py` in hosted mode on a free loopback port and drives N sessions for a bounded
time. Each session is one student: a text with its own marker word (penguin, kangaroo, ...), its own layer
and head, a round of lessons opened from links (each a new session, as a reload is), and a new text typed
into the sidebar every other lesson. After every view the student checks that it sees only its own
results: the sidebar holds its own text, the figures carry its own tokens (its marker and the colour word of
the current round) and no other student's marker. Exceptions and error messages count as errors.

Two kinds of student:
  --client websocket  (default) Streamlit's own websocket protocol (benchmarks/streamlit_client.py): the
                      server does all its work, no browser draws; page time = request to script finished.
  --client browser    a browser context each, in one headless Chromium: page time = navigation to every
                      figure painted. On a 2-core machine Chromium, not the server, is then the bottleneck.

The server's memory (VmRSS) and CPU time are read from /proc, and the shared model's weights are hashed
inside the server before and after the run (the opt-in `?fingerprint=1` caption, enabled by
ANATOMY_DEBUG_FINGERPRINT) and compared with a fresh load of the checkpoint in this process.

    python benchmarks/load_test.py                                   # 40 websocket students for 90 s
    python benchmarks/load_test.py --client browser --sessions 8 --duration 60 --json results.json

tests/test_load_smoke.py runs small versions of both in CI.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import re
import socket
import statistics
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path
from urllib.parse import parse_qsl

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "benchmarks")]

from load_room import (  # noqa: E402  (re-exported for tests/test_load_smoke.py)
    MARKERS, ROUNDS, VIEW_TIMEOUT_SECONDS, Lesson, Tally, View, lessons_for, student_text, view_problems,
)


# ---------------------------------------------------------------------------------------------------------
# The server


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class Server:
    """`streamlit run app.py` in hosted mode on loopback, its memory sampled twice a second."""

    def __init__(self, log_path: Path, extra_environment: dict | None = None):
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log_path = log_path
        self.environment = {**os.environ, "PYTHONUNBUFFERED": "1", "ANATOMY_HOSTED": "1",
                            "ANATOMY_DEBUG_FINGERPRINT": "1", **(extra_environment or {})}
        self.rss_samples: list[tuple[float, int]] = []  # (seconds since start, bytes)
        self._sampling = False

    def __enter__(self) -> "Server":
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        self._log = open(self.log_path, "w")
        self.process = subprocess.Popen(
            [sys.executable, "-m", "streamlit", "run", str(ROOT / "app.py"), "--server.headless=true",
             "--server.address=127.0.0.1", f"--server.port={self.port}", "--server.fileWatcherType=none",
             "--browser.gatherUsageStats=false"],
            cwd=ROOT, env=self.environment, stdout=self._log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"streamlit exited with {self.process.returncode}; see {self.log_path}")
            try:
                with urllib.request.urlopen(f"{self.url}/_stcore/health", timeout=2) as answer:
                    if answer.status == 200:
                        break
            except OSError:
                time.sleep(0.2)
        else:
            raise TimeoutError(f"streamlit did not answer on {self.url}")
        self._sampling, self._started = True, time.monotonic()
        threading.Thread(target=self._sample, daemon=True).start()
        return self

    def __exit__(self, *exc) -> None:
        self._sampling = False
        self.process.terminate()
        try:
            self.process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.process.kill()
        self._log.close()

    def rss(self) -> int:
        for line in Path(f"/proc/{self.process.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
        return 0

    def cpu_seconds(self) -> float:
        """User plus system CPU time the server process has used so far."""
        fields = Path(f"/proc/{self.process.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def seconds(self) -> float:
        """Seconds since the server answered its first health check (the clock of `rss_samples`)."""
        return time.monotonic() - self._started

    def _sample(self) -> None:
        while self._sampling and self.process.poll() is None:
            self.rss_samples.append((time.monotonic() - self._started, self.rss()))
            time.sleep(0.5)



# ---------------------------------------------------------------------------------------------------------
# Students over the websocket


async def websocket_student(base_url: str, session: int, deadline: float, began: float, tally: Tally) -> None:
    """One student (see load_room), speaking Streamlit's websocket protocol: no browser draws anything."""
    from streamlit_client import Tab

    tab = Tab(base_url)
    layer, head = session % 6, (5 * session) % 12
    lessons = lessons_for(layer, head)
    step, round_number = session % len(lessons), 0
    await asyncio.sleep(random.Random(session).uniform(0, 2))
    try:
        while time.monotonic() < deadline:
            lesson = lessons[step % len(lessons)]
            try:
                start = time.monotonic()
                run = await tab.open(lesson.path, {"text": student_text(session, round_number), **lesson.query},
                                     VIEW_TIMEOUT_SECONDS)
                record_run(tally, run, tab.query_string, session, lesson, round_number, "link", start, began)
                if step % 2 == 1 and time.monotonic() < deadline:
                    round_number += 1
                    widget = run.text_area("Text to study").id
                    start = time.monotonic()
                    run = await tab.set_text(widget, student_text(session, round_number), VIEW_TIMEOUT_SECONDS)
                    record_run(tally, run, tab.query_string, session, lesson, round_number, "typed", start, began)
            except Exception as error:  # noqa: BLE001 - a timeout or a dropped connection is a failed view
                tally.errors.append(f"session {session} {lesson.path}: {type(error).__name__}: {str(error)[:160]}")
            step += 1
    finally:
        await tab.close()


def record_run(tally: Tally, run, tab_query: str, session: int, lesson: Lesson, round_number: int, how: str,
               start: float, began: float) -> None:
    seconds = time.monotonic() - start
    # What the server holds as this session's text: it writes it into the address on every change.
    holds = dict(parse_qsl(tab_query)).get("text", "")
    words = None
    if lesson.shows_tokens:
        words = {word for label in run.figure_labels() for word in re.findall(r"[a-z]+", label)}
    problems = [f"exception: {message[:160]}" for message in run.exceptions]
    problems += [f"error message: {message[:160]}" for message in run.errors]
    problems += view_problems(session, round_number, student_text(session, round_number), holds, words)
    tally.errors += [f"session {session} {lesson.path} ({how}): {problem}" for problem in problems]
    if not problems:
        tally.views.append(View(session, lesson.path, how, seconds, start - began, run.received_bytes))


# ---------------------------------------------------------------------------------------------------------
# The run


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(share * len(ordered) + 0.5) - 1))] if ordered else float("nan")


def reference_fingerprint() -> str:
    """The checkpoint's weights as loaded fresh in this process (no session has touched them)."""
    from anatomy.pretrained import load_pretrained
    from anatomy.ui.loaders import weights_fingerprint

    return weights_fingerprint(load_pretrained(device="cpu").model)


async def websocket_fingerprint(base_url: str) -> str:
    from streamlit_client import Tab

    tab = Tab(base_url)
    run = await tab.open("", {"fingerprint": "1"}, VIEW_TIMEOUT_SECONDS)
    await tab.close()
    shown = " ".join(markdown.body for markdown in run.of_kind("markdown"))
    return re.search(r"weights sha256 ([0-9a-f]{64})", shown).group(1)


async def websocket_warm_up(base_url: str) -> float:
    from streamlit_client import Tab

    tab, start = Tab(base_url), time.monotonic()
    for lesson in lessons_for(0, 0):
        await tab.open(lesson.path, {"text": "warming up", **lesson.query}, VIEW_TIMEOUT_SECONDS)
    await tab.close()
    return time.monotonic() - start


async def drive(server: Server, client: str, sessions: int, duration: float) -> dict:
    """Warm up, hash the weights, let the students loose for `duration` seconds, hash again."""
    async def load(start_student, fingerprint) -> dict:
        before = await fingerprint()
        rss_at_start, cpu_at_start = server.rss(), server.cpu_seconds()
        tally, began, load_starts_at = Tally(), time.monotonic(), server.seconds()
        await asyncio.gather(*(start_student(index, began + duration, began, tally) for index in range(sessions)))
        elapsed = time.monotonic() - began
        cpu = server.cpu_seconds() - cpu_at_start
        return {"tally": tally, "elapsed": elapsed, "before": before, "after": await fingerprint(),
                "rss_at_start": rss_at_start, "load_starts_at": load_starts_at, "server_cpu_seconds": cpu}

    if client == "websocket":
        warm_seconds = await websocket_warm_up(server.url)
        outcome = await load(lambda *args: websocket_student(server.url, *args),
                             lambda: websocket_fingerprint(server.url))
        return {**outcome, "warm_seconds": warm_seconds}

    from playwright.async_api import async_playwright

    from load_browser import CHROMIUM, CHROMIUM_ARGS, browser_fingerprint, browser_student, browser_warm_up

    async with async_playwright() as playwright:
        browser = await playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        warm_seconds = await browser_warm_up(browser, server.url)
        outcome = await load(lambda *args: browser_student(browser, server.url, *args),
                             lambda: browser_fingerprint(browser, server.url))
        await browser.close()
    return {**outcome, "warm_seconds": warm_seconds}


def run_load_test(sessions: int = 40, duration: float = 90.0, client: str = "websocket",
                  log_path: Path | None = None) -> dict:
    """Run the load and return its figures (see `summarise`)."""
    log_path = log_path or ROOT / "test-artifacts" / "load_test_server.log"
    with Server(log_path) as server:
        outcome = asyncio.run(drive(server, client, sessions, duration))
        samples = list(server.rss_samples)
    outcome["reference"] = reference_fingerprint()
    return {"client": client, **summarise(outcome, samples, sessions)}


def summarise(outcome: dict, samples: list[tuple[float, int]], sessions: int) -> dict:
    tally: Tally = outcome["tally"]
    times = [view.seconds for view in tally.views]
    link_times = [view.seconds for view in tally.views if view.how == "link"]
    typed_times = [view.seconds for view in tally.views if view.how == "typed"]
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
        "link_view_p50_p95_s": [round(statistics.median(link_times), 2), round(percentile(link_times, 0.95), 2)]
        if link_times else None,
        "typed_view_p50_p95_s": [round(statistics.median(typed_times), 2), round(percentile(typed_times, 0.95), 2)]
        if typed_times else None,
        "errors": len(tally.errors),
        "error_samples": tally.errors[:20],
        "requests_off_loopback": len(tally.off_loopback),
        "off_loopback_samples": sorted(set(tally.off_loopback))[:10],
        "rss_mb_during_load_min_max_end": [round(min(rss) / 2**20), round(max(rss) / 2**20), round(rss[-1] / 2**20)] if rss else None,
        "rss_mb_max_by_third_of_load": [round(max(part) / 2**20) if part else None for part in thirds],
        "rss_mb_at_load_start": round(outcome["rss_at_start"] / 2**20),
        "server_cpu_s_per_view": round(outcome["server_cpu_seconds"] / len(times), 3) if times else None,
        "kb_sent_per_view_median": round(statistics.median(view.received_bytes for view in tally.views) / 1024)
        if tally.views and tally.views[0].received_bytes else None,
        "warm_up_s": round(outcome["warm_seconds"], 1),
        "weights_sha256_before": outcome["before"],
        "weights_sha256_after": outcome["after"],
        "weights_sha256_fresh_checkpoint": outcome["reference"],
        "weights_unchanged": outcome["before"] == outcome["after"] == outcome["reference"],
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--client", choices=("websocket", "browser"), default="websocket")
    parser.add_argument("--sessions", type=int, default=40)
    parser.add_argument("--duration", type=float, default=90.0, help="seconds of load (views in flight finish)")
    parser.add_argument("--json", type=Path, help="also write the figures to this file")
    arguments = parser.parse_args()
    figures = run_load_test(arguments.sessions, arguments.duration, arguments.client)
    for name, value in figures.items():
        print(f"{name:34} {value}")
    if arguments.json:
        arguments.json.write_text(json.dumps(figures, indent=2))
    return 0 if figures["errors"] == 0 and figures["weights_unchanged"] and not figures["requests_off_loopback"] else 1


if __name__ == "__main__":
    sys.exit(main())
