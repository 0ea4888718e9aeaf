"""Where a view's server CPU goes, and does a change spend less of it? The working tree and a base revision,
served side by side in hosted mode and put under the same room of students in turn.

    python benchmarks/server_cpu_ab.py [--base HEAD] [--rounds 3] [--sessions 20] [--duration 40] [--writers 2]
    python benchmarks/server_cpu_ab.py --profile [ROUND]  # also a py-spy profile of each server in that round (1st)
    python benchmarks/server_cpu_ab.py --tree-threads 1  # the working tree served as the hall serves a replica
    python benchmarks/server_cpu_ab.py --tree-env OMP_WAIT_POLICY=PASSIVE  # the working tree in another environment
    python benchmarks/server_cpu_ab.py --trainers 0 --writers 0  # only the students who read (see below)

The room is the load test's (harness/load.py: websocket students with their own texts, every fifth a trainer),
plus `--writers` students of lesson 9 (SmolLM2 writing after their own text, and its attention), so both
servers serve SmolLM2 (ANATOMY_LANGUAGE_MODEL=1). `--trainers 0 --writers 0` leaves out the trainers and the
writers, whose runs and 40-token answers are the room's longest computations, to show what the views of the
students who only read cost. Each round loads one server, then the other, in an order
drawn afresh; the servers live across rounds, as a replica does. What counts is the server's CPU time (user
plus system, from /proc) divided by the views it served: on a shared machine that moves far less than wall time.
Printed: the median over rounds for each server and their ratio, and after each round the server's resident
memory and its peak so far (sampled twice a second).

With --profile, py-spy (`pip install py-spy`) samples each server during one round twice at once: every
busy thread (torch's kernels run without the GIL) and only the thread holding the GIL (Python's own work, such as
garbage collection, building figures, serialising them). Each sample is put in one category by the frames on its
stack. The base revision is checked out into a temporary git worktree and served with this checkout's Python.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from harness.client import Tab
from harness.load import Server, drive, record_run, websocket_warm_up
from harness.room import TRAINING_BUDGET_SECONDS, VIEW_TIMEOUT_SECONDS, Lesson, Tally, student_text

ROOT = Path(__file__).resolve().parents[1]
ARTIFACTS = ROOT / "test-artifacts"
ENVIRONMENT = {"ANATOMY_TRAINING_BUDGET_SECONDS": str(TRAINING_BUDGET_SECONDS), "ANATOMY_LANGUAGE_MODEL": "1"}
WRITER_LESSONS = (
    Lesson("language_model", {"lm_tab": "Writing"}, 1, False),
    Lesson("language_model", {"lm_tab": "Attention"}, 1, False),
    Lesson("language_model", {}, 1, False),
)
FIRST_WRITER = 100  # writers' session numbers: their texts differ from every other student's

# Categories of a profile sample, first match wins, by what its stack passes through.
CATEGORIES = (
    (
        "garbage collection (after each run, or now and then)",
        ("_on_script_finished (streamlit/runtime/scriptrunner/script_runner.py:1055", "_collect_while_pages_run"),
    ),
    ("st.cache hashing", ("caching/hashing.py",)),
    ("training (lesson 8)", ("train_now", "anatomy/training")),
    ("model forward passes", ("torch/nn/", "anatomy/", "lessons/common/llm/")),
    ("tokenizer", ("tokenizers", "tokenizer.py")),
    ("plotly: building figures", ("plotly/graph_objs", "plotly/basedatatypes", "_plotly_utils", "basevalidators")),
    ("plotly: figure to JSON", ("plotly/io/_json", "plotly_chart")),
    ("dataframes to Arrow", ("pyarrow", "dataframe_util", "arrow.py", "pandas/")),
    ("page script, other", ("script_runner.py", "exec_func_with_error_handling")),
    ("websocket, tornado, protobuf", ("tornado", "websocket", "protobuf", "forward_msg", "app_session", "asyncio")),
)
WAITING = ("Condition.wait", "EpollSelector.select", "Event.wait", "Semaphore.acquire", "Lock.acquire")


async def writer(base_url: str, session: int, deadline: float, began: float, tally: Tally) -> None:
    """A student of lesson 9: its own text on the language model's views, a new text every round."""
    tab, round_number = Tab(base_url), 0
    await asyncio.sleep(random.Random(session).uniform(0, 2))
    try:
        while time.monotonic() < deadline:
            for lesson in WRITER_LESSONS:
                start = time.monotonic()
                try:
                    text = student_text(session, round_number)
                    run = await tab.open(lesson.path, {"text": text, **lesson.query}, VIEW_TIMEOUT_SECONDS)
                    record_run(tally, run, tab.query_string, session, lesson, round_number, "link", start, began)
                except Exception as error:
                    tally.errors.append(f"writer {session}: {type(error).__name__}: {str(error)[:160]}")
            round_number += 1
    finally:
        await tab.close()


