"""The lecture hall for real (harness/hall.py): two hosted replicas behind Debian's nginx on loopback, every
client at 127.0.0.1 as a class behind one campus NAT would be.

Students are spread over the replicas and each stays on one (its pages, its websocket); nginx sends Streamlit's
JavaScript itself, compressed ahead of time with gzip and brotli, and lets browsers keep it; and a replica killed
by its PID in the middle of a class fails its own students at once, who reconnect to a live replica, while
every other student carries on. The replicas share one class database (PostgreSQL, or one SQLite file where
it is not installed). The one command (`make class`) stops everything on SIGTERM.
"""

from __future__ import annotations

import asyncio
import gzip
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import parse_qsl

import brotli
import pytest
import sqlalchemy as sa

from harness.client import Tab
from harness.hall import (
    BROTLI_STATIC_MODULE,
    THREADS_VARIABLE,
    Hall,
    brotli_ahead,
    is_running,
    streamlit_files_compressed_ahead,
    threads_per_replica,
    visit,
)
from harness.lecture import fingerprints, hold_class, summarise_class
from harness.load import run_coroutine, websocket_student
from harness.postgres import postgres_binaries
from harness.room import VIEW_TIMEOUT_SECONDS, Tally
from lessons.common.class_store import ClassStore
from lessons.common.classroom import DATABASE_URL_VARIABLE
from tests.postgresql import postgresql_required

ROOT = Path(__file__).resolve().parents[2]
SMOKE_SECONDS = 20
CLASS_SECONDS = 15
YEAR = 31_536_000

pytestmark = [pytest.mark.slow, pytest.mark.solo]
# The hall's own processes; PostgreSQL's postmaster among them where it is installed (CI requires it).
WITH_POSTGRESQL = postgres_binaries() is not None or postgresql_required()
HALL_PROCESSES = {"replica-0", "replica-1", "nginx"} | ({"postgresql"} if WITH_POSTGRESQL else set())


@pytest.fixture(scope="module")
def hall(tmp_path_factory):
    with Hall(tmp_path_factory.mktemp("hall"), replicas=2, environment={"ANATOMY_DEBUG_FINGERPRINT": "1"}) as running:
        yield running


async def student_opens_the_app(hall: Hall, cookies: dict[str, str]) -> tuple[list[str], Tab]:
    """What a browser does on the app's link: the page, a static bundle, the health check, the websocket and a
    page run over it. Returns the replica that answered each but the bundle (nginx sends it: the same file on
    every replica), and the tab (left open)."""
    page = visit(f"{hall.url}/", cookies)
    bundle = re.search(r"static/js/index\.[\w-]+\.js", page.body.decode()).group(0)
    assert visit(f"{hall.url}/{bundle}", cookies).replica == ""
    answers = [page, visit(f"{hall.url}/_stcore/health", cookies)]
    tab = Tab(hall.url, cookies)
    run = await tab.open("tokenization", {"text": "the red penguin"}, VIEW_TIMEOUT_SECONDS)
    return [answer.replica for answer in answers] + [tab.replica, run.replica], tab


def test_students_behind_one_address_are_spread_over_the_replicas_and_each_stays_on_its_own(hall):
    async def class_arrives():
        students = [await student_opens_the_app(hall, {}) for _ in range(4)]
        for _, tab in students:
            await tab.close()
        return [replicas for replicas, _ in students]

    replicas_seen = run_coroutine(class_arrives())
    for replicas in replicas_seen:
        assert len(set(replicas)) == 1 and replicas[0] in hall.names, replicas  # page, health, websocket, run
    assert {replicas[0] for replicas in replicas_seen} == set(hall.names), replicas_seen


def environment_of(pid: int, variable: str) -> str:
    """The value of `variable` a running process was given (its environment, as /proc shows it)."""
    environment = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    prefix = f"{variable}=".encode()
    (value,) = [entry[len(prefix) :].decode() for entry in environment if entry.startswith(prefix)]
    return value


def test_the_replicas_share_one_class_database_postgresql_where_it_is_installed(hall):
    urls = {name: environment_of(hall.pid(name), DATABASE_URL_VARIABLE) for name in hall.names}
    assert set(urls.values()) == {hall.database_url}, "every replica must be given the same database"
    assert sa.engine.make_url(hall.database_url).get_backend_name() == ("postgresql" if WITH_POSTGRESQL else "sqlite")

    # A class started through replica-0's URL is found, with a student's answer, through replica-1's.
    first, second = (ClassStore(urls[name]) for name in hall.names)
    started = first.start_class("Shared by the replicas", minutes=30)
    assert second.find_class(started.code).title == "Shared by the replicas"
    first.engine.dispose()
    second.engine.dispose()


