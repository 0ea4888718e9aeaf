"""Which databases the class tests run on: SQLite always, PostgreSQL where its binaries are found.

CI sets ANATOMY_REQUIRE_POSTGRESQL=1: there the PostgreSQL tests are collected whether or not the binaries are
found, and the server's fixture fails them with a message saying what to install. A missing PostgreSQL is never
a silent skip.
"""

from __future__ import annotations

import os
from pathlib import Path

REQUIRE_VARIABLE = "ANATOMY_REQUIRE_POSTGRESQL"
MISSING = (
    f"{REQUIRE_VARIABLE}=1, but PostgreSQL's binaries (initdb, postgres) are not on the PATH nor under "
    "/usr/lib/postgresql/<version>/bin: install Debian's PostgreSQL (`apt-get install postgresql`, as .ci/run does)"
)


def postgresql_required(environment: dict[str, str] | None = None) -> bool:
    environment = dict(os.environ) if environment is None else environment
    return environment.get(REQUIRE_VARIABLE, "").strip() == "1"


def backends(binaries: Path | None, environment: dict[str, str] | None = None) -> list[str]:
    """The backends to run the class tests on."""
    if binaries is not None or postgresql_required(environment):
        return ["sqlite", "postgresql"]
    return ["sqlite"]