async def one_load(
    server: Server, sessions: int, duration: float, writers: int, trainers: int
) -> tuple[float, int, list[str]]:
    """The room on one server: (server CPU seconds, views served, errors)."""
    await websocket_warm_up(server.url)
    writers_tally, cpu_before = Tally(), server.cpu_seconds()
    began = time.monotonic()
    room, *_ = await asyncio.gather(
        drive(server, "websocket", sessions, duration, trainers),
        *(writer(server.url, FIRST_WRITER + index, began + duration, began, writers_tally) for index in range(writers)),
    )
    cpu = server.cpu_seconds() - cpu_before
    views = len(room["tally"].views) + len(writers_tally.views)
    return cpu, views, room["tally"].errors + writers_tally.errors


def category(stack: str) -> str:
    return next((name for name, marks in CATEGORIES if any(mark in stack for mark in marks)), "other")


def profile_shares(raw: Path) -> dict[str, float]:
    """Each category's share of a py-spy raw profile's busy samples (threads waiting on a lock left out)."""
    counts: collections.Counter[str] = collections.Counter()
    for line in raw.read_text().splitlines():
        stack, _, samples = line.rpartition(" ")
        if not stack or stack.rsplit(";", 1)[-1].startswith(WAITING):
            continue
        counts[category(stack)] += int(samples)
    total = sum(counts.values()) or 1
    return {name: count / total for name, count in counts.most_common()}


def py_spy_path() -> str | None:
    """py-spy on the PATH or beside this Python, or None where it is not installed."""
    beside = Path(sys.executable).parent / "py-spy"
    return shutil.which("py-spy") or (str(beside) if beside.exists() else None)


def start_profiles(server: Server, seconds: float, name: str) -> list[tuple[str, subprocess.Popen, Path]]:
    py_spy = py_spy_path()
    assert py_spy is not None, "checked before any round runs"
    started = []
    for kind, options in (("busy threads", []), ("GIL holder", ["--gil"])):
        raw = ARTIFACTS / f"server-cpu-{name}-{'gil' if options else 'busy'}.txt"
        command = [py_spy, "record", "--pid", str(server.started_process.pid), "--rate", "47", "--format", "raw"]
        command += [*options, "--output", str(raw), "--duration", str(round(seconds))]
        started.append((kind, subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT), raw))
    return started


