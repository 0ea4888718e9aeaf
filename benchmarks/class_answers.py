"""A class answering one exercise together through the lecture hall (issue: a class that answers together).

    python benchmarks/class_answers.py                              # 200 students within 30 s, 2 replicas
    python benchmarks/class_answers.py --students 40 --within 10 --replicas 1 --json out.json

Starts a hall (harness/hall.py: the replicas, nginx, and the class database they share), starts a class in
that database, and lets the students of harness/answering.py answer through nginx while a lecturer tab
watches the Class page. Prints: how many answers were acknowledged and counted (each exactly once), the
answer's round trip (Check pressed to "recorded" shown), how long the lecturer's page took to show each
answer, and the students per replica.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import tempfile
from pathlib import Path

from harness.answering import answer_together
from harness.hall import Hall
from lessons.common.class_store import ClassStore, describe


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--students", type=int, default=200)
    parser.add_argument("--within", type=float, default=30.0, help="seconds over which the students answer")
    parser.add_argument("--replicas", type=int, default=2)
    parser.add_argument("--json", type=Path, help="also write the figures to this file")
    arguments = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="class-answers-") as folder, Hall(Path(folder), arguments.replicas) as hall:
        url = hall.database_url
        print(
            f"{arguments.replicas} replica(s) behind nginx at {hall.url}; {arguments.students} students ...", flush=True
        )
        store = ClassStore(url)
        store.upgrade()
        result = asyncio.run(answer_together(hall.url, store, arguments.students, arguments.within))
        result["replicas"] = arguments.replicas
        result["database"] = describe(url)
    print(json.dumps(result, indent=2))
    if arguments.json:
        arguments.json.write_text(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
