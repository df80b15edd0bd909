"""The results history's store on both real back ends (a SQLite file, a PostgreSQL server started
here): the schema Alembic makes is the one the code uses; a run is stored once however it is
imported (its own file, again, inside a merged file); results fields are bound parameters, never
SQL; fault runs are stored, marked and left out; and a history that cannot be written (corrupt,
locked, newer schema, unreachable) is one clear line, never a lost results.json."""
from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import textwrap
from datetime import datetime, timezone
from pathlib import Path

import pytest
import sqlalchemy as sa

from accel_regress.results import record

from accel_regress.util import strict_json
from accel_regress.results.history import questions as Q
from accel_regress.results.history import schema as S
from accel_regress.results.history.location import HistoryError
from accel_regress.results.history.store import History

REPO = Path(__file__).resolve().parents[3]


def make_results(n: int, cells: dict, fault=None, host="runner-1", versions=None, revision=None) -> dict:
    """A results dict built by the real builder: ``cells`` maps a case name to its verdict."""
    session = {"started": f"2026-11-20T10:{n:02d}:00+0000", "finished": f"2026-11-20T10:{n:02d}:30+0000",
               "host": host, "argv": ["tests/test_demo.py"], "hw": ["emu"], "fault": fault,
               "golden_seed": 0, "interrupted": False, "exit_status": 0, **({"revision": revision} if revision else {})}
    cases = [{"nodeid": f"tests/test_demo.py::test_x[emu-{name}]", "test": f"test_x[emu-{name}]", "backend": "emu",
              "family": "demo", "verdict": v, "stage": "compare" if v != "PASS" else None,
              "message": "" if v == "PASS" else f"{name} is wrong", "duration_s": 0.5, "runs": [], "census": [],
              "detail": {}, "versions": dict(versions or {"emu-model": "1"})} for name, v in cells.items()]
    return record.build(session, {"emu": {"selected": True, "available": True, "versions": versions or {}}}, cases)


def write(path: Path, data: dict) -> Path:
    path.write_text(strict_json.dumps(data) + "\n")
    return path


def _count(h: History, table) -> int:
    with h.read() as conn:
        return conn.execute(sa.select(sa.func.count()).select_from(table)).scalar()


def test_schema_is_the_migrations(location):
    """Alembic's migration made exactly the tables schema.py describes, at the HEAD revision."""
    from alembic.autogenerate import compare_metadata
    from alembic.migration import MigrationContext
    h = History(location)
    with h.read() as conn:
        assert h.revision(conn) == S.HEAD
        diff = compare_metadata(MigrationContext.configure(conn), S.metadata)
    assert diff == []
    migrations = sorted(p.name for p in (Path(S.__file__).parent / "migrations" / "versions").glob("0*.py"))
    assert migrations[-1].startswith(S.HEAD + "_") and len(migrations) == len(S.KNOWN)


def test_a_run_is_stored_once(location, tmp_path, capsys):
    from accel_regress.results.history import cli
    from accel_regress.results.merge import merge
    a = write(tmp_path / "a.json", make_results(1, {"c1": "PASS", "c2": "FAIL"}))
    b = write(tmp_path / "b.json", make_results(2, {"c1": "PASS", "c2": "PASS"}, host="runner-2"))
    assert cli.main(["import", "--history", location, str(a), str(b)]) == 0
    assert cli.main(["import", "--history", location, str(a)]) == 0
    merged, _ = merge([(None, a), ("strix", b)])
    m = write(tmp_path / "merged.json", merged)
    assert cli.main(["import", "--history", location, str(m)]) == 0
    out = capsys.readouterr().out
    assert out.count("stored\n") == 2 and out.count("kept once") == 3, out
    h = History(location)
    assert _count(h, S.runs) == 2 and _count(h, S.cases) == 4


def test_results_fields_are_bound_parameters(location, tmp_path):
    hostile = "x'); DROP TABLE runs; --"
    data = make_results(1, {hostile: "FAIL", "ok": "PASS"}, host=hostile, revision=hostile)
    data["cases"][0]["message"] = hostile + ' " \\ %_'
    h = History(location)
    h.ingest(data)
    lines, _ = Q.show(h, hostile)
    assert len(lines) == 1 and lines[0].test == f"tests/test_demo.py::test_x[{hostile}]"
    run, verdict, _, message, _ = lines[0].rows[0]
    assert (verdict, message, run.host, run.revision) == ("FAIL", hostile + ' " \\ %_', hostile, hostile)
    lines, _ = Q.show(h, "%")           # a LIKE wildcard is a character like any other
    assert lines == []
    assert _count(h, S.runs) == 1


def test_fault_runs_are_stored_marked_and_left_out(location):
    h = History(location)
    for n in range(6):
        h.ingest(make_results(n, {"c1": "PASS", "c2": "FAIL" if n % 2 else "PASS"},
                              fault="f.py:flip" if n >= 2 else None))
    with h.read() as conn:
        marks = [r for (r,) in conn.execute(sa.select(S.runs.c.has_fault).order_by(S.runs.c.started))]
    assert marks == [False, False, True, True, True, True]
    assert Q.flaky(h) == []
    found = Q.flaky(h, with_faults=True)
    assert [(f.test, f.flips, f.runs) for f in found] == [("tests/test_demo.py::test_x[c2]", 5, 6)]
    # --days counts back from now: these runs are of 2026-11-20.
    age = (datetime.now(timezone.utc).replace(tzinfo=None) - datetime(2026, 11, 20, 10, 5)).days
    if age >= 1:       # a clock set before the runs' dates has nothing to count back
        assert Q.flaky(h, with_faults=True, days=age + 2) == found
        assert Q.flaky(h, with_faults=True, days=age - 1) == []


