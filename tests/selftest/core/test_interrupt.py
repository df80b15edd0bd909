"""A session stopped midway (SIGTERM, SIGINT, --session-timeout) still leaves a valid results.json
listing the cases that finished, with the case that was running marked INTERRUPTED, and no
isolated worker outlives it."""
import json
import os
import signal
import subprocess
import sys
import time

import pytest

from accel_regress.results import record as results
from test_isolation import SMALL_TEST, _args, suite  # noqa: F401  (suite is a fixture)

pytest_plugins = ["pytester"]

KINDS = ["ok_a", "ok_b", "hang_here", "ok_c"]


def _gone(pid: int, wait_s: float = 5.0) -> bool:
    deadline = time.monotonic() + wait_s
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.1)
    return False


@pytest.fixture(autouse=True)
def _sigint_reaches_the_runs():
    """A launcher that starts this run in the background (``cmd &`` in a script) leaves SIGINT
    ignored, and an ignored signal stays ignored in every child: the runs under test would never
    see the SIGINT they are sent. A handler, unlike SIG_IGN, is reset to the default in a child."""
    if signal.getsignal(signal.SIGINT) is not signal.SIG_IGN:
        yield
        return
    signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, signal.SIG_IGN)


# The session-timeout case waits out its own 60 s bound (it must outlast reaching the hanging case on
# a loaded machine): the nightly tier's.
@pytest.mark.parametrize("how", ["SIGTERM", "SIGINT", pytest.param("session-timeout", marks=pytest.mark.slow),
                                 "SIGTERM-xdist"])
def test_stopped_session_leaves_valid_results(suite, how):
    suite.makepyfile(test_small=SMALL_TEST.format(kinds=KINDS))
    marker = suite.path / "running.pid"     # the fault writes its pid here, then hangs
    extra = {"session-timeout": ["--session-timeout", "60"], "SIGTERM-xdist": ["-n", "2"]}.get(how, [])
    proc = subprocess.Popen([sys.executable, "-m", "pytest", *_args("--case-timeout", "120", *extra)],
                            cwd=suite.path, env=dict(os.environ, ISO_MARKER=str(marker)),
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 240     # fork servers import torch: slow on a loaded box
        while not marker.exists():
            assert proc.poll() is None, proc.stdout.read().decode()[-3000:]
            assert time.monotonic() < deadline, "the hanging case never started"
            time.sleep(0.1)
        worker_pid = int(marker.read_text())
        if how != "session-timeout":
            proc.send_signal(getattr(signal, how.partition("-")[0]))
        out, _ = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 2, out.decode()[-3000:]
    data = results.load(suite.path / "reports" / "results.json")
    reason = {"session-timeout": "session timeout after 60 s"}.get(how, how.partition("-")[0])
    assert data["session"]["interrupted"] is True and reason in data["session"]["stop_reason"], data["session"]
    verdicts = {c["test"]: c["verdict"] for c in data["cases"]}
    lines = [json.loads(x) for x in (suite.path / "reports" / "results.jsonl").read_text().splitlines()]
    logged = {x["test"]: x["verdict"] for x in lines if "nodeid" in x}
    assert verdicts == logged, (verdicts, logged)        # results.json is the log, nothing lost
    assert verdicts["test_gemm[emu-hang_here]"] == "INTERRUPTED", verdicts
    if how == "SIGTERM-xdist":
        # The other xdist worker's cases finished or were cut short; none is lost or misjudged.
        assert set(verdicts.values()) <= {"PASS", "INTERRUPTED"}, verdicts
    else:
        assert verdicts == {"test_gemm[emu-ok_a]": "PASS", "test_gemm[emu-ok_b]": "PASS",
                            "test_gemm[emu-hang_here]": "INTERRUPTED"}, verdicts
        hung = next(c for c in data["cases"] if c["verdict"] == "INTERRUPTED")
        assert hung["backend"] == "emu" and hung["family"] == "gemm_partition_n"
    assert all(reason in c["message"] for c in data["cases"] if c["verdict"] == "INTERRUPTED")
    assert _gone(worker_pid), f"isolated worker {worker_pid} outlived the session"


EARLY = {
    # SIGTERM while pytest configures (before any results sink exists)
    "sigterm-configure": "import os, signal, pytest\n@pytest.hookimpl(trylast=True)\n"
                         "def pytest_configure(config):\n    os.kill(os.getpid(), signal.SIGTERM)\n",
    # SIGTERM while the session starts (pytest would skip its session end if interrupted here)
    "sigterm-sessionstart": "import os, signal, pytest\n@pytest.hookimpl(tryfirst=True)\n"
                            "def pytest_sessionstart(session):\n    os.kill(os.getpid(), signal.SIGTERM)\n",
    "sigint-configure": "import os, signal, pytest\n@pytest.hookimpl(trylast=True)\n"
                        "def pytest_configure(config):\n    os.kill(os.getpid(), signal.SIGINT)\n",
    # a crash of a plugin after the first case finished
    "plugin-crash": "seen = []\ndef pytest_runtest_logreport(report):\n"
                    "    if report.when == 'teardown':\n        seen.append(1)\n"
                    "        if len(seen) == 2:\n            raise RuntimeError('a plugin crashed')\n",
}


@pytest.mark.parametrize("how", [*EARLY, "session-timeout-0.001"])
def test_early_stops_still_leave_results(suite, how):
    """Issue 19 item 5: SIGTERM/SIGINT early in a run, --session-timeout 0.001, a plugin crash: a
    strictly parsing results.json with the finished cases and the session marked interrupted."""
    suite.makepyfile(test_small=SMALL_TEST.format(kinds=["ok_a", "ok_b", "ok_c"]))
    extra = ["--session-timeout", "0.001"] if how == "session-timeout-0.001" else []
    if how in EARLY:
        suite.makeconftest(EARLY[how])
    res = suite.runpytest_subprocess(*_args(*extra), timeout=180)
    path = suite.path / "reports" / "results.json"
    assert path.is_file(), res.stdout.str()[-3000:]
    json.loads(path.read_text(), parse_constant=lambda w: pytest.fail(f"bare {w}"))
    data = results.load(path)
    session = data["session"]
    assert session["interrupted"] is True, session
    reason = {"sigint-configure": "SIGINT", "plugin-crash": "internal error",
              "session-timeout-0.001": "session timeout after 0.001 s"}.get(how, "SIGTERM")
    assert reason in session["stop_reason"], session
    verdicts = {c["test"]: c["verdict"] for c in data["cases"]}
    if how == "plugin-crash":
        assert verdicts.get("test_gemm[emu-ok_a]") == "PASS", verdicts     # finished before the crash: kept
    else:
        assert verdicts == {}, verdicts                                     # stopped before any case ran