def print_profiles(profiles: dict[str, list[tuple[str, subprocess.Popen, Path]]]) -> None:
    for name, started in profiles.items():
        for kind, process, raw in started:
            process.wait()
            print(f"\nprofile of {name}, {kind} ({raw.relative_to(ROOT)}):")
            for category_name, share in profile_shares(raw).items():
                print(f"  {share:6.1%}  {category_name}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", default="HEAD", help="the revision to compare the working tree with")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--sessions", type=int, default=20, help="the load test's students (every fifth trains)")
    parser.add_argument("--writers", type=int, default=2, help="students of lesson 9 besides them")
    parser.add_argument("--trainers", type=int, help="how many of the students train (default: every fifth)")
    parser.add_argument("--duration", type=float, default=40.0, help="seconds of load per server and round")
    parser.add_argument(
        "--profile",
        nargs="?",
        const=1,
        type=int,
        metavar="ROUND",
        help="profile both servers in this round (py-spy; the first when no round is given): a later round shows "
        "a replica that has already seen its students' words and models",
    )
    parser.add_argument(
        "--tree-threads",
        type=int,
        help="torch threads of the working tree's server (OMP_NUM_THREADS), as the lecture hall runs its replicas; "
        "the base keeps torch's default (one a core)",
    )
    parser.add_argument(
        "--tree-env",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="an environment variable of the working tree's server only (repeat for more)",
    )
    arguments = parser.parse_args()
    if arguments.profile is not None and py_spy_path() is None:
        parser.error("--profile samples the servers with py-spy, which is not installed here: pip install py-spy")
    threads = {"OMP_NUM_THREADS": str(arguments.tree_threads)} if arguments.tree_threads else {}
    extra = dict(setting.split("=", 1) for setting in arguments.tree_env)
    tree_environment = ENVIRONMENT | threads | extra
    trainers = arguments.sessions // 5 if arguments.trainers is None else arguments.trainers
    cpu_per_view: dict[str, list[float]] = {"base": [], "tree": []}
    profiles: dict[str, list] = {}
    with tempfile.TemporaryDirectory(prefix="server-cpu-ab-") as folder:
        worktree = Path(folder) / "base"
        subprocess.run(["git", "worktree", "add", "--detach", str(worktree), arguments.base], cwd=ROOT, check=True)
        try:
            base_server = Server(ARTIFACTS / "server-cpu-base.log", ENVIRONMENT)
            base_server.script = worktree / "app.py"  # Streamlit puts the script's folder first on the import path
            base_server.folder = worktree  # and reads the base's own .streamlit/config.toml there
            with base_server as base, Server(ARTIFACTS / "server-cpu-tree.log", tree_environment) as tree:
                servers = {"base": base, "tree": tree}
                for round_number in range(arguments.rounds):
                    order = random.Random(round_number).sample(sorted(servers), 2)
                    for name in order:
                        if arguments.profile == round_number + 1:
                            profiles[name] = start_profiles(servers[name], arguments.duration + 15, name)
                        cpu, views, errors = asyncio.run(
                            one_load(servers[name], arguments.sessions, arguments.duration, arguments.writers, trainers)
                        )
                        cpu_per_view[name].append(cpu / max(1, views))
                        print(
                            f"round {round_number + 1} {name}: {views} views, {cpu:.1f} s of server CPU, "
                            f"{cpu / max(1, views):.3f} s a view, {len(errors)} errors {errors[:2]}, "
                            f"resident memory now {servers[name].rss() / 2**20:.0f} MiB, at most "
                            f"{max(rss for _, rss in servers[name].rss_samples) / 2**20:.0f} MiB so far",
                            flush=True,
                        )
        finally:
            subprocess.run(["git", "worktree", "remove", "--force", str(worktree)], cwd=ROOT, check=False)
    print_profiles(profiles)
    base_median, tree_median = (statistics.median(cpu_per_view[name]) for name in ("base", "tree"))
    print(
        f"\nserver CPU a view, median of {arguments.rounds} rounds: base ({arguments.base}) {base_median:.3f} s, ",
        end="",
    )
    served = f" with {arguments.tree_threads} torch thread(s)" if arguments.tree_threads else ""
    served += "".join(f" with {setting}" for setting in arguments.tree_env)
    print(f"working tree{served} {tree_median:.3f} s: {base_median / tree_median:.2f}x less")


if __name__ == "__main__":
    main()
