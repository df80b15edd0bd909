"""The history database: the engine for SQLite or PostgreSQL, its schema version, and ingest.

SQLite: WAL (readers never block the one writer), a busy timeout (a writer waits for another
rather than failing), and every write transaction begun IMMEDIATE, so two writers queue at the
start instead of one failing when it upgrades a read lock. PostgreSQL: psycopg 3; rows that many
sessions add at once (tests, devices) are inserted with ON CONFLICT DO NOTHING in a sorted order
(no deadlock), a run with ON CONFLICT on its key (stored once), and the schema created under an
advisory lock. Every value goes in as a bound parameter.
"""
from __future__ import annotations

import importlib.util
import os
import time
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path
from typing import Iterable, Optional

import sqlalchemy as sa
from sqlalchemy import event, select
from sqlalchemy.engine import Connection, Engine, make_url
from sqlalchemy.exc import DBAPIError

from accel_regress.results.history import schema as S
from accel_regress.results.history.location import HistoryError, describe, is_server
from accel_regress.results.history.rows import RunRows, prepare

TIMEOUT_ENV = "ACCEL_HISTORY_TIMEOUT"     # seconds a writer waits for a lock / a server to answer
_CHUNK = 500                              # values per IN (...) list: under every back end's limit
_ADVISORY_KEY = 0x61636365                # PostgreSQL advisory lock for schema changes ("acce")


def timeout() -> float:
    """$ACCEL_HISTORY_TIMEOUT: seconds any one wait may last (a lock, a statement, the server to
    answer); a session's whole history step is bounded by a few of them (plugin.STEP_BOUNDS)."""
    text = os.environ.get(TIMEOUT_ENV, "").strip()
    if not text:
        return 30.0
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not (0 < value <= 3600):
        raise HistoryError(f"${TIMEOUT_ENV}={text!r}: give the seconds a history wait may last (0 < s <= 3600)")
    return value


def _read_only(path: Path) -> bool:
    """A file this process may read but not write (a history another user keeps, a read-only
    mount): opened read-only, never upgraded or switched to WAL."""
    return not (os.access(path, os.W_OK) and os.access(path.parent, os.W_OK))


def _sqlite_engine(path: Path, create: bool, timeout: float) -> Engine:
    if not path.exists():
        if not create:
            raise HistoryError(f"no history at {path} (runs are recorded there at the end of each session)")
        path.parent.mkdir(parents=True, exist_ok=True)
        from accel_regress.results.history.location import keep_out_of_version_control
        keep_out_of_version_control(str(path))
    elif not path.is_file():
        raise HistoryError(f"{path} is not a file")
    read_only = not create and path.exists() and _read_only(path)
    if read_only:
        # mode=ro: nothing written, not even the WAL's shared-memory file where it cannot be made
        # (https://www.sqlite.org/uri.html; a WAL file with no writable -shm needs immutable=1).
        from urllib.parse import quote
        shm = Path(str(path) + "-shm")
        flags = "mode=ro" + ("" if shm.exists() or os.access(path.parent, os.W_OK) else "&immutable=1")
        url = sa.URL.create("sqlite+pysqlite", database=f"file:{quote(str(path))}?{flags}", query={"uri": "true"})
    else:
        url = sa.URL.create("sqlite+pysqlite", database=str(path))
    engine = sa.create_engine(url, connect_args={"timeout": timeout}, poolclass=sa.pool.NullPool)

    @event.listens_for(engine, "connect")
    def _connect(dbapi_conn, _record):
        dbapi_conn.isolation_level = None       # we say BEGIN ourselves (below)
        cur = dbapi_conn.cursor()
        cur.execute(f"PRAGMA busy_timeout = {int(timeout * 1000)}")
        if not read_only:
            cur.execute("PRAGMA journal_mode = WAL")
        cur.execute("PRAGMA synchronous = NORMAL")   # in WAL: a crash of the process loses nothing
        cur.execute("PRAGMA foreign_keys = ON")
        cur.close()

    @event.listens_for(engine, "begin")
    def _begin(conn):
        conn.exec_driver_sql("BEGIN IMMEDIATE" if conn.get_execution_options().get("write") else "BEGIN")
    return engine


