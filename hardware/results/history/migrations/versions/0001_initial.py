"""The first schema: runs, their versions and devices, tests, devices and one case per test x device x run.

Revision ID: 0001
Revises:
"""
import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None

_ID = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def upgrade() -> None:
    op.create_table(
        "runs",
        sa.Column("id", _ID, primary_key=True, autoincrement=True),
        sa.Column("run_key", sa.String(80), nullable=False),
        sa.Column("started", sa.DateTime(), nullable=True),
        sa.Column("finished", sa.DateTime(), nullable=True),
        sa.Column("host", sa.Text(), nullable=True),
        sa.Column("runner", sa.Text(), nullable=True),
        sa.Column("revision", sa.Text(), nullable=True),
        sa.Column("argv", sa.Text(), nullable=True),
        sa.Column("hw", sa.Text(), nullable=True),
        sa.Column("fault", sa.Text(), nullable=True),
        sa.Column("has_fault", sa.Boolean(), nullable=False),
        sa.Column("policy", sa.Text(), nullable=True),
        sa.Column("golden_seed", sa.Integer(), nullable=True),
        sa.Column("exit_status", sa.Integer(), nullable=True),
        sa.Column("interrupted", sa.Boolean(), nullable=False),
        sa.Column("n_cases", sa.Integer(), nullable=False),
        sa.Column("source", sa.Text(), nullable=True),
        sa.Column("ingested", sa.DateTime(), nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_runs"),
        sa.UniqueConstraint("run_key", name="uq_runs_run_key"),
    )
    op.create_index("ix_runs_started", "runs", ["started"])
    op.create_table(
        "run_versions",
        sa.Column("run_id", _ID, nullable=False),
        sa.Column("backend", sa.String(255), nullable=False),
        sa.Column("name", sa.String(255), nullable=False),
        sa.Column("value", sa.Text(), nullable=True),
        sa.ForeignKeyConstraint(["run_id"], ["runs.id"], name="fk_run_versions_run_id_runs", ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("run_id", "backend", "name", name="pk_run_versions"),
    )
    op.create_table(
        "devices",
        sa.Column("id", _ID, primary_key=True, autoincrement=True),
        sa.Column("label", sa.String(255), nullable=False),
        sa.Column("backend", sa.String(255), nullable=True),
        sa.PrimaryKeyConstraint("id", name="pk_devices"),
        sa.UniqueConstraint("label", name="uq_devices_label"),
    )
    op.create_table(
        "run_devices",
        sa.Column("run_id", _ID, nullable=False),
        sa.Column("device_id", _ID, nullable=False),
        sa.Column("name", sa.Text(), nullable=True),
        sa.ForeignKeyConstraint(["run_id"], ["runs.id"], name="fk_run_devices_run_id_runs", ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["device_id"], ["devices.id"], name="fk_run_devices_device_id_devices"),
        sa.PrimaryKeyConstraint("run_id", "device_id", name="pk_run_devices"),
    )
    op.create_table(
        "tests",
        sa.Column("id", _ID, primary_key=True, autoincrement=True),
        sa.Column("key", sa.Text(), nullable=False),
        sa.Column("family", sa.String(255), nullable=True),
        sa.PrimaryKeyConstraint("id", name="pk_tests"),
        sa.UniqueConstraint("key", name="uq_tests_key"),
    )
    op.create_table(
        "cases",
        sa.Column("run_id", _ID, nullable=False),
        sa.Column("test_id", _ID, nullable=False),
        sa.Column("device_id", _ID, nullable=False),
        sa.Column("backend", sa.String(255), nullable=True),
        sa.Column("verdict", sa.String(32), nullable=False),
        sa.Column("stage", sa.String(32), nullable=True),
        sa.Column("duration", sa.Float(), nullable=True),
        sa.Column("message", sa.Text(), nullable=True),
        sa.Column("stats", sa.Text(), nullable=True),
        sa.Column("rerun", sa.Text(), nullable=True),
        sa.ForeignKeyConstraint(["run_id"], ["runs.id"], name="fk_cases_run_id_runs", ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["test_id"], ["tests.id"], name="fk_cases_test_id_tests"),
        sa.ForeignKeyConstraint(["device_id"], ["devices.id"], name="fk_cases_device_id_devices"),
        sa.PrimaryKeyConstraint("run_id", "test_id", "device_id", name="pk_cases"),
    )
    op.create_index("ix_cases_test_device", "cases", ["test_id", "device_id", "run_id"])


def downgrade() -> None:
    for table in ("cases", "tests", "run_devices", "devices", "run_versions", "runs"):
        op.drop_table(table)
