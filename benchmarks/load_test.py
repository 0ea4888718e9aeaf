"""A lecture room on loopback: many students on one server at once (see harness/load.py for what they do and
what counts as an error), or, with --hall, a class through the lecture hall's nginx (harness/lecture.py).

    python benchmarks/load_test.py                                   # 40 websocket students (8 train) for 90 s
    python benchmarks/load_test.py --client browser --sessions 8 --duration 60 --json results.json
    python benchmarks/load_test.py --hall --sessions 40 200 --duration 90 --kill-one-at 45 --json hall.json
    python benchmarks/load_test.py --hall --sessions 40 --duration 60 --pauses 0 0    # what the servers can give
    python benchmarks/load_test.py --hall --replicas 8 --threads 2 --sessions 80 --pauses 0 0   # 16 cores

--hall starts two halls (harness/hall.py) side by side, one of one replica and one of --replicas (default two),
and for each class size runs, one after the other: the one replica directly (no proxy: the reference), the same
replica through its nginx, and the several replicas through theirs. --kill-one-at adds one more class of the
first size on the several replicas, in which replica-0 is killed by its PID that many seconds in.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import signal
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from harness.hall import Hall
from harness.lecture import LANGUAGE_MODEL, PAUSES, ReplicaMeter, fingerprints, hold_class, summarise_class
from harness.load import reference_fingerprint, run_load_test, websocket_fingerprint
from harness.room import trainer_sessions

# Every replica hashes its shared weights on request, and serves lesson 9's SmolLM2 when students write.
FINGERPRINT_VARIABLE, LANGUAGE_MODEL_VARIABLE = "ANATOMY_DEBUG_FINGERPRINT", "ANATOMY_LANGUAGE_MODEL"
RESTART_TIMEOUT_SECONDS = 300


def nginx_workers(master: int) -> list[int]:
    """The worker processes of an nginx master (they do the proxying; the master only watches them)."""
    workers = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            if int(stat.read_text().rsplit(")", 1)[1].split()[1]) == master:
                workers.append(int(stat.parent.name))
        except (FileNotFoundError, ProcessLookupError, IndexError, ValueError):
            continue
    return sorted(workers)


def processes_of(hall: Hall, through_nginx: bool) -> dict[str, int]:
    running = {name: hall.pid(name) for name in hall.names}
    if through_nginx:
        workers = nginx_workers(hall.started_nginx.pid)
        running |= {f"nginx worker {index}": pid for index, pid in enumerate(workers)}
    return running


def measure(hall: Hall, configuration: str, through_nginx: bool, sessions: int, settings: dict, kill_at=None) -> dict:
    """One class on `hall` (through its nginx, or on its first replica directly), with its replicas' CPU time,
    memory and weight hashes before and after."""
    url = hall.url if through_nginx else hall.replicas[0].url
    models = ("1", LANGUAGE_MODEL) if settings["writers"] else ("1",)

    def replica_urls() -> dict[str, str]:
        return {name: replica.url for name, replica in zip(hall.names, hall.replicas)}

    def kill_replica_0() -> tuple[str, int]:
        hall.restarting.clear()  # started again only after the class: every reconnect meets the live replica
        pid = hall.pid("replica-0")
        os.kill(pid, signal.SIGKILL)
        return "replica-0", pid

    before = asyncio.run(fingerprints(replica_urls(), models))
    writers = trainer_sessions(sessions, round(sessions * settings["writers"]))
    class_name = f"{len(settings['runs'])}"  # its own sentences: no class meets another's cached results
    client_cpu_before = time.process_time()  # the students themselves run in this process, on the same cores
    with ReplicaMeter(lambda: processes_of(hall, through_nginx)) as meter:
        outcome = asyncio.run(
            hold_class(
                url, sessions, settings["duration"], writers, class_name, settings["pauses"],
                kill_replica_0 if kill_at is not None else None, kill_at,
            )
        )  # fmt: skip
    client_cpu = time.process_time() - client_cpu_before
    if kill_at is not None:
        hall.restarting.set()
        deadline = time.monotonic() + RESTART_TIMEOUT_SECONDS
        while not hall.restarts and time.monotonic() < deadline:
            time.sleep(1)
    after = asyncio.run(fingerprints(replica_urls(), models))
    figures = {"configuration": configuration, "load_average_at_end": os.getloadavg()[0], **summarise_class(outcome)}
    processes = meter.figures()
    server_cpu = sum(each["cpu_s"] for name, each in processes.items() if name.startswith("replica"))
    figures["server_cpu_s_per_view"] = round(server_cpu / figures["views"], 3) if figures["views"] else None
    figures["server_cores_busy"] = round(server_cpu / figures["elapsed_s"], 2)
    figures["students_cpu_s_per_view"] = round(client_cpu / figures["views"], 3) if figures["views"] else None
    figures["nginx_cpu_s"] = round(sum(each["cpu_s"] for n, each in processes.items() if n.startswith("nginx")), 1)
    figures["replicas"] = {name: each for name, each in processes.items() if name.startswith("replica")}
    figures["weights_sha256_before_after"] = {
        name: {model: [before[name][model][:16], after[name][model][:16]] for model in models} for name in before
    }
    figures["weights_unchanged"] = before == after and all(
        hashes["1"] == settings["reference"] for hashes in before.values()
    )
    settings["runs"].append(figures)
    return figures


def run_hall_comparison(
    sizes: list[int],
    duration: float,
    writers: float,
    kill_one_at: float | None,
    folder: Path,
    pauses: tuple[float, float] = PAUSES,
    replicas: int = 2,
    threads: int | None = None,
):
    environment = {FINGERPRINT_VARIABLE: "1", LANGUAGE_MODEL_VARIABLE: "1" if writers else "0"}
    if threads:  # torch's threads in each replica (one per core by default: eight replicas would fight)
        environment["OMP_NUM_THREADS"] = str(threads)
    several = f"{replicas} replicas via nginx"
    settings: dict[str, Any] = {
        "duration": duration,
        "writers": writers,
        "pauses": pauses,
        "runs": [],
        "reference": reference_fingerprint(),
    }
    with (
        Hall(folder / "one", 1, environment=environment) as one,
        Hall(folder / "several", replicas, environment=environment) as many,
    ):
        if writers:  # SmolLM2 is loaded by the first visit of lesson 9: before the class, as the other lessons
            servers = [*one.replicas, *many.replicas]
            asyncio.run(warm_writing([replica.url for replica in servers]))
        for size in sizes:
            for hall, configuration, through_nginx in (
                (one, "1 replica, direct", False),
                (one, "1 replica via nginx", True),
                (many, several, True),
            ):
                print(f"{configuration}, {size} students ...", file=sys.stderr, flush=True)
                measure(hall, configuration, through_nginx, size, settings)
        if kill_one_at is not None:
            print(f"{several}, {sizes[0]} students, replica-0 killed ...", file=sys.stderr, flush=True)
            measure(many, f"{several}, replica-0 killed", True, sizes[0], settings, kill_at=kill_one_at)
    runs = settings["runs"]
    return {"reference_weights_sha256": settings["reference"][:16], "runs": runs, "capacity": capacity(runs, sizes)}


def capacity(runs: list[dict], sizes: list[int]) -> dict:
    """What a class of each size asks of the servers, from the first class (one replica directly, the smallest
    size, where the pauses, not the server, set the pace): views a student asks for per second, times the
    students, times the CPU seconds a view costs, is the cores kept busy. One replica is one Python process,
    which runs the pages on about one core, so a class wants as many replicas as cores."""
    light = runs[0]
    views_per_student_per_s = light["views_per_student_per_minute"] / 60
    cpu_per_view = light["server_cpu_s_per_view"]
    if not cpu_per_view:
        return {}
    wanted = {}
    for size in sizes:
        cores = size * views_per_student_per_s * cpu_per_view
        wanted[f"{size} students"] = {
            "views_per_s_asked": round(size * views_per_student_per_s, 1),
            "cores_busy": round(cores, 1),
            "replicas_and_cores": math.ceil(cores),
            "views_per_s_on_two_cores_at_most": round(2 / cpu_per_view, 1),
        }
    return {"from": light["configuration"], "cpu_s_per_view": cpu_per_view, "classes": wanted}


async def warm_writing(urls: list[str]) -> None:
    from harness.client import Tab
    from harness.lecture import writing_lesson

    for url in urls:
        tab = Tab(url)
        await tab.open("language_model", {"text": "warming up", **writing_lesson(0).query}, 300)
        await tab.close()
        await websocket_fingerprint(url, LANGUAGE_MODEL)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--client", choices=("websocket", "browser"), default="websocket")
    parser.add_argument("--sessions", type=int, nargs="+", default=[40], help="students (--hall: one class per size)")
    parser.add_argument("--duration", type=float, default=90.0, help="seconds of load (views in flight finish)")
    parser.add_argument("--trainers", type=int, help="websocket students who train (default: every fifth)")
    parser.add_argument("--hall", action="store_true", help="classes through the lecture hall's nginx")
    parser.add_argument("--writers", type=float, default=0.2, help="--hall: share of students who write with SmolLM2")
    parser.add_argument("--replicas", type=int, default=2, help="--hall: replicas in the second hall (default 2)")
    parser.add_argument("--threads", type=int, help="--hall: torch threads per replica (default: one per core)")
    parser.add_argument("--kill-one-at", type=float, help="--hall: one more class, replica-0 killed at this second")
    parser.add_argument(
        "--pauses",
        type=float,
        nargs=2,
        default=PAUSES,
        metavar=("LOW", "HIGH"),
        help="--hall: seconds a student pauses between views, drawn between LOW and HIGH (0 0: a class that "
        "never pauses, to measure what the servers can give rather than what a class asks)",
    )
    parser.add_argument("--folder", type=Path, help="--hall: the halls' logs (default: a new temporary folder)")
    parser.add_argument("--json", type=Path, help="also write the figures to this file")
    arguments = parser.parse_args()
    if arguments.hall:
        folder = arguments.folder or Path(tempfile.mkdtemp(prefix="anatomy-class-"))
        figures = run_hall_comparison(
            arguments.sessions,
            arguments.duration,
            arguments.writers,
            arguments.kill_one_at,
            folder,
            tuple(arguments.pauses),
            arguments.replicas,
            arguments.threads,
        )
        print(json.dumps(figures, indent=2))
        if arguments.json:
            arguments.json.write_text(json.dumps(figures, indent=2))
        return 0 if all(run["errors"] == 0 and run["weights_unchanged"] for run in figures["runs"]) else 1
    if len(arguments.sessions) != 1:
        parser.error("one --sessions without --hall")
    figures = run_load_test(arguments.sessions[0], arguments.duration, arguments.client, trainers=arguments.trainers)
    for name, value in figures.items():
        print(f"{name:42} {value}")
    if arguments.json:
        arguments.json.write_text(json.dumps(figures, indent=2))
    clean = figures["errors"] == 0 and not figures["requests_off_loopback"]
    return 0 if clean and figures["weights_unchanged"] and figures.get("trained_models_unchanged", True) else 1


if __name__ == "__main__":
    sys.exit(main())
