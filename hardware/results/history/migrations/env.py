"""Alembic's environment for the history: always handed an open connection by store.upgrade()."""
from alembic import context

from accel_regress.results.history.schema import metadata

connection = context.config.attributes["connection"]
context.configure(connection=connection, target_metadata=metadata, render_as_batch=True)
with context.begin_transaction():
    context.run_migrations()