def _server_engine(location: str, timeout: float) -> Engine:
    url = make_url(location)
    if url.drivername in ("postgresql", "postgres"):
        url = url.set(drivername="postgresql+psycopg")
    if not url.drivername.startswith("postgresql"):
        raise HistoryError(f"{describe(location)}: only postgresql:// servers are supported (or a SQLite file path)")
    if url.drivername == "postgresql+psycopg" and importlib.util.find_spec("psycopg") is None:
        raise HistoryError(f"history {describe(location)}: a PostgreSQL history needs the psycopg driver: the extra "
                           "accel-regress[postgresql], or pip install 'psycopg[binary]'")
    # Every wait bounded on the server's side too: a lock another client holds (lock_timeout) and a
    # statement that runs on (statement_timeout, later: a lock wait is then named as one) end in an
    # error, never a session stuck at its end (PostgreSQL's runtime-config-client.html).
    ms = max(1, int(timeout * 1000))
    options = f"-c lock_timeout={ms} -c statement_timeout={2 * ms} -c idle_in_transaction_session_timeout={4 * ms}"
    return sa.create_engine(url, connect_args={"connect_timeout": max(1, int(timeout + 0.999)), "options": options},
                            poolclass=sa.pool.NullPool)


def _reason(exc: BaseException) -> str:
    """One line for a database error: the driver's words, never a traceback or the SQL."""
    orig = getattr(exc, "orig", None) or exc
    # psycopg's text of a server error adds the statement ("LINE 1: INSERT INTO ..."): its primary
    # message alone is the reason.
    primary = getattr(getattr(orig, "diag", None), "message_primary", None)
    text = " ".join(str(primary or orig).split()) or type(orig).__name__
    return text[:300]