def test_each_replicas_torch_runs_its_share_of_the_cores(hall):
    shared = os.environ.get(THREADS_VARIABLE) or str(threads_per_replica(len(hall.names)))
    assert {name: environment_of(hall.pid(name), THREADS_VARIABLE) for name in hall.names} == dict.fromkeys(
        hall.names, shared
    )
    # ... and torch takes the variable as its thread count (in a process started the same way).
    started = subprocess.run(
        [sys.executable, "-c", "import torch; print(torch.get_num_threads())"],
        env={**os.environ, THREADS_VARIABLE: shared},
        capture_output=True,
        text=True,
        check=True,
    )
    assert started.stdout.strip() == shared


def test_where_postgresql_is_not_installed_the_hall_still_starts_on_one_shared_sqlite_file(tmp_path):
    with Hall(tmp_path, replicas=1, warm_up=False, postgresql=False) as sqlite_hall:
        assert visit(f"{sqlite_hall.url}/_stcore/health", {}).status == 200
        assert sqlite_hall.database_url == f"sqlite:///{tmp_path / 'classes.sqlite'}"
        assert environment_of(sqlite_hall.pid("replica-0"), DATABASE_URL_VARIABLE) == sqlite_hall.database_url
        store = ClassStore(sqlite_hall.database_url)
        assert sa.inspect(store.engine).has_table("classes"), "the hall runs the migrations before the replicas"
        store.engine.dispose()
        assert "postgresql" not in sqlite_hall.processes()


def test_a_cookie_naming_a_replica_that_does_not_exist_gets_a_live_one_and_a_new_cookie(hall):
    cookies = {"anatomy_replica": "replica-7"}
    answer = visit(f"{hall.url}/_stcore/health", cookies)
    assert answer.status == 200 and answer.replica in hall.names
    assert cookies["anatomy_replica"] == answer.replica


def test_streamlits_javascript_comes_compressed_ahead_with_brotli_or_gzip_and_cached_for_a_year(hall):
    """nginx sends the bundle itself, as compressed once ahead of time (the very bytes of the .gz and .br files
    beside the copy of Streamlit's files), never compressing it again for a student."""
    bundle = re.search(r"static/js/index\.[\w-]+\.js", visit(f"{hall.url}/", {}).body.decode()).group(0)
    plain, gzipped, brotlied = (
        visit(f"{hall.url}/{bundle}", {}, encoding) for encoding in ("identity", "gzip", "br, gzip")
    )
    copy = streamlit_files_compressed_ahead() / bundle
    assert plain.headers.get("Content-Encoding") is None and plain.body == copy.read_bytes()
    assert gzipped.headers["Content-Encoding"] == "gzip" and gzip.decompress(gzipped.body) == plain.body
    assert gzipped.body == copy.with_name(copy.name + ".gz").read_bytes()
    assert brotlied.headers["Content-Encoding"] == "br" and brotli.decompress(brotlied.body) == plain.body
    if BROTLI_STATIC_MODULE.exists() or os.environ.get("CI"):  # CI installs it (.ci/run)
        assert brotli_ahead(streamlit_files_compressed_ahead())
        assert brotlied.body == copy.with_name(copy.name + ".br").read_bytes()
    for answer in (plain, gzipped, brotlied):
        assert answer.headers["Cache-Control"] == f"public, max-age={YEAR}, immutable"
        assert answer.headers["Vary"] == "Accept-Encoding"
        assert answer.replica == "" and "Set-Cookie" not in answer.headers  # nginx's own answer: no replica
    front_page = visit(f"{hall.url}/", {}, "gzip")
    assert front_page.headers["Content-Encoding"] == "gzip"
    assert front_page.headers["Cache-Control"] == "no-cache", "the page naming the bundles must be asked for again"


