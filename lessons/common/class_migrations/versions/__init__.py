"""One file per migration, oldest first (Alembic reads their revision ids)."""
