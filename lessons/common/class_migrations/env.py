"""Alembic's environment for the class tables: `ClassStore.upgrade` hands it a connection; run on its own
(`alembic -c lessons/common/class_migrations/alembic.ini upgrade head`) it connects to the URL in force.

Alembic runs this file; imported anywhere else (the import checks import every module) it does nothing."""

from alembic import context
from sqlalchemy import create_engine

from lessons.common.class_store import metadata
from lessons.common.classroom import database_url


def run_migrations() -> None:
    given = context.config.attributes.get("connection")
    if given is not None:
        _run_on(given)
        return
    with create_engine(database_url()).connect() as opened:
        _run_on(opened)


def _run_on(connection) -> None:
    context.configure(connection=connection, target_metadata=metadata, render_as_batch=True)
    with context.begin_transaction():
        context.run_migrations()


if hasattr(context, "config"):  # Alembic is running this file (its context has a configuration)
    run_migrations()