def test_a_students_text_survives_page_switches_as_in_a_browser(hall):
    """The load test's tab sends the sidebar's text with every rerun, as a browser does; a session that switches
    pages twice, types, and switches again keeps its own text throughout."""

    async def switch_pages() -> list[str]:
        tab = Tab(hall.url)
        run = await tab.open("positional", {"text": "the red penguin"}, VIEW_TIMEOUT_SECONDS)
        held = []
        for page, query in [("causal", {"cm_layer": 1}), ("tokenization", {"exercise": "count"})]:
            run = await tab.navigate(page, query, VIEW_TIMEOUT_SECONDS)
            held.append(dict(parse_qsl(tab.query_string))["text"])
        run = await tab.set_text(run.text_area("Text to study").id, "the blue owl", VIEW_TIMEOUT_SECONDS)
        await tab.navigate("multihead", {}, VIEW_TIMEOUT_SECONDS)
        held.append(dict(parse_qsl(tab.query_string))["text"])
        await tab.close()
        return held

    assert run_coroutine(switch_pages()) == ["the red penguin", "the red penguin", "the blue owl"]


def test_a_class_through_the_proxy_sees_only_its_own_work_each_student_on_one_replica(hall):
    """The load test's students (harness.lecture), a small class with short pauses: each opens a lesson from a
    link, moves between lessons, types its own sentence and answers an exercise, and checks every view is its
    own. Nothing fails, both replicas teach, nobody changes replica, and no replica's weights change."""
    replica_urls = {name: replica.url for name, replica in zip(hall.names, hall.replicas)}
    before = run_coroutine(fingerprints(replica_urls, ("1",)))
    outcome = run_coroutine(hold_class(hall.url, 4, CLASS_SECONDS, set(), "test", pauses=(0.5, 1.5)))
    figures = summarise_class(outcome)

    assert figures["errors"] == 0, figures["error_samples"]
    assert {"link", "navigated", "typed", "answered"} <= set(figures["views_by_step"]), figures["views_by_step"]
    assert set(figures["students_by_replica"]) == set(hall.names), figures["students_by_replica"]
    for student in outcome["students"]:
        assert len({view.replica for view in outcome["tally"].views if view.session == student.session}) == 1
    assert run_coroutine(fingerprints(replica_urls, ("1",))) == before


async def the_class_while_one_replica_is_killed(hall: Hall) -> dict:
    """Four students working through the lessons for SMOKE_SECONDS (harness.load's students), plus one student
    per replica sitting on an open page. Once every working student has seen a view, replica-0 is killed by its
    PID; the hall starts it again only once the class is over, so that every reconnect meets the fallback."""
    tally, began = Tally(), time.monotonic()
    sitting = {}
    for _ in hall.names:
        cookies: dict[str, str] = {}
        replicas, tab = await student_opens_the_app(hall, cookies)
        sitting[replicas[-1]] = (tab, cookies)
    students = [
        asyncio.create_task(websocket_student(hall.url, index, began + SMOKE_SECONDS, began, tally))
        for index in range(4)
    ]
    while len({view.session for view in tally.views}) < len(students) and time.monotonic() < began + SMOKE_SECONDS:
        await asyncio.sleep(0.2)
    hall.restarting.clear()
    killed, killed_pid, killed_at = "replica-0", hall.pid("replica-0"), time.monotonic() - began
    os.kill(killed_pid, signal.SIGKILL)

    sitting_tab, sitting_cookies = sitting[killed]
    try:
        await sitting_tab.rerun(VIEW_TIMEOUT_SECONDS)
        failure = "none"
    except Exception as error:
        failure = type(error).__name__
    health = visit(f"{hall.url}/_stcore/health", sitting_cookies)  # a browser's first step of a reconnect
    reconnected = Tab(hall.url, sitting_cookies)
    rerun = await reconnected.open("tokenization", {"text": "the red penguin"}, VIEW_TIMEOUT_SECONDS)
    other_tab, _ = sitting[next(name for name in hall.names if name != killed)]
    others_rerun = await other_tab.rerun(VIEW_TIMEOUT_SECONDS)

    await asyncio.gather(*students)
    for tab in (sitting_tab, reconnected, other_tab):
        await tab.close()
    hall.restarting.set()
    return {
        "tally": tally,
        "killed": killed,
        "killed_pid": killed_pid,
        "killed_at": killed_at,
        "failure": failure,
        "reconnected_to": [health.replica, reconnected.replica, rerun.replica],
        "cookie_after": sitting_cookies["anatomy_replica"],
        "others_rerun": others_rerun,
    }