def test_regression_names_what_changed(location):
    h = History(location)
    for n in range(4):
        broken = n >= 2
        h.ingest(make_results(n, {"c1": "PASS", "c2": "FAIL" if broken else "PASS", "c3": "FAIL"},
                              versions={"iree-compile": "3.12" if not broken else "3.13"},
                              revision=f"abc{n}"))
    regs, left = Q.regressions(h)
    assert [(r.test, r.verdict, r.bad_runs) for r in regs] == [("tests/test_demo.py::test_x[c2]", "FAIL", 2)]
    r = regs[0]
    assert (r.last_good.revision, r.first_bad.revision) == ("abc1", "abc2")
    assert "revision abc1 -> abc2" in r.changes and "emu:iree-compile 3.12 -> 3.13" in r.changes
    assert left == {"flaky": 0, "never_green": 1}       # c3 never passed: not a regression


def test_corrupt_history_is_one_line(tmp_path, capsys):
    from accel_regress.results.history import cli
    bad = tmp_path / "history.sqlite"
    bad.write_bytes(b"this is not a database" * 100)
    with pytest.raises(HistoryError, match="file is not a database"):
        History(str(bad))
    assert cli.main(["flaky", "--history", str(bad)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "file is not a database" in err


def test_locked_history_waits_then_says_so(tmp_path, monkeypatch):
    path = tmp_path / "history.sqlite"
    History(str(path)).close()
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")
    monkeypatch.setenv("ACCEL_HISTORY_TIMEOUT", "0.3")
    try:
        with pytest.raises(HistoryError, match="database is locked"):
            History(str(path)).ingest(make_results(1, {"c1": "PASS"}))
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    h = History(str(path))
    h.ingest(make_results(1, {"c1": "PASS"}))          # free again: written
    assert _count(h, S.runs) == 1


def test_newer_schema_is_never_written(location):
    h = History(location)
    with h.write() as conn:
        conn.execute(sa.text("UPDATE alembic_version SET version_num = :v"), {"v": "9999"})
    with pytest.raises(HistoryError, match="schema revision '9999', newer than this accel-regress knows"):
        History(location)


def test_unreachable_server_is_one_line(tmp_path, monkeypatch, capsys):
    from accel_regress.results.history import cli
    monkeypatch.setenv("ACCEL_HISTORY_TIMEOUT", "2")
    url = f"postgresql://postgres:secret@/h?host={tmp_path / 'no-server'}"
    assert cli.main(["regressions", "--history", url]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no-server" in err and "secret" not in err, err


SESSION = textwrap.dedent('''
    import pytest
    pytestmark = pytest.mark.family("gemm_partition_n")

    @pytest.mark.parametrize("n", range(3))
    def test_case(hw, n):
        assert n != 2
''')


def _session(root: Path, history: str, *extra: str) -> subprocess.CompletedProcess:
    (root / "test_demo.py").write_text(SESSION)
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--hw", "emu",
                           "--isolation", "none", "--report-dir", str(root / "reports"), "--history", history,
                           *extra, "test_demo.py"], cwd=root, capture_output=True, text=True, timeout=300,
                          env={**os.environ, "ACCEL_HISTORY_TIMEOUT": "2"})


@pytest.mark.parametrize("damage", ["corrupt", "newer", "unreachable"])
def test_a_session_with_a_broken_history_still_writes_its_results(tmp_path, damage):
    if damage == "corrupt":
        history = tmp_path / "history.sqlite"
        history.write_bytes(b"\0garbage" * 512)
        history = str(history)
    elif damage == "newer":
        history = str(tmp_path / "history.sqlite")
        with History(history).write() as conn:
            conn.execute(sa.text("UPDATE alembic_version SET version_num = :v"), {"v": "9999"})
    else:
        history = f"postgresql://postgres@/h?host={tmp_path / 'no-server'}"
    proc = _session(tmp_path, history)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 1, out                  # the session's own verdict: one case fails
    data = json.loads((tmp_path / "reports" / "results.json").read_text())
    assert len(data["cases"]) == 3
    warning = [ln for ln in out.splitlines() if "history: not written" in ln]
    assert len(warning) == 1 and "results.json is written" in warning[0], out
    assert "Traceback" not in out


def test_a_session_stores_itself_on_postgresql(postgres, tmp_path):
    url = postgres.create_database()
    proc = _session(tmp_path, url, "--history-revision", "deadbeef", "--history-runner", "ci-strix-3")
    out = proc.stdout + proc.stderr
    assert "stored in postgresql+psycopg://postgres@/" in out, out
    h = History(url)
    with h.read() as conn:
        run = conn.execute(sa.select(S.runs.c.revision, S.runs.c.runner, S.runs.c.n_cases)).one()
    assert tuple(run) == ("deadbeef", "ci-strix-3", 3)
    data = record.load(tmp_path / "reports" / "results.json")
    assert data["session"]["revision"] == "deadbeef"   # an import of the file later is the same run
    assert h.ingest(data)[0][1] is False
    assert (tmp_path / "reports" / "history.html").is_file()
