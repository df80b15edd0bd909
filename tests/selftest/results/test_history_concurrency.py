"""Many writers at once lose nothing: ten `history import` processes ingesting at the same time
(each its own run, all sharing tests and devices, and all also importing one common run) on a
PostgreSQL server and on a SQLite file; and a real `-n 2` session stores every one of its cases,
once, from the controller."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
import sqlalchemy as sa

from accel_regress.results.history import schema as S
from accel_regress.results.history.store import History

from test_history_store import make_results, write

WRITERS = 10
CASES = 300


@pytest.mark.parametrize("backend", ["postgresql", "sqlite"])
def test_ten_concurrent_writers_lose_nothing(backend, request, tmp_path):
    location = (request.getfixturevalue("postgres").create_database() if backend == "postgresql"
                else str(tmp_path / "history.sqlite"))
    common = write(tmp_path / "common.json", make_results(59, {f"c{i}": "PASS" for i in range(CASES)}))
    files = [write(tmp_path / f"r{n}.json", make_results(n, {f"c{i}": "FAIL" if (i + n) % 7 == 0 else "PASS"
                                                            for i in range(CASES)}, host=f"runner-{n}"))
             for n in range(WRITERS)]
    # Every writer starts on an empty history: the schema is made under contention too.
    procs = [subprocess.Popen([sys.executable, "-m", "accel_regress", "history", "import", "--history", location,
                               str(f), str(common)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
             for f in files]
    outs = [p.communicate(timeout=300)[0] for p in procs]
    assert all(p.returncode == 0 for p in procs), outs
    assert sum(o.count("kept once") for o in outs) == WRITERS - 1      # the common run: stored by one writer
    h = History(location)
    with h.read() as conn:
        count = lambda t: conn.execute(sa.select(sa.func.count()).select_from(t)).scalar()  # noqa: E731
        assert count(S.runs) == WRITERS + 1
        assert count(S.cases) == (WRITERS + 1) * CASES
        assert count(S.tests) == CASES and count(S.devices) == 1
        fails = conn.execute(sa.select(sa.func.count()).select_from(S.cases)
                             .where(S.cases.c.verdict == "FAIL")).scalar()
    assert fails == sum(1 for n in range(WRITERS) for i in range(CASES) if (i + n) % 7 == 0)


def test_a_parallel_session_is_stored_once_from_the_controller(tmp_path):
    (tmp_path / "test_demo.py").write_text(
        "import pytest\npytestmark = pytest.mark.family('gemm_partition_n')\n\n"
        "@pytest.mark.parametrize('n', range(8))\ndef test_case(hw, n):\n    assert n % 4\n")
    history = tmp_path / "history.sqlite"
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-n", "2", "--hw", "emu",
                           "--isolation", "none", "--report-dir", str(tmp_path / "reports"), "--history", str(history),
                           "test_demo.py"], cwd=tmp_path, capture_output=True, text=True, timeout=300,
                          env=dict(os.environ))
    out = proc.stdout + proc.stderr
    assert proc.returncode == 1, out
    assert out.count("history: run") == 1, out
    data = json.loads((tmp_path / "reports" / "results.json").read_text())
    h = History(str(history))
    with h.read() as conn:
        assert conn.execute(sa.select(sa.func.count()).select_from(S.runs)).scalar() == 1
        got = sorted(conn.execute(sa.select(S.cases.c.verdict)).scalars())
    assert got == sorted(c["verdict"] for c in data["cases"]) and got.count("FAIL") == 2
