"""Which class database a lecture hall gives its replicas (harness.hall.class_database): a URL the environment
names, else PostgreSQL of its own, else one SQLite file in the hall's folder, said in one line."""

from __future__ import annotations

import logging

from harness.hall import class_database
from harness.postgres import PostgresServer, postgres_binaries


def test_a_url_given_in_the_environment_is_used_as_it_is_and_nothing_is_started(tmp_path):
    given = "postgresql+psycopg://anatomy:secret@db.example.org:5432/anatomy"
    assert class_database(tmp_path, {"ANATOMY_CLASS_DATABASE_URL": given}, postgres_binaries()) == given


def test_where_postgresql_is_installed_the_hall_gets_a_server_of_its_own_in_its_folder_on_loopback(tmp_path):
    server = class_database(tmp_path, {}, tmp_path / "bin")
    assert isinstance(server, PostgresServer) and server.folder == tmp_path / "postgres"
    assert server.durable and server.url.startswith("postgresql+psycopg://anatomy:")
    assert f"@127.0.0.1:{server.port}/anatomy" in server.url and not server.is_running()


def test_without_postgresql_the_replicas_share_one_sqlite_file_and_the_hall_says_so_in_one_line(tmp_path, caplog):
    with caplog.at_level(logging.WARNING, logger="harness.hall"):
        url = class_database(tmp_path, {}, None)
    assert url == f"sqlite:///{tmp_path / 'classes.sqlite'}"
    (line,) = [record.getMessage() for record in caplog.records]
    assert "PostgreSQL is not installed" in line and str(tmp_path) in line and "\n" not in line
