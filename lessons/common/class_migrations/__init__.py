"""The Alembic migrations of the class tables (lessons.common.classroom): env.py and versions/."""