class History:
    """One history (``location``: a SQLite path or a postgresql:// URL). ``create``: make the file
    and schema if missing (writers); readers get a HistoryError for a missing history instead."""

    def __init__(self, location: str, create: bool = True):
        self.location = location
        self.where = describe(location)
        self._known: dict[str, dict] = {}     # table -> {key: id} committed
        try:
            wait = timeout()
            if is_server(location):
                self.engine = _server_engine(location, wait)
            else:
                self.engine = _sqlite_engine(Path(location).expanduser(), create, wait)
            self.dialect = self.engine.dialect.name
            self._schema(create)
        except HistoryError:
            raise
        except Exception as exc:    # the driver's own errors too (a corrupt file fails in PRAGMA)
            raise HistoryError(f"history {self.where}: {_reason(exc)}") from None

    # --- connections ---------------------------------------------------------------------------

    @contextmanager
    def read(self):
        with self.engine.connect() as conn:
            with conn.begin():
                yield conn

    @contextmanager
    def write(self):
        with self.engine.connect().execution_options(write=True) as conn:
            with conn.begin():
                yield conn

    def close(self) -> None:
        self.engine.dispose()

    # --- schema ----------------------------------------------------------------------------------

    def revision(self, conn: Connection) -> Optional[str]:
        if not sa.inspect(conn).has_table("alembic_version"):
            return None
        version = sa.table("alembic_version", sa.column("version_num"))
        found = [r[0] for r in conn.execute(select(version.c.version_num))]
        return found[0] if found else None

    def _schema(self, create: bool) -> None:
        with self.read() as conn:
            current = self.revision(conn)
            if current is None:
                foreign = sorted(set(sa.inspect(conn).get_table_names()))
                if foreign:
                    raise HistoryError(
                        f"{self.where} is not an accel-regress history (it holds other tables: "
                        f"{', '.join(foreign[:5])}{', ...' if len(foreign) > 5 else ''}): give a file or "
                        f"database of its own")
        if current == S.HEAD:
            return
        if current is not None and current not in S.KNOWN:
            raise HistoryError(f"history {self.where} has schema revision {current!r}, newer than this "
                               f"accel-regress knows (up to {S.HEAD!r}): upgrade accel-regress to use it")
        if not create:
            raise HistoryError(f"history {self.where} is at schema revision {current!r}; a run of this "
                               f"accel-regress upgrades it to {S.HEAD!r}")
        self._upgrade()

    def _upgrade(self) -> None:
        from alembic import command
        from alembic.config import Config
        cfg = Config()
        cfg.set_main_option("script_location", str(Path(__file__).with_name("migrations")))
        with self.write() as conn:
            if self.dialect == "postgresql":
                conn.execute(select(sa.func.pg_advisory_xact_lock(_ADVISORY_KEY)))
            current = self.revision(conn)     # another writer may have done it meanwhile
            if current == S.HEAD:
                return
            if current is not None and current not in S.KNOWN:
                raise HistoryError(f"history {self.where} has schema revision {current!r}, newer than "
                                   f"this accel-regress knows (up to {S.HEAD!r})")
            cfg.attributes["connection"] = conn
            command.upgrade(cfg, "head")

    # --- ingest ----------------------------------------------------------------------------------

    def ingest(self, data: dict, source: Optional[str] = None, entry: str = "import") -> list[tuple[str, bool, int]]:
        """Store the runs of a results dict; (run key, stored now?, cases) per run. A run already
        in the history is left as it is (stored once). ``entry``: how it came in (rows.ENTRIES)."""
        out = []
        for rows in prepare(data, source, entry):
            for attempt in range(5):
                try:
                    out.append((rows.key, self._ingest_one(rows), len(rows.cases)))
                    break
                except DBAPIError as exc:
                    # A deadlock or serialization failure on the server: the transaction was rolled
                    # back whole; try it again.
                    code = getattr(getattr(exc, "orig", None), "sqlstate", None)
                    if code in ("40P01", "40001") and attempt < 4:
                        time.sleep(0.05 * (attempt + 1))
                        continue
                    raise HistoryError(f"history {self.where}: {_reason(exc)}") from None
                except HistoryError:
                    raise
                except Exception as exc:     # the driver's own errors too: one line, never a traceback
                    raise HistoryError(f"history {self.where}: {_reason(exc)}") from None
        return out

    def _insert(self):
        if self.dialect == "postgresql":
            from sqlalchemy.dialects.postgresql import insert
        else:
            from sqlalchemy.dialects.sqlite import insert
        return insert

    def _ids(self, conn: Connection, table: sa.Table, column: str, values: dict) -> dict:
        """{value: id} for ``values`` ({value: other columns}), inserting the missing ones. Ids
        never change once committed: those this process has seen committed are not asked again
        (an import of many files asks once)."""
        col = table.c[column]
        known = self._known.setdefault(table.name, {})
        found: dict = {k: known[k] for k in values if k in known}
        keys = sorted(k for k in values if k not in found)
        for i in range(0, len(keys), _CHUNK):
            chunk = keys[i:i + _CHUNK]
            found.update((k, i) for k, i in conn.execute(select(col, table.c.id).where(col.in_(chunk))))
        missing = [k for k in keys if k not in found]
        if missing:
            insert = self._insert()
            conn.execute(insert(table).on_conflict_do_nothing(index_elements=[column]),
                         [{column: k, **values[k]} for k in missing])
            for i in range(0, len(missing), _CHUNK):
                chunk = missing[i:i + _CHUNK]
                found.update((k, i) for k, i in conn.execute(select(col, table.c.id).where(col.in_(chunk))))
        return found

    def _ingest_one(self, rows: RunRows) -> bool:
        insert = self._insert()
        now = datetime.now(timezone.utc).replace(tzinfo=None)
        with self.write() as conn:
            run_id = conn.execute(
                insert(S.runs).on_conflict_do_nothing(index_elements=["run_key"]).returning(S.runs.c.id),
                {"run_key": rows.key, "ingested": now, **rows.run}).scalar()
            if run_id is None:
                return False
            tests = self._ids(conn, S.tests, "key", {k: {"family": f} for k, f in rows.tests.items()})
            devices = self._ids(conn, S.devices, "label", {d: {"backend": b} for d, (b, _) in rows.devices.items()})
            if rows.versions:
                conn.execute(S.run_versions.insert(), [{"run_id": run_id, "backend": b, "name": n, "value": v}
                                                       for (b, n), v in sorted(rows.versions.items())])
            if rows.devices:
                conn.execute(S.run_devices.insert(), [{"run_id": run_id, "device_id": devices[d], "name": name}
                                                      for d, (_, name) in sorted(rows.devices.items())])
            if rows.cases:
                conn.execute(S.cases.insert(), [
                    {"run_id": run_id, "test_id": tests[c["test"]], "device_id": devices[c["device"]],
                     "backend": c["backend"], "verdict": c["verdict"], "stage": c["stage"],
                     "duration": c["duration"], "message": c["message"], "stats": c["stats"], "rerun": c["rerun"]}
                    for c in rows.cases])
        for name, ids in (("tests", tests), ("devices", devices)):     # committed: safe to keep
            self._known.setdefault(name, {}).update(ids)
        return True


def open_history(location: str, create: bool = True) -> History:
    return History(location, create=create)


def ingest_files(history: History, paths: Iterable[Path]) -> Iterable:
    """(path, [(run key, stored now?, cases)] or the error text) per results.json."""
    from accel_regress.results import record
    for path in paths:
        try:
            data = record.load(Path(path))
        except record.ResultsError as exc:
            yield path, str(exc)
            continue
        yield path, history.ingest(data, source=str(path))
