"""The class database under test: every test that asks for `class_database_url` runs once on a SQLite file of
its own and once on a fresh PostgreSQL database (where PostgreSQL is installed, or required: see
tests/postgresql.py)."""

from __future__ import annotations

import secrets

import pytest

from harness.postgres import postgres_binaries
from tests.postgresql import backends


@pytest.fixture(params=backends(postgres_binaries()))
def class_database_url(request, tmp_path):
    """A SQLAlchemy URL of an empty database (no tables yet: `ClassStore(url).upgrade()` makes them)."""
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'classes.sqlite'}"
        return
    server = request.getfixturevalue("postgres_server")
    name = f"class_{secrets.token_hex(6)}"
    yield server.create_database(name)
    server.drop_database(name)


# The tests of PostgreSQL alone: not collected where it is neither installed nor required.
collect_ignore = (
    [] if "postgresql" in backends(postgres_binaries()) else ["test_postgresql_server.py", "test_class_faults.py"]
)
