"""The class tables on both databases the app runs on (SQLite, PostgreSQL): the migrations make them, run again
change nothing, go back to nothing and forward again; a class's answers come back as its spread. And on which
databases these tests run."""

from __future__ import annotations

from pathlib import Path

import sqlalchemy as sa
from alembic import command
from alembic.config import Config

from harness.postgres import postgres_binaries
from lessons.common.class_store import MIGRATIONS, ClassStore
from lessons.common.classroom import Question
from tests.postgresql import backends

CLASS_TABLES = {"classes", "questions", "answers"}
QUESTION = Question(
    asked="attention-softmax",
    page="attention",
    title="Softmax",
    question="What do the weights of one query add up to?",
    options=("0", "1", "the number of tokens"),
    decimals=0,
    answer="1",
)


def tables(url: str) -> set[str]:
    engine = sa.create_engine(url)
    try:
        return set(sa.inspect(engine).get_table_names())
    finally:
        engine.dispose()


def revision(url: str) -> str | None:
    engine = sa.create_engine(url)
    try:
        with engine.connect() as connection:
            return connection.scalar(sa.text("SELECT version_num FROM alembic_version"))
    finally:
        engine.dispose()


def alembic(store: ClassStore, verb: str, target: str) -> None:
    """`alembic upgrade|downgrade target` on the store's database, as ClassStore.upgrade runs it."""
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    with store.engine.begin() as connection:
        config.attributes["connection"] = connection
        getattr(command, verb)(config, target)


def test_the_migrations_make_the_class_tables_and_a_second_upgrade_changes_nothing(class_database_url):
    store = ClassStore(class_database_url)
    store.upgrade()
    assert tables(class_database_url) == CLASS_TABLES | {"alembic_version"}
    head = revision(class_database_url)
    started = store.start_class("Week 3: attention", minutes=60)

    ClassStore(class_database_url).upgrade()

    assert revision(class_database_url) == head == "0001"
    assert store.find_class(started.code).title == "Week 3: attention"


def test_downgrading_to_base_removes_the_class_tables_and_upgrading_brings_them_back(class_database_url):
    store = ClassStore(class_database_url)
    store.upgrade()

    alembic(store, "downgrade", "base")
    assert tables(class_database_url) == {"alembic_version"} and revision(class_database_url) is None

    alembic(store, "upgrade", "head")
    assert tables(class_database_url) == CLASS_TABLES | {"alembic_version"}
    started = store.start_class("After the round trip", minutes=30)
    assert store.find_class(started.code).title == "After the round trip"


def test_answers_recorded_in_a_class_come_back_as_its_spread_the_latest_answer_of_each_student_counted(
    class_database_url,
):
    store = ClassStore(class_database_url)
    store.upgrade()
    started = store.start_class("Week 3", minutes=60)
    for student, response in [("ada", "0"), ("bob", "1"), ("cy", "1"), ("ada", "1"), ("dee", "the number of tokens")]:
        store.record_answer(started.code, student, QUESTION, response, right=response == QUESTION.answer)

    (spread,) = store.spread(started.code, started.lecturer_key)

    assert spread.question == QUESTION
    assert spread.counts == (("0", 0, False), ("1", 3, True), ("the number of tokens", 1, False))
    assert (spread.answered, spread.right, spread.revealed) == (4, 3, False)


def test_the_tests_run_on_postgresql_wherever_it_is_installed_or_required(tmp_path):
    assert backends(None, {}) == ["sqlite"]
    assert backends(None, {"ANATOMY_REQUIRE_POSTGRESQL": "1"}) == ["sqlite", "postgresql"]  # then it fails there
    assert backends(tmp_path, {}) == ["sqlite", "postgresql"]


def test_postgresqls_binaries_are_found_beside_the_paths_initdb_or_in_debians_newest_version(tmp_path):
    def install(folder: Path) -> Path:
        folder.mkdir(parents=True)
        for name in ("initdb", "postgres"):
            (folder / name).write_text("#!/bin/sh\n")
            (folder / name).chmod(0o755)
        return folder

    debian = tmp_path / "usr-lib-postgresql"
    assert postgres_binaries(search_path="", debian=debian) is None
    install(debian / "9" / "bin")
    newest = install(debian / "15" / "bin")
    assert postgres_binaries(search_path="", debian=debian) == newest
    on_the_path = install(tmp_path / "elsewhere")
    assert postgres_binaries(search_path=str(on_the_path), debian=debian) == on_the_path
