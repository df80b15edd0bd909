"""hardware/plugin/parallel.py. Under ``-n N`` each xdist worker's BLAS / OpenMP pools get
``cpus // N`` threads, so N workers do not each spin a machine-wide pool; a user's own setting
wins, and ``-n 0`` leaves the libraries' defaults alone. Each worker stops its isolation fork
server when its session ends, not after the controller's reports."""
import json
import os
import textwrap
from pathlib import Path

import pytest

from accel_regress.plugin.parallel import THREAD_VARIABLES, threads_per_worker

pytest_plugins = ["pytester"]
REPO = Path(__file__).resolve().parents[3]

PROBE = textwrap.dedent('''
    import json, os
    def test_threads(worker_id):
        seen = {v: os.environ.get(v) for v in %r}
        with open(os.path.join(os.environ["THREADS_SEEN"], worker_id), "w") as f:
            json.dump(seen, f)
''' % (THREAD_VARIABLES,))


@pytest.fixture
def probe(pytester, monkeypatch, tmp_path):
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(REPO), str(pytester.path)]))
    for var in THREAD_VARIABLES:
        monkeypatch.delenv(var, raising=False)
    seen = tmp_path / "seen"
    seen.mkdir()
    monkeypatch.setenv("THREADS_SEEN", str(seen))
    pytester.makepyfile(test_probe=PROBE)

    def run(*args):
        res = pytester.runpytest_subprocess("-p", "accel-regress", "-p", "no:cacheprovider", "--hw", "emu",
                                            *args, timeout=120)
        res.assert_outcomes(passed=1)
        return [json.loads(p.read_text()) for p in seen.iterdir()]
    return run


def test_each_worker_gets_its_share_of_the_cpus(probe):
    (seen,) = probe("-n", "2")
    want = str(threads_per_worker(2))
    assert seen == {v: want for v in THREAD_VARIABLES}


def test_a_users_setting_wins(probe, monkeypatch):
    monkeypatch.setenv("OMP_NUM_THREADS", "3")
    (seen,) = probe("-n", "2")
    assert seen["OMP_NUM_THREADS"] == "3"
    assert seen["OPENBLAS_NUM_THREADS"] == str(threads_per_worker(2))


def test_without_xdist_nothing_is_set(probe):
    (seen,) = probe("-n", "0")
    assert seen == {v: None for v in THREAD_VARIABLES}


def test_share():
    assert threads_per_worker(1) >= 1 and threads_per_worker(10 ** 6) == 1


# Each worker notes its fork server; the controller, as its session finishes (before it ends the
# workers), waits for those servers to be gone.
WATCH = textwrap.dedent('''
    import os, time, pytest
    from accel_regress.plugin import isolation

    def pytest_collection_finish(session):
        wid = os.environ.get("PYTEST_XDIST_WORKER")
        iso = isolation.context(session.config).isolation
        if wid and iso is not None and iso._server is not None:
            with open(os.path.join(os.environ["THREADS_SEEN"], "server-" + wid), "w") as f:
                f.write(str(iso._server.pid))

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionfinish(session):
        if os.environ.get("PYTEST_XDIST_WORKER"):
            return
        seen = os.environ["THREADS_SEEN"]
        pids = [int(open(os.path.join(seen, n)).read()) for n in os.listdir(seen) if n.startswith("server-")]
        deadline = time.monotonic() + 60
        alive = pids
        while alive and time.monotonic() < deadline:
            time.sleep(0.2)
            alive = [p for p in alive if os.path.exists(f"/proc/{p}") and
                     open(f"/proc/{p}/stat").read().rsplit(")", 1)[1].split()[0] != "Z"]
        with open(os.path.join(seen, "alive"), "w") as f:
            f.write(f"{len(pids)} {len(alive)}")
''')


def test_each_worker_stops_its_fork_server_when_its_session_ends(pytester, monkeypatch, tmp_path):
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(REPO), str(pytester.path)]))
    seen = tmp_path / "seen"
    seen.mkdir()
    monkeypatch.setenv("THREADS_SEEN", str(seen))
    # Under an outer -n this test runs in a worker: the nested controller must not think it is one.
    for var in ("PYTEST_XDIST_WORKER", "PYTEST_XDIST_WORKER_COUNT", "PYTEST_XDIST_TESTRUNUID"):
        monkeypatch.delenv(var, raising=False)
    pytester.makeconftest(WATCH)
    pytester.makepyfile(test_probe="def test_one():\n    pass\n\ndef test_two():\n    pass\n")
    res = pytester.runpytest_subprocess("-p", "accel-regress", "-p", "no:cacheprovider", "--hw", "emu",
                                        "-n", "2", timeout=180)
    res.assert_outcomes(passed=2)
    servers, alive = (seen / "alive").read_text().split()
    assert servers == "2", "each worker should have started a fork server"
    assert alive == "0", f"{alive} fork server(s) still ran when the controller finished its session"
