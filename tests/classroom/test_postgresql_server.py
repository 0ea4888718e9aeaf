"""PostgreSQL behind several replicas: stores upgrading one new database at the same moment all succeed, and the
server the lecture hall and the tests start (harness/postgres.py) listens on loopback only, keeps the defaults
that make it crash-safe, and can be stopped mid-class and started again on the same data and port.

Collected only where PostgreSQL is installed or required (tests/classroom/conftest.py)."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest
import sqlalchemy as sa

from harness.postgres import PostgresServer
from lessons.common.class_store import ClassStore
from lessons.common.classroom import ClassStoreUnavailable
from tests.classroom.test_class_database import CLASS_TABLES, revision, tables

ROOT = Path(__file__).resolve().parents[2]


REPLICAS = 4


def backends_waiting_on_a_lock(connection: sa.Connection, database: str) -> int:
    waiting = connection.scalar(
        sa.text("SELECT count(*) FROM pg_stat_activity WHERE datname = :database AND wait_event_type = 'Lock'"),
        {"database": database},
    )
    connection.rollback()  # a transaction sees one snapshot of pg_stat_activity: the next look needs a new one
    return waiting


@pytest.mark.slow  # replicas, each a process of its own: 3-4 s
def test_replicas_upgrading_one_new_postgresql_database_at_the_same_moment_all_succeed(postgres_server):
    # Replicas starting together each run the migrations; the store's advisory lock lets one create the tables
    # while the others wait, then find them made. To make "together" certain, the test creates Alembic's own
    # table first, uncommitted: every replica's migration then stops at that table (or at the advisory lock),
    # and all are let go at once when the test rolls it back. Without the lock, all go on to create the same
    # tables, and all but one fail.
    url = postgres_server.create_database("class_upgraded_at_once")
    engine = sa.create_engine(url)
    with engine.connect() as holding:
        holding.execute(sa.text("CREATE TABLE alembic_version (version_num varchar(32) PRIMARY KEY)"))
        replicas = [
            subprocess.Popen(
                [
                    sys.executable,
                    "-c",
                    f"from lessons.common.class_store import ClassStore; ClassStore({url!r}).upgrade()",
                ],
                cwd=ROOT,
                stderr=subprocess.PIPE,
                text=True,
            )
            for _ in range(REPLICAS)
        ]
        with engine.connect() as watching:
            deadline = time.monotonic() + 120
            while backends_waiting_on_a_lock(watching, "class_upgraded_at_once") < REPLICAS:
                assert time.monotonic() < deadline, "the replicas never all reached the migration"
                assert all(replica.poll() is None for replica in replicas), [r.communicate()[1] for r in replicas]
                time.sleep(0.1)
        holding.rollback()
    engine.dispose()
    errors = [replica.communicate(timeout=120)[1] for replica in replicas]

    assert [replica.returncode for replica in replicas] == [0] * REPLICAS, [error[-300:] for error in errors]
    assert tables(url) == CLASS_TABLES | {"alembic_version"} and revision(url) == "0001"
    postgres_server.drop_database("class_upgraded_at_once")


@pytest.mark.slow  # the server stopped and started again: 4-5 s
def test_a_postgresql_stopped_mid_class_makes_the_store_unavailable_and_started_again_keeps_the_class(
    tmp_path, postgres_server
):
    # Its own server with the defaults the lecture hall uses (crash-safe), not the session's fast one.
    with PostgresServer(tmp_path, postgres_server.binaries) as server:
        store = ClassStore(server.url)
        store.upgrade()
        started = store.start_class("Week 4", minutes=60)
        with store.engine.connect() as connection:
            settings = {name: connection.scalar(sa.text(f"SHOW {name}")) for name in ("listen_addresses", "fsync")}
        assert settings == {"listen_addresses": "127.0.0.1", "fsync": "on"}
        port = server.port

        server.stop()
        assert not server.is_running()
        with pytest.raises(ClassStoreUnavailable):
            store.find_class(started.code)

        server.start()
        assert server.port == port and store.find_class(started.code).title == "Week 4"
        store.engine.dispose()
