"""Provenance of a run: its project, branch, and how it came into the history (a session, an import).

Flakiness evidence counts only sessions of the same project and branch (issue 34 item 2). Runs
stored before this revision keep NULL there: their route is unknown, so they are never evidence.

Revision ID: 0002
Revises: 0001
"""
import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("runs", sa.Column("project", sa.Text(), nullable=True))
    op.add_column("runs", sa.Column("branch", sa.Text(), nullable=True))
    op.add_column("runs", sa.Column("entry", sa.String(16), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("runs") as batch:
        for column in ("entry", "branch", "project"):
            batch.drop_column(column)
