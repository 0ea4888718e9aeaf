"""Alembic's environment for the class tables: `ClassStore.upgrade` hands it a connection; run on its own
(`alembic -c lessons/common/class_migrations/alembic.ini upgrade head`) it connects to the URL in force."""

from alembic import context
from sqlalchemy import create_engine

from lessons.common.classroom import database_url, metadata

connection = context.config.attributes.get("connection")
if connection is not None:
    context.configure(connection=connection, target_metadata=metadata, render_as_batch=True)
    with context.begin_transaction():
        context.run_migrations()
else:
    with create_engine(database_url()).connect() as opened:
        context.configure(connection=opened, target_metadata=metadata, render_as_batch=True)
        with context.begin_transaction():
            context.run_migrations()
