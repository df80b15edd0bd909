"""The history's tables (SQLAlchemy Core), one schema for SQLite and PostgreSQL.

Shaped like LLVM LNT's results database: runs (one per session, with what it ran on and with),
the tests and devices seen (each stored once), and one sample per test x device x run. The
migrations in ``migrations/versions`` create exactly these tables (a selftest compares them);
``HEAD`` is the newest migration's revision: a history at another revision that this code does
not know is from a newer accel-regress and is never written.
"""
from __future__ import annotations

from sqlalchemy import (BigInteger, Boolean, Column, DateTime, Float, ForeignKey, Index, Integer, MetaData,
                        String, Table, Text, UniqueConstraint)

HEAD = "0002"
KNOWN = ("0001", "0002")      # every revision this code can upgrade from, oldest first

metadata = MetaData(naming_convention={
    "ix": "ix_%(table_name)s_%(column_0_N_name)s", "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s", "pk": "pk_%(table_name)s"})

# SQLite makes only an INTEGER PRIMARY KEY an auto-numbered rowid.
_ID = BigInteger().with_variant(Integer, "sqlite")

runs = Table(
    "runs", metadata,
    Column("id", _ID, primary_key=True, autoincrement=True),
    Column("run_key", String(80), nullable=False, unique=True),   # content-derived: one run is stored once
    Column("started", DateTime, nullable=True, index=True),        # UTC
    Column("finished", DateTime, nullable=True),
    Column("host", Text, nullable=True),
    Column("runner", Text, nullable=True),          # CI runner label
    Column("revision", Text, nullable=True),        # of the code under test
    Column("project", Text, nullable=True),         # the rootdir's project name, or --history-project
    Column("branch", Text, nullable=True),          # branch or ref of the code under test
    Column("entry", String(16), nullable=True),     # how it came in: session, import (rows.ENTRIES); NULL: before 0002
    Column("argv", Text, nullable=True),            # JSON list
    Column("hw", Text, nullable=True),              # JSON list of the backends asked for
    Column("fault", Text, nullable=True),           # the injected fault, if any
    Column("has_fault", Boolean, nullable=False),   # questions leave these runs out unless --with-faults
    Column("policy", Text, nullable=True),
    Column("golden_seed", Integer, nullable=True),
    Column("exit_status", Integer, nullable=True),
    Column("interrupted", Boolean, nullable=False),
    Column("n_cases", Integer, nullable=False),
    Column("source", Text, nullable=True),          # the file it was imported from
    Column("ingested", DateTime, nullable=False),
)

# Every toolchain / driver / device version the record holds, per backend, once per run.
run_versions = Table(
    "run_versions", metadata,
    Column("run_id", ForeignKey("runs.id", ondelete="CASCADE"), primary_key=True),
    Column("backend", String(255), primary_key=True),
    Column("name", String(255), primary_key=True),
    Column("value", Text, nullable=True),
)

devices = Table(
    "devices", metadata,
    Column("id", _ID, primary_key=True, autoincrement=True),
    Column("label", String(255), nullable=False, unique=True),     # the gate's / merge's device column
    Column("backend", String(255), nullable=True),
)

run_devices = Table(
    "run_devices", metadata,
    Column("run_id", ForeignKey("runs.id", ondelete="CASCADE"), primary_key=True),
    Column("device_id", ForeignKey("devices.id"), primary_key=True),
    Column("name", Text, nullable=True),            # what the backend reported (npu6, NPU Strix, ...)
)

tests = Table(
    "tests", metadata,
    Column("id", _ID, primary_key=True, autoincrement=True),
    Column("key", Text, nullable=False),            # node id without the backend parameter (merge.test_key)
    Column("family", String(255), nullable=True),
    UniqueConstraint("key"),
)

cases = Table(
    "cases", metadata,
    Column("run_id", ForeignKey("runs.id", ondelete="CASCADE"), primary_key=True),
    Column("test_id", ForeignKey("tests.id"), primary_key=True),
    Column("device_id", ForeignKey("devices.id"), primary_key=True),
    Column("backend", String(255), nullable=True),
    Column("verdict", String(32), nullable=False),
    Column("stage", String(32), nullable=True),
    Column("duration", Float, nullable=True),
    Column("message", Text, nullable=True),
    Column("stats", Text, nullable=True),           # JSON: census, --repeat rate, expectation
    Column("rerun", Text, nullable=True),
    Index("ix_cases_test_device", "test_id", "device_id", "run_id"),
)
