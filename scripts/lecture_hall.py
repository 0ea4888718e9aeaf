"""A lecture hall with one command: N hosted replicas of the app behind nginx, on this machine.

    make class REPLICAS=3 PORT=8501       # or: python scripts/lecture_hall.py --replicas 3 --port 8501

Starts PostgreSQL for the class's answers (loopback only; one shared SQLite file where PostgreSQL is not
installed), the replicas on free loopback ports and nginx on the given port (see harness/hall.py and
docs/hosting.md), starts a replica again if it dies, and on Ctrl-C or SIGTERM stops nginx, every replica and
the database. Needs Debian's nginx (`apt-get install nginx libnginx-mod-http-brotli-filter
libnginx-mod-http-brotli-static`: the static module sends Streamlit's files as brotli compressed them ahead of
time) and, for the shared database, Debian's PostgreSQL (`apt-get install postgresql`). Students reach it through
whatever forwards the port to them (a campus reverse proxy, or `--address 0.0.0.0`).
"""

from __future__ import annotations

import argparse
import json
import logging
import signal
import sys
import tempfile
import threading
from pathlib import Path

from harness.hall import THREADS_VARIABLE, Hall
from lessons.common.class_store import describe


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--replicas", type=int, default=2, help="how many copies of the app (each ~0.6–0.8 GB)")
    parser.add_argument("--port", type=int, default=8501, help="where nginx listens (0: a free port)")
    parser.add_argument("--address", default="127.0.0.1", help="nginx's address (the replicas stay on loopback)")
    parser.add_argument("--folder", type=Path, help="logs and nginx's prefix (default: a new temp folder)")
    parser.add_argument("--cold", action="store_true", help="let students in before every lesson was opened once")
    arguments = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    folder = arguments.folder or Path(tempfile.mkdtemp(prefix="anatomy-hall-"))

    asked_to_stop = threading.Event()
    for signal_number in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signal_number, lambda *_: asked_to_stop.set())

    with Hall(
        folder, arguments.replicas, arguments.port or None, arguments.address, warm_up=not arguments.cold
    ) as hall:
        # One line a machine can read (the tests do), then one for people.
        print(json.dumps({"url": hall.url, "folder": str(folder), "processes": hall.processes()}), flush=True)
        print(f"{arguments.replicas} replicas behind nginx at {hall.url} (logs in {folder}); Ctrl-C stops them")
        print(f"torch threads in each replica: {hall.environment[THREADS_VARIABLE]}", flush=True)
        print(f"the class's answers: {describe(hall.database_url)}", flush=True)
        asked_to_stop.wait()
        print("stopping nginx, the replicas and the class database", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