def test_a_replica_killed_mid_class_fails_its_own_students_who_reconnect_to_a_live_one(hall):
    outcome = run_coroutine(the_class_while_one_replica_is_killed(hall))
    tally: Tally = outcome["tally"]
    killed, survivor = outcome["killed"], next(name for name in hall.names if name != outcome["killed"])
    # A view that began just before the kill may open its websocket after it, on the live replica: "before" is
    # what ended before the kill.
    before = [view for view in tally.views if view.started + view.seconds < outcome["killed_at"]]
    after = [view for view in tally.views if view.started > outcome["killed_at"]]
    replicas_of: dict[int, set[str]] = {}
    for view in before:
        replicas_of.setdefault(view.session, set()).add(view.replica)

    # Before the kill: every student on one replica throughout (a new websocket for every view), both in use.
    assert all(len(replicas) == 1 for replicas in replicas_of.values()), replicas_of
    on_killed = {session for session, replicas in replicas_of.items() if replicas == {killed}}
    assert on_killed and on_killed != set(replicas_of), replicas_of

    # The student sitting on the killed replica: its websocket fails at once, and a reconnect lands on the
    # live replica with a cookie naming it. The one on the other replica carries on in the same session.
    assert outcome["failure"].startswith("ConnectionClosed"), outcome["failure"]
    assert outcome["reconnected_to"] == [survivor] * 3 and outcome["cookie_after"] == survivor, outcome
    assert outcome["others_rerun"].replica == survivor and not outcome["others_rerun"].exceptions

    # The working students: those of the killed replica lost at most the view in flight, with a closed
    # connection, then carried on on the live replica; every other student saw no error at all.
    for error in tally.errors:
        session = int(error.split()[1])
        assert session in on_killed and "ConnectionClosed" in error, error
    for session in on_killed:
        assert [view for view in after if view.session == session], f"student {session} never came back"
    assert {view.replica for view in after} == {survivor}

    # Once restarts are allowed again, the hall starts the killed replica again (warmed up, then nginx reloaded),
    # and a browser whose cookie names it is served by it once more.
    deadline = time.monotonic() + 180
    while not hall.restarts and time.monotonic() < deadline:
        time.sleep(0.5)
    assert hall.restarts == [killed] and hall.pid(killed) != outcome["killed_pid"]
    answers = [visit(f"{hall.url}/_stcore/health", {"anatomy_replica": killed}) for _ in range(20)]
    assert answers[-1].status == 200 and answers[-1].replica == killed, [answer.replica for answer in answers]


def test_the_one_command_starts_the_hall_and_stops_nginx_and_every_replica_on_sigterm(tmp_path):
    command = [
        sys.executable,
        "scripts/lecture_hall.py",
        "--replicas",
        "2",
        "--port",
        "0",
        "--folder",
        str(tmp_path),
        "--cold",
    ]
    hall = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE, text=True, env={**os.environ})
    try:
        started = json.loads(hall.stdout.readline())
        assert visit(f"{started['url']}/_stcore/health", {}).status == 200
        assert set(started["processes"]) == HALL_PROCESSES
        assert all(is_running(pid) for pid in started["processes"].values())
        hall.send_signal(signal.SIGTERM)
        assert hall.wait(timeout=60) == 0
    finally:
        if hall.poll() is None:
            hall.kill()
    assert not [name for name, pid in started["processes"].items() if is_running(pid)]


def test_a_hall_killed_outright_leaves_no_replica_or_nginx_running(tmp_path):
    # SIGKILL cannot be caught: the replicas and nginx, each in a session of their own (so that a Ctrl-C reaches
    # the hall alone), must end by themselves when the hall's process is gone.
    command = [sys.executable, "scripts/lecture_hall.py", "--replicas", "2", "--port", "0", "--folder", str(tmp_path)]
    hall = subprocess.Popen([*command, "--cold"], cwd=ROOT, stdout=subprocess.PIPE, text=True, env={**os.environ})
    try:
        started = json.loads(hall.stdout.readline())
        assert set(started["processes"]) == HALL_PROCESSES
        assert all(is_running(pid) for pid in started["processes"].values())
    finally:
        hall.kill()
        hall.wait()
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and any(is_running(pid) for pid in started["processes"].values()):
        time.sleep(0.5)
    assert not [name for name, pid in started["processes"].items() if is_running(pid)]
