"""A lecture room on loopback: many students on one server at once (see harness/load.py for what they do and
what counts as an error).

    python benchmarks/load_test.py                                   # 40 websocket students (8 train) for 90 s
    python benchmarks/load_test.py --client browser --sessions 8 --duration 60 --json results.json
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from harness.load import run_load_test


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--client", choices=("websocket", "browser"), default="websocket")
    parser.add_argument("--sessions", type=int, default=40)
    parser.add_argument("--duration", type=float, default=90.0, help="seconds of load (views in flight finish)")
    parser.add_argument("--trainers", type=int, help="websocket students who train (default: every fifth)")
    parser.add_argument("--json", type=Path, help="also write the figures to this file")
    arguments = parser.parse_args()
    figures = run_load_test(arguments.sessions, arguments.duration, arguments.client, trainers=arguments.trainers)
    for name, value in figures.items():
        print(f"{name:42} {value}")
    if arguments.json:
        arguments.json.write_text(json.dumps(figures, indent=2))
    clean = figures["errors"] == 0 and not figures["requests_off_loopback"]
    return 0 if clean and figures["weights_unchanged"] and figures.get("trained_models_unchanged", True) else 1


if __name__ == "__main__":
    sys.exit(main())
